package memfake

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// usageCall is one stored LLM call and the mysis it belongs to.
type usageCall struct {
	mysisID string
	call    rules.LlmCall
}

// spendCount is what was spent in one window: the real service keeps, per mysis and for the swarm, only the newest
// window of each kind.
type spendCount struct {
	start             time.Time
	tokens, costNanos int64
}

// recordCallLocked stores a call unless its id is stored already, and counts it into the mysis's and the swarm's
// spend windows; it reports whether the call was new. The caller holds f.mu.
func (f *Fake) recordCallLocked(mysisID string, c rules.LlmCall) bool {
	if _, ok := f.llmCalls[c.CallID]; ok {
		return false
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = time.Now()
	}
	f.llmCalls[c.CallID] = &usageCall{mysisID: mysisID, call: c}
	f.callOrder = append(f.callOrder, c.CallID)
	if f.spend[mysisID] == nil {
		f.spend[mysisID] = map[rules.SpendWindow]*spendCount{}
	}
	for _, w := range []rules.SpendWindow{rules.WindowHour, rules.WindowDay, rules.WindowTotal} {
		countSpend(f.spend[mysisID], w, c)
		countSpend(f.swarm, w, c)
	}
	return true
}

// countSpend adds a call to the window of kind w: a newer window restarts the count, an older one is not counted.
func countSpend(m map[rules.SpendWindow]*spendCount, w rules.SpendWindow, c rules.LlmCall) {
	start := w.Start(c.StartedAt)
	cur := m[w]
	switch {
	case cur == nil || start.After(cur.start):
		m[w] = &spendCount{start: start, tokens: c.PromptTokens + c.CompletionTokens, costNanos: c.CostNanos}
	case start.Equal(cur.start):
		cur.tokens += c.PromptTokens + c.CompletionTokens
		cur.costNanos += c.CostNanos
	}
}

// totals sums calls like the real service's usage rows.
type totals struct {
	t      memoryv1.UsageTotals
	first  time.Time
	last   time.Time
	counts bool
}

func (s *totals) add(c rules.LlmCall) {
	s.t.Calls++
	if c.Error != "" {
		s.t.FailedCalls++
	}
	s.t.PromptTokens += c.PromptTokens
	s.t.CachedPromptTokens += c.CachedPromptTokens
	s.t.CompletionTokens += c.CompletionTokens
	s.t.ReasoningTokens += c.ReasoningTokens
	s.t.ComposedTokens += c.ComposedTokens
	s.t.LatencyMs += c.LatencyMS
	s.t.Retries += int64(c.Retries)
	s.t.CostNanos += c.CostNanos
	if !s.counts || c.StartedAt.Before(s.first) {
		s.first = c.StartedAt
	}
	if !s.counts || c.StartedAt.After(s.last) {
		s.last = c.StartedAt
	}
	s.counts = true
}

func (s *totals) proto() *memoryv1.UsageTotals {
	out := &memoryv1.UsageTotals{
		Calls: s.t.Calls, FailedCalls: s.t.FailedCalls, PromptTokens: s.t.PromptTokens, CachedPromptTokens: s.t.CachedPromptTokens,
		CompletionTokens: s.t.CompletionTokens, ReasoningTokens: s.t.ReasoningTokens, ComposedTokens: s.t.ComposedTokens,
		LatencyMs: s.t.LatencyMs, Retries: s.t.Retries, CostNanos: s.t.CostNanos,
	}
	if s.counts {
		out.FirstCallAt, out.LastCallAt = timestamppb.New(s.first), timestamppb.New(s.last)
	}
	return out
}

// usageToken is the fake's GetUsage cursor: the grouping and the last group returned.
type usageToken struct {
	Group int    `json:"g"`
	Key   string `json:"k"`
}

// GetUsage implements MemoryService.GetUsage: the calls of the selected myses started in [from, to), in total and
// one page of groups (by mysis name, or by provider and model).
func (f *Fake) GetUsage(_ context.Context, req *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetUsage"); ok {
		return nil, injected(fault)
	}
	var from, to time.Time
	if req.From != nil {
		if req.GetFrom().CheckValid() != nil {
			return nil, errs.InvalidField("from", "not a valid timestamp")
		}
		from = req.GetFrom().AsTime()
	}
	if req.To != nil {
		if req.GetTo().CheckValid() != nil {
			return nil, errs.InvalidField("to", "not a valid timestamp")
		}
		to = req.GetTo().AsTime()
	}
	group := req.GetGroupBy()
	if _, ok := memoryv1.UsageGroup_name[int32(group)]; !ok {
		return nil, errs.InvalidField("group_by", "unknown grouping %d", group)
	}
	var after usageToken
	if t := req.GetPageToken(); t != "" {
		b, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil || json.Unmarshal(b, &after) != nil {
			return nil, errs.InvalidField("page_token", "malformed page token; pass next_page_token from a previous response")
		}
		if after.Group != int(group) || group == memoryv1.UsageGroup_USAGE_GROUP_UNSPECIFIED {
			return nil, errs.InvalidField("page_token", "page token was issued for a different grouping")
		}
	}
	ids, size, err := rules.ValidateUsage(req.GetMysisIds(), from, to, int(req.GetPageSize()))
	if err != nil {
		return nil, err
	}
	top := int(req.GetTop())
	if err := rules.ValidateTop(top, group == memoryv1.UsageGroup_USAGE_GROUP_MYSIS, int(req.GetPageSize()), req.GetPageToken() != ""); err != nil {
		return nil, err
	}
	var total totals
	groups := map[string]*totals{}
	rows := map[string]*memoryv1.UsageRow{}
	for _, id := range f.callOrder {
		uc := f.llmCalls[id]
		c := uc.call
		if len(ids) > 0 && !slices.Contains(ids, uc.mysisID) || c.StartedAt.Before(from) || !to.IsZero() && !c.StartedAt.Before(to) {
			continue
		}
		total.add(c)
		var key string
		var row *memoryv1.UsageRow
		switch group {
		case memoryv1.UsageGroup_USAGE_GROUP_MYSIS:
			m, ok := f.myses[uc.mysisID]
			if !ok {
				continue
			}
			key, row = m.GetName(), &memoryv1.UsageRow{MysisId: m.GetId(), MysisName: m.GetName()}
		case memoryv1.UsageGroup_USAGE_GROUP_MODEL:
			key, row = c.Provider+"\x00"+c.Model, &memoryv1.UsageRow{Provider: c.Provider, Model: c.Model}
		default:
			continue
		}
		if groups[key] == nil {
			groups[key], rows[key] = &totals{}, row
		}
		groups[key].add(c)
	}
	out := &memoryv1.GetUsageResponse{Total: total.proto()}
	if top > 0 {
		// The top myses by cost, highest first, equal costs in name order, in one page.
		keys := slices.Sorted(maps.Keys(groups))
		slices.SortStableFunc(keys, func(a, b string) int {
			return cmp.Compare(groups[b].t.CostNanos, groups[a].t.CostNanos)
		})
		for _, k := range keys[:min(top, len(keys))] {
			rows[k].Totals = groups[k].proto()
			out.Rows = append(out.Rows, rows[k])
		}
		return out, nil
	}
	keys := slices.SortedFunc(func(yield func(string) bool) {
		for k := range groups {
			if (after.Key == "" || k > after.Key) && !yield(k) {
				return
			}
		}
	}, cmp.Compare[string])
	for i, k := range keys {
		if i == size {
			b, _ := json.Marshal(usageToken{Group: int(group), Key: keys[i-1]})
			out.NextPageToken = base64.RawURLEncoding.EncodeToString(b)
			break
		}
		rows[k].Totals = groups[k].proto()
		out.Rows = append(out.Rows, rows[k])
	}
	return out, nil
}

// spendLimitsOf converts wire limits (enum numbers out of the stored range are no window or unit).
func spendLimitsOf(ls []*memoryv1.SpendLimit) []rules.SpendLimit {
	out := make([]rules.SpendLimit, len(ls))
	for i, l := range ls {
		out[i] = rules.SpendLimit{Amount: l.GetAmount()}
		if w := l.GetWindow(); w >= 0 && w <= 3 {
			out[i].Window = rules.SpendWindow(w)
		}
		if u := l.GetUnit(); u >= 0 && u <= 2 {
			out[i].Unit = rules.SpendUnit(u)
		}
	}
	return out
}

func spendLimitsProto(ls []rules.SpendLimit) []*memoryv1.SpendLimit {
	out := make([]*memoryv1.SpendLimit, len(ls))
	for i, l := range ls {
		out[i] = &memoryv1.SpendLimit{Window: memoryv1.SpendWindow(l.Window), Unit: memoryv1.SpendUnit(l.Unit), Amount: l.Amount}
	}
	return out
}

// SetSpendLimits implements MemoryService.SetSpendLimits: the mysis's limits are replaced, answered by window and
// unit.
func (f *Fake) SetSpendLimits(_ context.Context, req *memoryv1.SetSpendLimitsRequest) (*memoryv1.SetSpendLimitsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("SetSpendLimits"); ok {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	ls := spendLimitsOf(req.GetLimits())
	if err := rules.ValidateSpendLimits(ls); err != nil {
		return nil, err
	}
	if _, ok := f.myses[id]; !ok {
		return nil, notFound(id)
	}
	slices.SortFunc(ls, func(a, b rules.SpendLimit) int {
		return cmp.Or(cmp.Compare(a.Window, b.Window), cmp.Compare(a.Unit, b.Unit))
	})
	f.limits[id] = ls
	f.changedLocked()
	return &memoryv1.SetSpendLimitsResponse{Limits: spendLimitsProto(ls)}, nil
}

// GetSpend implements MemoryService.GetSpend: the mysis's limits, and its and the swarm's counts in the hour, the
// day and the total containing at (unset: now).
func (f *Fake) GetSpend(_ context.Context, req *memoryv1.GetSpendRequest) (*memoryv1.GetSpendResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetSpend"); ok {
		return nil, injected(fault)
	}
	at := time.Now()
	if req.At != nil {
		if req.GetAt().CheckValid() != nil {
			return nil, errs.InvalidField("at", "not a valid timestamp")
		}
		at = req.GetAt().AsTime()
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	if _, ok := f.myses[id]; !ok {
		return nil, notFound(id)
	}
	return &memoryv1.GetSpendResponse{Limits: spendLimitsProto(f.limits[id]), Mysis: spendCounts(f.spend[id], at), Swarm: spendCounts(f.swarm, at)}, nil
}

func spendCounts(m map[rules.SpendWindow]*spendCount, at time.Time) []*memoryv1.SpendCount {
	var out []*memoryv1.SpendCount
	for _, w := range []rules.SpendWindow{rules.WindowHour, rules.WindowDay, rules.WindowTotal} {
		start := w.Start(at)
		c := &memoryv1.SpendCount{Window: memoryv1.SpendWindow(w)}
		if w != rules.WindowTotal {
			c.Start = timestamppb.New(start)
		}
		if cur := m[w]; cur != nil && cur.start.Equal(start) {
			c.Tokens, c.CostNanos = cur.tokens, cur.costNanos
		}
		out = append(out, c)
	}
	return out
}
