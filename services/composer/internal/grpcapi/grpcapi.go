// Package grpcapi serves zoea.composer.v1.ComposerService, a thin transport: it converts the request (policy
// overrides, tools) into compose values, reads the window through the Windows port (memoryclient implements it over
// the memory service), runs the pure compose package and converts the result back. Errors are libs/errs errors that
// libs/server maps to gRPC codes, in one place.
//
// The service holds no state of its own but caches: a token-count cache (an injected compose.Counter: consecutive
// composes of one mysis share almost their whole window, so a steady-state compose counts only the memories it has
// not seen before), each mysis's last compaction boundary (boundaries.go) and the carried rows of its last whole
// window (carries.go), each of which a restart may lose at the price of some work, never of correctness.
package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Windows reads what composing a mysis's next request needs (memoryclient.Client implements it over the memory
// service). Errors are libs/errs errors.
type Windows interface {
	// Window reads the compose window; recentFrom is the mysis's previous compaction boundary (0: unknown); known,
	// when not nil, names the carried rows the caller holds (Relayed.CarryOmitted: they were left out). The relay
	// travels in the same round trip: its rows are stored before the window is read.
	Window(ctx context.Context, mysisID string, p compose.Policy, recentFrom int64, known *CarryKnown, relay Relay) (compose.Input, Relayed, error)
}

// CarryKnown names the carried rows of an earlier whole window a caller holds (memory's carry_known): that window's
// objective and recent part's start, the rows' size as that window reported it (carry_bytes) and their seqs (from
// which the memory service derives the carried rows when the start has moved up, instead of scanning for them), and
// the recent rows held with them.
type CarryKnown struct {
	ObjectiveSeq, RecentStartSeq, Bytes int64
	Seqs                                []int64
	// RecentThrough and RecentBytes name the recent rows held with them: from RecentStartSeq through RecentThrough,
	// of that size as the window reported it (recent_bytes).
	RecentThrough, RecentBytes int64
}

// Relay is what the runner sends the memory service through the composer, which passes it on unread: memories to
// store before the window is read (the last tool result of a tool-loop iteration) and the time whose spend counts
// to read with it (issue 16: one memory round trip per iteration for all three).
type Relay struct {
	Append  []*memoryv1.NewMemory
	SpendAt *timestamppb.Timestamp
}

// Relayed is what comes back with the window besides the compose input: for the runner, the appended rows as stored,
// the mysis record and the spend (nil unless Relay.SpendAt was set); for the carry cache, what the memory service did
// with the carried rows.
type Relayed struct {
	Appended []*memoryv1.Memory
	Mysis    *memoryv1.Mysis
	Spend    *memoryv1.GetSpendResponse
	// CarryOmitted: the window's rows below its recent start were left out, as the known carry holds them.
	CarryOmitted bool
	// CarryCut: the memory service's byte bound left out some of the window's carried rows.
	CarryCut bool
	// CarryBytes: the carried rows' size as the memory service's byte bound counts it (carry_bytes), sent back as
	// CarryKnown.Bytes when they are held.
	CarryBytes int64
	// RecentOmittedThrough: when above 0, the recent rows through it were left out too (the known carry holds them).
	RecentOmittedThrough int64
	// RecentBytes: the recent part's size as the byte bound counts it (recent_bytes), sent back as
	// CarryKnown.RecentBytes when its rows are held.
	RecentBytes int64
}

// Options configure a Service.
type Options struct {
	// Policy is the server's default policy; requests override single fields. Zero means compose.DefaultPolicy().
	Policy *compose.Policy
	// Counter counts tokens for every call and must be safe for concurrent use (a tokcache.Cache). Nil gives each
	// call a fresh counter, which is correct but counts every memory every time.
	Counter compose.Counter
	// Logger receives composition failures that are the server's fault.
	Logger *slog.Logger
	// Stateless composes every request with the boundary chosen afresh instead of starting from the mysis's
	// previous one: ComposeContext becomes a pure function of the request and the window, at the price of the
	// providers' prompt caches (tests comparing composers use it). It holds no carried rows either.
	Stateless bool
	// CarryCacheBytes bounds the windows held, over all myses (carries.go); 0 means DefaultCarryCacheBytes, a
	// negative value holds none (every window is read whole).
	CarryCacheBytes int64
}

// Service implements composerv1.ComposerServiceServer.
type Service struct {
	composerv1.UnimplementedComposerServiceServer
	memory   Windows
	defaults compose.Policy
	counter  compose.Counter
	log      *slog.Logger
	bounds   *boundaries
	carries  *carries // nil: none held
}

// New returns the service; it fails when the default policy is invalid, naming the offending field.
func New(memory Windows, opts Options) (*Service, error) {
	p := compose.DefaultPolicy()
	if opts.Policy != nil {
		p = *opts.Policy
	}
	if err := validatePolicy(p); err != nil {
		return nil, fmt.Errorf("default policy: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	svc := &Service{memory: memory, defaults: p, counter: opts.Counter, log: opts.Logger}
	if !opts.Stateless {
		svc.bounds = newBoundaries(maxBoundaries)
		switch {
		case opts.CarryCacheBytes == 0:
			svc.carries = newCarries(DefaultCarryCacheBytes)
		case opts.CarryCacheBytes > 0:
			svc.carries = newCarries(opts.CarryCacheBytes)
		}
	}
	return svc, nil
}

// DefaultPolicy returns the policy in force for a request without overrides.
func (s *Service) DefaultPolicy() compose.Policy { return s.defaults }

// ComposeContext composes the next LLM request for a mysis.
func (s *Service) ComposeContext(ctx context.Context, req *composerv1.ComposeContextRequest) (*composerv1.ComposeContextResponse, error) {
	id := req.GetMysisId()
	if strings.TrimSpace(id) == "" {
		return nil, errs.InvalidField("mysis_id", "required")
	}
	p, err := fromProtoPolicy(req.GetPolicy(), s.defaults)
	if err != nil {
		return nil, err
	}
	tools, err := fromProtoTools(req.GetTools())
	if err != nil {
		return nil, err
	}
	prev, err := s.previousCompaction(id, req.GetPreviousCompaction())
	if err != nil {
		return nil, err
	}
	in, relayed, err := s.window(ctx, id, p, prev.boundary, Relay{Append: req.GetAppend(), SpendAt: req.GetSpendAt()})
	if err != nil {
		if ctx.Err() != nil {
			// The caller's own cancellation or deadline stays what it is.
			return nil, ctx.Err()
		}
		return nil, err
	}
	p = withCacheModel(p, relayed.Mysis)
	in.Tools, in.BeginTurn = tools, req.GetBeginAutonomousTurn()
	in.PrevBoundary, in.PrevCompactSeq = prev.boundary, prev.compactSeq
	var res compose.Result
	if s.counter != nil {
		res, err = compose.ComposeWith(in, p, s.counter)
	} else {
		res, err = compose.Compose(in, p)
	}
	if err != nil {
		return nil, fromComposeError(id, err)
	}
	if n := res.Manifest.Compaction; n != nil {
		s.log.Debug("compaction", "mysis_id", id, "why", n.Why, "cache", n.Cache, "history_before", n.Before, "history_after", n.After,
			"expected_saving", n.ExpectedSaving, "rewrite_cost", n.RewriteCost, "boundary_seq", res.Manifest.Boundary)
	}
	if s.bounds != nil && res.Manifest.Boundary > 0 {
		s.bounds.put(id, mark{res.Manifest.Boundary, res.Manifest.CompactSeq})
	}
	resp := toProtoResponse(res, p)
	resp.Mysis, resp.Spend, resp.Appended = relayed.Mysis, relayed.Spend, relayed.Appended
	return resp, nil
}

// previousCompaction is where the request starts from: the caller's previous_compaction when it sends one (any
// replica then composes what the one before it would have), else the compaction this composer remembers for the
// mysis (none: chosen afresh).
func (s *Service) previousCompaction(id string, pc *composerv1.Compaction) (mark, error) {
	switch {
	case pc.GetBoundarySeq() < 0:
		return mark{}, errs.InvalidField("previous_compaction.boundary_seq", "must not be negative, got %d", pc.GetBoundarySeq())
	case pc.GetCompactionSeq() < 0:
		return mark{}, errs.InvalidField("previous_compaction.compaction_seq", "must not be negative, got %d", pc.GetCompactionSeq())
	case pc != nil:
		return mark{pc.GetBoundarySeq(), pc.GetCompactionSeq()}, nil
	case s.bounds != nil:
		return s.bounds.get(id), nil
	}
	return mark{}, nil
}

// window reads the compose window through the carry cache: it names the rows held for the mysis (when read under the
// same policy fields), splices them back when the memory service left them out, and holds every window it composes
// from instead.
func (s *Service) window(ctx context.Context, id string, p compose.Policy, recentFrom int64, relay Relay) (compose.Input, Relayed, error) {
	held := s.carries.get(id, p)
	var known *CarryKnown
	if held != nil {
		known = &held.known
	}
	in, relayed, err := s.memory.Window(ctx, id, p, recentFrom, known, relay)
	switch {
	case err != nil:
		return in, relayed, err
	case relayed.CarryOmitted && (held == nil || relayed.RecentOmittedThrough > 0 && relayed.RecentOmittedThrough != held.known.RecentThrough):
		return in, relayed, fmt.Errorf("memory GetComposeWindow for mysis %s left out rows it was not told the composer holds", id)
	case relayed.CarryOmitted:
		in.Window = held.splice(in.Window, relayed.RecentOmittedThrough > 0)
	}
	s.carries.put(id, p, in, relayed)
	return in, relayed, nil
}

// fromComposeError classifies a failed composition. Both kinds are the stored state's doing, not the request's.
func fromComposeError(id string, err error) error {
	var be *compose.BudgetError
	switch {
	case errors.As(err, &be):
		return &errs.Error{Kind: errs.Conflict, Msg: fmt.Sprintf("mysis %s: the smallest valid request needs %d tokens, over the budget of %d (raise policy.token_budget)", id, be.Need, be.Budget)}
	case errors.Is(err, compose.ErrNoSystemPrompt):
		return &errs.Error{Kind: errs.Conflict, Msg: fmt.Sprintf("mysis %s has an empty system prompt", id)}
	case errors.Is(err, compose.ErrInvalidPolicy):
		return &errs.Error{Kind: errs.Invalid, Field: "policy", Msg: err.Error()}
	}
	return err
}

// withCacheModel is p with the mysis's cache model (compose.CacheModelFor its provider and model) unless the
// server's policy names one: priced compaction weighs a rewrite by what the mysis's provider charges for it.
func withCacheModel(p compose.Policy, m *memoryv1.Mysis) compose.Policy {
	if p.Cache.Name == "" && m != nil {
		p.Cache = compose.CacheModelFor(m.GetProvider(), m.GetModel())
	}
	return p
}
