package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
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
