package memory

import (
	"context"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// Store is the storage port the Service needs; pgstore.Store implements it. Every argument has been validated and
// normalised by the Service first: ids are canonical UUIDs, limits and page sizes have their defaults and caps
// applied, queries are bounded (SearchQuery.Normalize), window queries are normalised (WindowQuery.Normalize), a
// broadcast has its id. A Store checks only what needs the stored data: existence (NotFound), uniqueness (Exists),
// compare-and-set conditions (Conflict), seq and turn assignment, idempotency.
type Store interface {
	CreateMysis(ctx context.Context, n NewMysis) (Mysis, error)
	GetMysis(ctx context.Context, id string) (Mysis, error)
	GetMysisByName(ctx context.Context, name string) (Mysis, error)
	ListMyses(ctx context.Context, f ListFilter) ([]Mysis, bool, error)
	// UpdateMysisConfig calls apply with the mysis's current configuration under the row lock and stores what it
	// returns; an error from apply changes nothing and is returned as is.
	UpdateMysisConfig(ctx context.Context, id string, apply func(NewMysis) (NewMysis, error)) (Mysis, error)
	SetMysisState(ctx context.Context, id string, c StateChange) (Mysis, State, error)
	DeleteMysis(ctx context.Context, id string) error

	AppendMemories(ctx context.Context, mysisID string, ms []NewMemory) ([]Memory, error)
	AppendMemoriesIf(ctx context.Context, mysisID string, ms []NewMemory, c AppendCondition) ([]Memory, error)
	ListRecentMemories(ctx context.Context, mysisID string, limit int) ([]Memory, error)
	ListMemoriesRange(ctx context.Context, mysisID string, fromSeq, toSeq int64, limit int) ([]Memory, error)
	GetMemory(ctx context.Context, mysisID string, id int64) (Memory, error)
	// GetComposeWindow returns the window's rows as stored; the Service bounds their size (ComposeWindow.Bound).
	GetComposeWindow(ctx context.Context, q WindowQuery) (ComposeWindow, error)

	RecordBroadcast(ctx context.Context, b Broadcast, targets []string) (Delivery, error)
	DeliverBroadcast(ctx context.Context, broadcastID string, mysisIDs []string) (Delivery, error)

	SearchMessages(ctx context.Context, q SearchQuery) (MessageHits, error)
	SearchReasoning(ctx context.Context, q SearchQuery) (MessageHits, error)
	SearchBroadcasts(ctx context.Context, q SearchQuery) ([]BroadcastHit, error)

	CreateAccount(ctx context.Context, a Account) (Account, error)
	ClaimAccount(ctx context.Context, mysisID string) (Account, error)
	GetAccountForMysis(ctx context.Context, mysisID string) (Account, error)
	ReleaseAccount(ctx context.Context, mysisID string) (string, error)

	RecordLlmCalls(ctx context.Context, mysisID string, calls []LlmCall) (int, error)
	GetUsage(ctx context.Context, q UsageQuery) (Usage, error)
	GetSpend(ctx context.Context, mysisID string, at time.Time) (Spend, error)
	SetSpendLimits(ctx context.Context, mysisID string, limits []SpendLimit) ([]SpendLimit, error)
}

// Service is the memory service's operations: each one validates and normalises its input once, with errors naming
// the API field, and then calls the Store. The transport (grpcapi) only converts between the API and these types.
type Service struct {
	store Store
	now   func() time.Time
}

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithClock sets the clock GetSpend uses when no time is given (tests).
func WithClock(now func() time.Time) ServiceOption {
	return func(s *Service) { s.now = now }
}

// NewService returns the Service over store.
func NewService(store Store, opts ...ServiceOption) *Service {
	s := &Service{store: store, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// CreateMysis stores a new idle mysis with a fresh id.
func (s *Service) CreateMysis(ctx context.Context, n NewMysis) (Mysis, error) {
	if err := rules.ValidateNewMysis(n); err != nil {
		return Mysis{}, err
	}
	return s.store.CreateMysis(ctx, n)
}

// GetMysis returns one mysis by id.
func (s *Service) GetMysis(ctx context.Context, id string) (Mysis, error) {
	id, err := rules.ParseID("mysis_id", id)
	if err != nil {
		return Mysis{}, err
	}
	return s.store.GetMysis(ctx, id)
}

// GetMysisByName returns one mysis by its unique name.
func (s *Service) GetMysisByName(ctx context.Context, name string) (Mysis, error) {
	if name == "" {
		return Mysis{}, errs.InvalidField("name", "required")
	}
	if err := rules.CheckText("name", name, MaxShortFieldBytes); err != nil {
		return Mysis{}, err
	}
	return s.store.GetMysisByName(ctx, name)
}

// ListMyses returns up to f.PageSize myses (default DefaultPageSize, capped at MaxPageSize) ordered by name after
// f.AfterName, and whether more follow.
func (s *Service) ListMyses(ctx context.Context, f ListFilter) ([]Mysis, bool, error) {
	var err error
	if f.PageSize, err = rules.Limit("page_size", f.PageSize, DefaultPageSize, MaxPageSize); err != nil {
		return nil, false, err
	}
	if f.State != StateAny && !f.State.Valid() {
		return nil, false, errs.InvalidField("state", "unknown state")
	}
	return s.store.ListMyses(ctx, f)
}

// UpdateMysisConfig applies a configuration patch. The result is validated as a whole (ConfigPatch.Apply) against
// the stored configuration, under the store's row lock, so concurrent patches cannot combine into an invalid one.
func (s *Service) UpdateMysisConfig(ctx context.Context, id string, p ConfigPatch) (Mysis, error) {
	id, err := rules.ParseID("mysis_id", id)
	if err != nil {
		return Mysis{}, err
	}
	return s.store.UpdateMysisConfig(ctx, id, p.Apply)
}

// SetMysisState changes the lifecycle state and returns the mysis with its previous state; with c.Expected set it
// is a compare-and-set.
func (s *Service) SetMysisState(ctx context.Context, id string, c StateChange) (Mysis, State, error) {
	id, err := rules.ParseID("mysis_id", id)
	if err != nil {
		return Mysis{}, "", err
	}
	if err := rules.ValidateStateChange(c); err != nil {
		return Mysis{}, "", err
	}
	return s.store.SetMysisState(ctx, id, c)
}

// DeleteMysis removes a mysis with its memories and releases its account.
func (s *Service) DeleteMysis(ctx context.Context, id string) error {
	id, err := rules.ParseID("mysis_id", id)
	if err != nil {
		return err
	}
	return s.store.DeleteMysis(ctx, id)
}

// AppendMemories appends a batch to one mysis atomically and returns the stored rows in request order.
func (s *Service) AppendMemories(ctx context.Context, mysisID string, ms []NewMemory) ([]Memory, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if err := rules.ValidateNewMemories(ms); err != nil {
		return nil, err
	}
	return s.store.AppendMemories(ctx, mysisID, ms)
}

// AppendMemoriesIf is AppendMemories with a condition the store decides in the append's transaction (see
// AppendCondition).
func (s *Service) AppendMemoriesIf(ctx context.Context, mysisID string, ms []NewMemory, c AppendCondition) ([]Memory, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if err := rules.ValidateNewMemories(ms); err != nil {
		return nil, err
	}
	return s.store.AppendMemoriesIf(ctx, mysisID, ms, c)
}

// ListRecentMemories returns the newest limit memories of a mysis (default DefaultWindow, capped at MaxWindow),
// oldest first.
func (s *Service) ListRecentMemories(ctx context.Context, mysisID string, limit int) ([]Memory, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if limit, err = rules.Limit("limit", limit, DefaultWindow, MaxWindow); err != nil {
		return nil, err
	}
	return s.store.ListRecentMemories(ctx, mysisID, limit)
}

// ListMemoriesRange returns memories with fromSeq <= seq <= toSeq (toSeq 0: no upper bound), oldest first.
func (s *Service) ListMemoriesRange(ctx context.Context, mysisID string, fromSeq, toSeq int64, limit int) ([]Memory, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if limit, err = rules.ValidateRange(fromSeq, toSeq, limit); err != nil {
		return nil, err
	}
	return s.store.ListMemoriesRange(ctx, mysisID, fromSeq, toSeq, limit)
}

// GetMemory returns one memory of one mysis.
func (s *Service) GetMemory(ctx context.Context, mysisID string, id int64) (Memory, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return Memory{}, err
	}
	if err := rules.ValidateMemoryID(id); err != nil {
		return Memory{}, err
	}
	return s.store.GetMemory(ctx, mysisID, id)
}

// GetComposeWindow returns the mysis, its compose window (oldest first) and its current mission, bounded by bytes:
// oversized tool results cut with their pointer, the whole within MaxResponseBytes. The carried rows the caller
// holds (q.Known, and the recent rows it holds) are left out only when the whole window, those rows included, fits
// that bound: otherwise the bound would have cut into them, so the window is read again whole (one more statement,
// only near MaxResponseBytes). CarryBytes and RecentBytes say what the carried and the recent rows came to, for the
// caller to send back as q.Known.Bytes and q.Known.RecentBytes.
func (s *Service) GetComposeWindow(ctx context.Context, q WindowQuery) (ComposeWindow, error) {
	q, err := q.Normalize()
	if err != nil {
		return ComposeWindow{}, err
	}
	w, err := s.store.GetComposeWindow(ctx, q)
	if err != nil {
		return ComposeWindow{}, err
	}
	w.CutResults(q.MaxResultBytes)
	if w.CarryOmitted && !w.FitsWith(w.heldBytes(q.Known)) {
		q.Known = CarryKnown{}
		if w, err = s.store.GetComposeWindow(ctx, q); err != nil {
			return ComposeWindow{}, err
		}
		w.CutResults(q.MaxResultBytes)
	}
	w.Bound()
	w.countBytes(q.Known)
	return w, nil
}

// RecordBroadcast stores b once (idempotent on b.ID; an empty ID gets a fresh one) and delivers it to targets, or
// to every mysis except the sender when targets is empty.
func (s *Service) RecordBroadcast(ctx context.Context, b Broadcast, targets []string) (Delivery, error) {
	var err error
	if b.ID == "" {
		b.ID = NewID()
	} else if b.ID, err = rules.ParseID("broadcast_id", b.ID); err != nil {
		return Delivery{}, err
	}
	if b.SenderID, err = rules.ValidateSenderID("sender_id", b.SenderID); err != nil {
		return Delivery{}, err
	}
	if err := rules.ValidateBroadcastContent(b.Content); err != nil {
		return Delivery{}, err
	}
	if targets, err = rules.ParseTargets("target_mysis_ids", targets, false); err != nil {
		return Delivery{}, err
	}
	return s.store.RecordBroadcast(ctx, b, targets)
}

// DeliverBroadcast delivers an already recorded broadcast to more myses, idempotently per mysis.
func (s *Service) DeliverBroadcast(ctx context.Context, broadcastID string, mysisIDs []string) (Delivery, error) {
	broadcastID, err := rules.ParseID("broadcast_id", broadcastID)
	if err != nil {
		return Delivery{}, err
	}
	if mysisIDs, err = rules.ParseTargets("mysis_ids", mysisIDs, true); err != nil {
		return Delivery{}, err
	}
	return s.store.DeliverBroadcast(ctx, broadcastID, mysisIDs)
}

// SearchMessages finds one mysis's messages and tool calls, best first (BM25 over its whole history) or newest
// first.
func (s *Service) SearchMessages(ctx context.Context, q SearchQuery) (MessageHits, error) {
	q, err := q.Normalize(true)
	if err != nil {
		return MessageHits{}, err
	}
	if q.Order != OrderRelevance && q.Order != OrderRecency {
		return MessageHits{}, errs.InvalidField("order", "unknown search order %d", q.Order)
	}
	return s.store.SearchMessages(ctx, q)
}

// SearchReasoning ranks one mysis's stored reasoning.
func (s *Service) SearchReasoning(ctx context.Context, q SearchQuery) (MessageHits, error) {
	q, err := q.Normalize(true)
	if err != nil {
		return MessageHits{}, err
	}
	return s.store.SearchReasoning(ctx, q)
}

// SearchBroadcasts ranks broadcasts swarm-wide.
func (s *Service) SearchBroadcasts(ctx context.Context, q SearchQuery) ([]BroadcastHit, error) {
	q, err := q.Normalize(false)
	if err != nil {
		return nil, err
	}
	return s.store.SearchBroadcasts(ctx, q)
}

// CreateAccount adds a login to the pool, optionally bound to a mysis, and returns it without its password.
func (s *Service) CreateAccount(ctx context.Context, a Account) (Account, error) {
	if err := rules.ValidateAccount(a); err != nil {
		return Account{}, err
	}
	if a.MysisID != "" {
		id, err := rules.ParseID("mysis_id", a.MysisID)
		if err != nil {
			return Account{}, err
		}
		a.MysisID = id
	}
	return s.store.CreateAccount(ctx, a)
}

// ClaimAccount binds a free account to the mysis (or returns the one it holds), with its password.
func (s *Service) ClaimAccount(ctx context.Context, mysisID string) (Account, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return Account{}, err
	}
	return s.store.ClaimAccount(ctx, mysisID)
}

// GetAccountForMysis returns the account bound to the mysis, with its password.
func (s *Service) GetAccountForMysis(ctx context.Context, mysisID string) (Account, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return Account{}, err
	}
	return s.store.GetAccountForMysis(ctx, mysisID)
}

// ReleaseAccount unbinds the mysis's account and returns its username ("" when it held none).
func (s *Service) ReleaseAccount(ctx context.Context, mysisID string) (string, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return "", err
	}
	return s.store.ReleaseAccount(ctx, mysisID)
}

// RecordLlmCalls stores calls that produced no memory; a call_id already stored is skipped. It returns how many
// calls were new.
func (s *Service) RecordLlmCalls(ctx context.Context, mysisID string, calls []LlmCall) (int, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return 0, err
	}
	if err := rules.ValidateLlmCalls(calls); err != nil {
		return 0, err
	}
	return s.store.RecordLlmCalls(ctx, mysisID, calls)
}

// GetUsage sums calls, in total and per group, one page of groups at a time.
func (s *Service) GetUsage(ctx context.Context, q UsageQuery) (Usage, error) {
	var err error
	if q.MysisIDs, q.PageSize, err = rules.ValidateUsage(q.MysisIDs, q.From, q.To, q.PageSize); err != nil {
		return Usage{}, err
	}
	if q.Top != 0 {
		// The page size was defaulted above (the transport checks the one asked for); a top query's page is its top rows.
		if err := rules.ValidateTop(q.Top, q.GroupBy == GroupMysis, 0, q.AfterName != ""); err != nil {
			return Usage{}, err
		}
		q.PageSize = q.Top
	}
	return s.store.GetUsage(ctx, q)
}

// GetSpend returns the mysis's own limits and the mysis's and the swarm's counts in the windows containing at
// (zero: now).
func (s *Service) GetSpend(ctx context.Context, mysisID string, at time.Time) (Spend, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return Spend{}, err
	}
	if at.IsZero() {
		at = s.now()
	}
	return s.store.GetSpend(ctx, mysisID, at)
}

// SetSpendLimits replaces a mysis's own limits and returns them ordered by window and unit.
func (s *Service) SetSpendLimits(ctx context.Context, mysisID string, limits []SpendLimit) ([]SpendLimit, error) {
	mysisID, err := rules.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if err := rules.ValidateSpendLimits(limits); err != nil {
		return nil, err
	}
	return s.store.SetSpendLimits(ctx, mysisID, limits)
}
