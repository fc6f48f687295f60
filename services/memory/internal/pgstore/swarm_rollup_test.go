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

// swarmRollupDiff compares llm_usage_swarm_rollup, row by row and shard by shard, with the same sums taken directly
// over llm_calls; it returns the first difference ("" when equal).
func swarmRollupDiff(t *testing.T, p *pgxpool.Pool) string {
	t.Helper()
	const rawSQL = `SELECT s.span, s.start, c.provider, c.model, get_byte(uuid_send(c.mysis_id), 15) & 15, count(*),
			count(*) FILTER (WHERE c.error <> ''), sum(c.prompt_tokens), sum(c.cached_prompt_tokens), sum(c.completion_tokens),
			sum(c.reasoning_tokens), sum(c.composed_tokens), sum(c.latency_ms), sum(c.retries), sum(c.cost_nanos),
			min(c.started_at), max(c.started_at)
		FROM llm_calls c CROSS JOIN LATERAL (VALUES
			(1::smallint, date_trunc('hour', c.started_at, 'UTC')),
			(2::smallint, date_trunc('day', c.started_at, 'UTC')),
			(3::smallint, 'epoch'::timestamptz)) AS s(span, start)
		GROUP BY 1, 2, 3, 4, 5`
	const rollupSQL = `SELECT span, start, provider, model, shard, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
			completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
		FROM llm_usage_swarm_rollup`
	read := func(sql string) map[string]string {
		rows, err := p.Query(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var span, shard int
			var start, first, last time.Time
			var provider, model string
			var n [10]int64
			if err := rows.Scan(&span, &start, &provider, &model, &shard, &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6],
				&n[7], &n[8], &n[9], &first, &last); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("span %d %s %s/%s shard %d", span, start.UTC().Format(time.RFC3339), provider, model, shard)] =
				fmt.Sprintf("%v first %s last %s", n, first.UTC().Format(time.RFC3339Nano), last.UTC().Format(time.RFC3339Nano))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	raw, got := read(rawSQL), read(rollupSQL)
	for k, v := range raw {
		if got[k] != v {
			return fmt.Sprintf("%s: rollup %q, calls %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := raw[k]; !ok {
			return fmt.Sprintf("%s: rollup %q, no calls", k, v)
		}
	}
	return ""
}

// TestSwarmRollupMatchesTheCallLog: the swarm-wide rollup equals a direct aggregate over the call log, shard by
// shard, after calls written with memories and alone (failed, discarded, retried), several myses' calls at the same
// instant (so one mysis can hold a row's first or last call with another), and after myses are deleted in between —
// including the one holding a row's first or last call. Usage of the whole swarm over random ranges (hour edges,
// whole hours and days) equals the call log's too.
func TestSwarmRollupMatchesTheCallLog(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	rng := rand.New(rand.NewPCG(32, 13))
	var ms []memory.Mysis
	for range 40 {
		ms = append(ms, mkMysis(t, s))
	}
	base := time.Date(2026, 11, 20, 22, 0, 0, 0, time.UTC)
	// A few shared instants on and next to hour and day edges, so calls of different myses tie.
	shared := []time.Time{base, base.Add(-time.Microsecond), base.Add(2 * time.Hour), base.Add(26*time.Hour + 59*time.Minute)}
	randAt := func() time.Time {
		if rng.IntN(3) == 0 {
			return shared[rng.IntN(len(shared))]
		}
		return base.Add(-6 * time.Hour).Add(time.Duration(rng.Int64N(int64(48*time.Hour/time.Microsecond))) * time.Microsecond)
	}
	models := []string{"gpt-4o-mini", "gpt-4.1-mini", "claude-haiku"}
	n := 0
	write := func(rounds int) {
		for batch := range rounds {
			m := ms[rng.IntN(len(ms))]
			var calls []memory.LlmCall
			for range 1 + rng.IntN(4) {
				n++
				c := *call(memory.NewID(), randAt(), rng.Int64N(5000), rng.Int64N(1000), rng.Int64N(300), rng.Int64N(500_000))
				c.Model = models[rng.IntN(len(models))]
				switch rng.IntN(6) {
				case 0:
					c.Error = "openai: HTTP 500"
				case 1:
					c.Discarded = true // a paid reply thrown away: counted like any call
				}
				calls = append(calls, c)
			}
			if batch%3 == 0 {
				for i, c := range calls {
					if c.Discarded {
						continue
					}
					if _, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{{Role: memory.RoleAssistant, Source: memory.SourceLLM,
						Content: "ok", IdempotencyKey: fmt.Sprintf("k%d-%d", n, i), LlmCall: &c}}); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			if _, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil {
				t.Fatal(err)
			}
			if batch%4 == 1 { // a retried write counts nothing again
				if k, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil || k != 0 {
					t.Fatalf("retry recorded %d %v", k, err)
				}
			}
		}
	}
	check := func(when string) {
		t.Helper()
		if d := swarmRollupDiff(t, p); d != "" {
			t.Fatalf("%s: %s", when, d)
		}
		for range 40 {
			from := base.Add(-7 * time.Hour).Add(time.Duration(rng.Int64N(int64(50 * time.Hour))))
			switch rng.IntN(3) {
			case 0:
				from = from.Truncate(time.Hour)
			case 1:
				from = from.Truncate(24 * time.Hour)
			}
			to := from.Add(time.Duration(1 + rng.Int64N(int64(30*time.Hour))))
			if rng.IntN(3) == 0 {
				to = time.Time{}
			}
			raw := rawUsage(t, p, from, to, nil)
			var want memory.UsageTotals
			byModel := map[[2]string]memory.UsageTotals{}
			for k, u := range raw {
				want = addTotals(want, u)
				byModel[[2]string{k[1], k[2]}] = addTotals(byModel[[2]string{k[1], k[2]}], u)
			}
			u, err := s.GetUsage(ctx, memory.UsageQuery{From: from, To: to, GroupBy: memory.GroupModel, PageSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			got := map[[2]string]memory.UsageTotals{}
			for _, r := range u.Rows {
				got[[2]string{r.Provider, r.Model}] = r.Totals
			}
			if u.Total != want || !mapsEqual(got, byModel) {
				t.Fatalf("%s: [%v, %v)\n got %+v %+v\nwant %+v %+v", when, from, to, u.Total, got, want, byModel)
			}
		}
		all, err := s.GetUsage(ctx, memory.UsageQuery{GroupBy: memory.GroupNone})
		if err != nil {
			t.Fatal(err)
		}
		var want memory.UsageTotals
		for _, u := range rawUsage(t, p, time.Time{}, time.Time{}, nil) {
			want = addTotals(want, u)
		}
		if all.Total != want {
			t.Fatalf("%s: all time\n got %+v\nwant %+v", when, all.Total, want)
		}
	}
	write(150)
	check("after the writes")
	// Delete the myses holding the earliest and the latest call of some row first, then others at random.
	var firstHolder, lastHolder string
	if err := p.QueryRow(ctx, `SELECT (SELECT mysis_id::text FROM llm_calls ORDER BY started_at, call_id LIMIT 1),
		(SELECT mysis_id::text FROM llm_calls ORDER BY started_at DESC, call_id LIMIT 1)`).Scan(&firstHolder, &lastHolder); err != nil {
		t.Fatal(err)
	}
	del := func(id string) {
		t.Helper()
		if err := s.DeleteMysis(ctx, id); err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if m.ID == id {
				ms = append(ms[:i], ms[i+1:]...)
				break
			}
		}
	}
	del(firstHolder)
	if lastHolder != firstHolder {
		del(lastHolder)
	}
	check("after deleting the holders of the first and the last call")
	for round := range 4 {
		for range 3 {
			del(ms[rng.IntN(len(ms))].ID)
		}
		write(30)
		check(fmt.Sprintf("after deletion round %d", round))
	}
	if n < 300 {
		t.Fatalf("only %d calls written: the test checks too little", n)
	}
}

// TestSwarmRollupExactUnderConcurrentWritesAndDeletes: writers of some myses and a deleter of others, at once, all
// in the same few hours (so they share shards' rows and each other's first and last calls), leave the swarm rollup
// equal to the call log: a deletion's recompute and a writer's update of the same row do not lose either.
func TestSwarmRollupExactUnderConcurrentWritesAndDeletes(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	const writers, perWriter, doomed = 4, 60, 24
	var keep, gone []memory.Mysis
	for range writers {
		keep = append(keep, mkMysis(t, s))
	}
	for range doomed {
		gone = append(gone, mkMysis(t, s))
	}
	base := time.Date(2026, 11, 20, 22, 30, 0, 0, time.UTC)
	at := func(rng *rand.Rand) time.Time {
		return base.Add(time.Duration(rng.IntN(4)) * 30 * time.Minute) // few distinct instants: ties everywhere
	}
	// The doomed myses' calls first, so the deletions have rows to take out while the writers write.
	rng := rand.New(rand.NewPCG(5, 5))
	for _, m := range gone {
		var calls []memory.LlmCall
		for range 3 {
			calls = append(calls, *call(memory.NewID(), at(rng), 100, 10, 10, 1000))
		}
		if _, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error, writers+1)
	for w := range writers {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range perWriter {
				if _, err := s.RecordLlmCalls(ctx, keep[w].ID, []memory.LlmCall{*call(memory.NewID(), at(rng), 100, 10, 10, 1000)}); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	go func() {
		for _, m := range gone {
			if err := s.DeleteMysis(ctx, m.ID); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range writers + 1 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if d := swarmRollupDiff(t, p); d != "" {
		t.Fatal(d)
	}
	var n int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM llm_calls`).Scan(&n); err != nil || n != writers*perWriter {
		t.Fatalf("%d calls left (%v), want the writers' %d", n, err, writers*perWriter)
	}
}
