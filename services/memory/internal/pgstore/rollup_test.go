package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// rawUsage sums llm_calls directly, per mysis, provider and model, for the calls in [from, to) (a zero bound is
// open) of the given myses (none: all): the answer the rollup-backed GetUsage must reproduce.
func rawUsage(t *testing.T, p *pgxpool.Pool, from, to time.Time, ids []string) map[[3]string]memory.UsageTotals {
	t.Helper()
	var fromArg, toArg any
	if !from.IsZero() {
		fromArg = from
	}
	if !to.IsZero() {
		toArg = to
	}
	rows, err := p.Query(context.Background(), `SELECT mysis_id::text, provider, model, count(*),
			count(*) FILTER (WHERE error <> ''), sum(prompt_tokens)::bigint, sum(cached_prompt_tokens)::bigint,
			sum(completion_tokens)::bigint, sum(reasoning_tokens)::bigint, sum(composed_tokens)::bigint,
			sum(latency_ms)::bigint, sum(retries)::bigint, sum(cost_nanos)::bigint, min(started_at), max(started_at)
		FROM llm_calls
		WHERE ($1::timestamptz IS NULL OR started_at >= $1) AND ($2::timestamptz IS NULL OR started_at < $2)
			AND (coalesce(cardinality($3::uuid[]), 0) = 0 OR mysis_id = ANY($3::uuid[]))
		GROUP BY 1, 2, 3`, fromArg, toArg, ids)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[[3]string]memory.UsageTotals{}
	for rows.Next() {
		var k [3]string
		var u memory.UsageTotals
		if err := rows.Scan(&k[0], &k[1], &k[2], &u.Calls, &u.FailedCalls, &u.PromptTokens, &u.CachedPromptTokens,
			&u.CompletionTokens, &u.ReasoningTokens, &u.ComposedTokens, &u.LatencyMS, &u.Retries, &u.CostNanos,
			&u.FirstCallAt, &u.LastCallAt); err != nil {
			t.Fatal(err)
		}
		u.FirstCallAt, u.LastCallAt = u.FirstCallAt.UTC(), u.LastCallAt.UTC()
		out[k] = u
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func addTotals(a, b memory.UsageTotals) memory.UsageTotals {
	first, last := a.FirstCallAt, a.LastCallAt
	if first.IsZero() || (!b.FirstCallAt.IsZero() && b.FirstCallAt.Before(first)) {
		first = b.FirstCallAt
	}
	if b.LastCallAt.After(last) {
		last = b.LastCallAt
	}
	return memory.UsageTotals{Calls: a.Calls + b.Calls, FailedCalls: a.FailedCalls + b.FailedCalls,
		PromptTokens: a.PromptTokens + b.PromptTokens, CachedPromptTokens: a.CachedPromptTokens + b.CachedPromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens, ReasoningTokens: a.ReasoningTokens + b.ReasoningTokens,
		ComposedTokens: a.ComposedTokens + b.ComposedTokens, LatencyMS: a.LatencyMS + b.LatencyMS,
		Retries: a.Retries + b.Retries, CostNanos: a.CostNanos + b.CostNanos, FirstCallAt: first, LastCallAt: last}
}

// TestRangedUsageMatchesTheCallLog: usage over a time range, read from the hourly and daily rollups plus the
// ragged edges of the call log, equals a direct aggregate over the call log — for random ranges (open and closed,
// hour- and day-aligned and not, shorter than an hour and spanning days), random sets of myses, every grouping,
// paged in small pages. The calls are written as the service writes them: with assistant memories and alone, in
// batches that span hours and days, some retried.
func TestRangedUsageMatchesTheCallLog(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	rng := rand.New(rand.NewPCG(32, 1))
	ms := make([]memory.Mysis, 6)
	for i := range ms {
		ms[i] = mkMysis(t, s)
	}
	base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	span := 4 * 24 * time.Hour
	randAt := func() time.Time {
		return base.Add(time.Duration(rng.Int64N(int64(span/time.Microsecond))) * time.Microsecond)
	}
	models := []string{"gpt-4o-mini", "gpt-4.1-mini", "claude-haiku"}
	n := 0
	for batch := range 120 {
		m := ms[rng.IntN(len(ms))]
		var calls []memory.LlmCall
		for range 1 + rng.IntN(6) {
			n++
			c := *call(uuidN(10_000+n), randAt(), rng.Int64N(5000), rng.Int64N(1000), rng.Int64N(300), rng.Int64N(500_000))
			c.Model = models[rng.IntN(len(models))]
			if rng.IntN(7) == 0 {
				c.Error = "openai: HTTP 500"
			}
			calls = append(calls, c)
		}
		if batch%3 == 0 {
			// With an assistant memory: one call per memory.
			for i, c := range calls {
				if _, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{{Role: memory.RoleAssistant, Source: memory.SourceLLM,
					Content: "ok", IdempotencyKey: fmt.Sprintf("b%d-%d", batch, i), LlmCall: &c}}); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if _, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil {
			t.Fatal(err)
		}
		if batch%5 == 1 { // a retried write counts nothing again
			if k, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil || k != 0 {
				t.Fatalf("retry recorded %d %v", k, err)
			}
		}
	}

	randBound := func() time.Time {
		switch rng.IntN(6) {
		case 0:
			return time.Time{} // open
		case 1:
			return randAt().Truncate(24 * time.Hour)
		case 2:
			return randAt().Truncate(time.Hour)
		default:
			return base.Add(-2 * time.Hour).Add(time.Duration(rng.Int64N(int64((span+4*time.Hour)/time.Microsecond))) * time.Microsecond)
		}
	}
	checked := 0
	for i := range 300 {
		from, to := randBound(), randBound()
		switch {
		case from.IsZero() && to.IsZero():
			from = randAt()
		case i%4 == 0 && !from.IsZero(): // short ranges: inside one hour, across one hour boundary
			to = from.Add(time.Duration(rng.Int64N(int64(90 * time.Minute))))
		case !from.IsZero() && !to.IsZero() && to.Before(from):
			from, to = to, from
		}
		if !from.IsZero() && !to.IsZero() && !to.After(from) { // GetUsage refuses an empty range
			to = from.Add(time.Hour)
		}
		var ids []string
		if rng.IntN(3) == 0 {
			for _, m := range ms {
				if rng.IntN(2) == 0 {
					ids = append(ids, m.ID)
				}
			}
		}
		raw := rawUsage(t, p, from, to, ids)
		var wantTotal memory.UsageTotals
		byMysis, byModel := map[string]memory.UsageTotals{}, map[[2]string]memory.UsageTotals{}
		for k, u := range raw {
			wantTotal = addTotals(wantTotal, u)
			byMysis[k[0]] = addTotals(byMysis[k[0]], u)
			byModel[[2]string{k[1], k[2]}] = addTotals(byModel[[2]string{k[1], k[2]}], u)
		}
		for _, g := range []memory.UsageGroup{memory.GroupNone, memory.GroupMysis, memory.GroupModel} {
			q := memory.UsageQuery{From: from, To: to, MysisIDs: ids, GroupBy: g, PageSize: 2}
			gotMysis, gotModel := map[string]memory.UsageTotals{}, map[[2]string]memory.UsageTotals{}
			for {
				u, err := s.GetUsage(ctx, q)
				if err != nil {
					t.Fatalf("range [%v, %v) ids %v group %d: %v", from, to, ids, g, err)
				}
				if u.Total != wantTotal {
					t.Fatalf("range [%v, %v) ids %v group %d: total\n got %+v\nwant %+v", from, to, ids, g, u.Total, wantTotal)
				}
				for _, r := range u.Rows {
					if g == memory.GroupMysis {
						gotMysis[r.MysisID] = r.Totals
					} else {
						gotModel[[2]string{r.Provider, r.Model}] = r.Totals
					}
				}
				if !u.More {
					break
				}
				last := u.Rows[len(u.Rows)-1]
				q.AfterName, q.AfterProvider, q.AfterModel = last.MysisName, last.Provider, last.Model
			}
			switch g {
			case memory.GroupMysis:
				if !mapsEqual(gotMysis, byMysis) {
					t.Fatalf("range [%v, %v) ids %v by mysis\n got %+v\nwant %+v", from, to, ids, gotMysis, byMysis)
				}
			case memory.GroupModel:
				if !mapsEqual(gotModel, byModel) {
					t.Fatalf("range [%v, %v) ids %v by model\n got %+v\nwant %+v", from, to, ids, gotModel, byModel)
				}
			}
		}
		if wantTotal.Calls > 0 {
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d of 300 random ranges held calls: the test checks too little", checked)
	}
}

func mapsEqual[K comparable](a, b map[K]memory.UsageTotals) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRangeSegments: a range splits into the call log's edges (each shorter than an hour), whole hours and whole
// days, disjoint and covering it exactly; "last hour" from mid-hour reads only the partial hour from the call log.
func TestRangeSegments(t *testing.T) {
	at := func(d, h, m int) time.Time { return time.Date(2026, 11, d, h, m, 0, 0, time.UTC) }
	seg := func(span int, from, to time.Time) pgstore.RangeSegment {
		return pgstore.RangeSegment{Span: span, From: from, To: to}
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []pgstore.RangeSegment
	}{
		{"last hour from mid-hour, open end", at(26, 21, 30), time.Time{},
			[]pgstore.RangeSegment{seg(0, at(26, 21, 30), at(26, 22, 0)), seg(1, at(26, 22, 0), at(27, 0, 0)), seg(2, at(27, 0, 0), time.Time{})}},
		{"today", at(26, 0, 0), time.Time{}, []pgstore.RangeSegment{seg(2, at(26, 0, 0), time.Time{})}},
		{"inside one hour", at(26, 21, 5), at(26, 21, 50), []pgstore.RangeSegment{seg(0, at(26, 21, 5), at(26, 21, 50))}},
		{"across one hour boundary", at(26, 21, 50), at(26, 22, 10),
			[]pgstore.RangeSegment{seg(0, at(26, 21, 50), at(26, 22, 10))}},
		{"whole hours in one day", at(26, 3, 0), at(26, 7, 0), []pgstore.RangeSegment{seg(1, at(26, 3, 0), at(26, 7, 0))}},
		{"days with ragged edges", at(24, 22, 15), at(26, 1, 45), []pgstore.RangeSegment{
			seg(0, at(24, 22, 15), at(24, 23, 0)), seg(0, at(26, 1, 0), at(26, 1, 45)),
			seg(1, at(24, 23, 0), at(25, 0, 0)), seg(1, at(26, 0, 0), at(26, 1, 0)), seg(2, at(25, 0, 0), at(26, 0, 0))}},
		{"open start", time.Time{}, at(26, 1, 45), []pgstore.RangeSegment{
			seg(0, at(26, 1, 0), at(26, 1, 45)), seg(1, at(26, 0, 0), at(26, 1, 0)), seg(2, time.Time{}, at(26, 0, 0))}},
	} {
		if got := pgstore.RangeSegments(c.from, c.to); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}

	// Random ranges: disjoint, exactly covering, edges short, rollup bounds aligned.
	rng := rand.New(rand.NewPCG(7, 7))
	base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for range 10_000 {
		from := base.Add(time.Duration(rng.Int64N(int64(96 * time.Hour))))
		to := from.Add(1 + time.Duration(rng.Int64N(int64(72*time.Hour))))
		if rng.IntN(4) == 0 {
			to = to.Truncate(time.Hour)
		}
		if !to.After(from) {
			continue
		}
		segs := pgstore.RangeSegments(from, to)
		slices.SortFunc(segs, func(a, b pgstore.RangeSegment) int { return a.From.Compare(b.From) })
		if !segs[0].From.Equal(from) || !segs[len(segs)-1].To.Equal(to) {
			t.Fatalf("[%v, %v): %+v does not cover it", from, to, segs)
		}
		var raw time.Duration
		for i, s := range segs {
			if !s.To.After(s.From) || (i > 0 && !segs[i-1].To.Equal(s.From)) {
				t.Fatalf("[%v, %v): %+v has a gap, an overlap or an empty part", from, to, segs)
			}
			unit := map[int]time.Duration{1: time.Hour, 2: 24 * time.Hour}[s.Span]
			if s.Span == 0 {
				raw += s.To.Sub(s.From)
			} else if !s.From.Truncate(unit).Equal(s.From) || !s.To.Truncate(unit).Equal(s.To) {
				t.Fatalf("[%v, %v): %+v is not aligned to its span", from, to, s)
			}
		}
		if raw >= 2*time.Hour {
			t.Fatalf("[%v, %v): %v from the call log", from, to, raw)
		}
	}
}
