package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
)

// roundTrips counts what goes over the wire: every statement sent alone and every pipelined batch.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func tracedStore(t testing.TB) (*svcStore, *roundTrips) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	rt := &roundTrips{}
	cfg.ConnConfig.Tracer = rt
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	return newSvcStore(p, testBox(t)), rt
}

// TestRecordingAddsNoRoundTrip: an assistant append that carries its LLM call takes exactly as many round trips
// as one that does not.
func TestRecordingAddsNoRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, rt := tracedStore(t)
	m := mkMysis(t, s)
	measure := func(key string, c *memory.LlmCall) int64 {
		before := rt.n.Load()
		if _, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "ok", IdempotencyKey: key, LlmCall: c}}); err != nil {
			t.Fatal(err)
		}
		return rt.n.Load() - before
	}
	for i := range 3 {
		plain := measure(fmt.Sprintf("plain-%d", i), nil)
		with := measure(fmt.Sprintf("with-%d", i), call(uuidN(100+i), time.Now(), 900, 512, 40, 1000))
		if plain != with || plain == 0 {
			t.Fatalf("append without a call: %d round trips, with one: %d", plain, with)
		}
		t.Logf("append: %d round trips with or without the call", with)
	}
	u, err := s.GetUsage(ctx, memory.UsageQuery{MysisIDs: []string{m.ID}})
	if err != nil || u.Total.Calls != 3 || u.Total.PromptTokens != 2700 {
		t.Fatalf("recorded %+v %v", u.Total, err)
	}
}

// BenchmarkUsageSwarmByMysis seeds 10,000 myses and 1,000,000 calls over 7 days with COPY (the running totals and,
// where the schema has them, the hourly and daily rollups are built from the copied calls in one statement each, as
// the write path would have kept them), then measures every usage query the console and `zoea usage` make — all
// time, today, the last 24 hours, the last hour and the last 15 minutes; the whole swarm's total, a page of 100 by
// mysis, by model, one mysis's total — and the spend check the runner makes before every call. It reports
// p50/p95/p99 per query. The same file runs on a schema without the rollups (before issue 32).
//
//	go test -run '^$' -bench UsageSwarmByMysis -benchtime 200x -timeout 60m ./internal/pgstore/
//
// Seeding takes minutes. With ZOEA_BENCH_USAGE_DB set to the URL of a database (created beforehand, e.g.
// `createdb zoea_usage_bench`), the benchmark seeds it once and keeps it; a later run that finds it seeded reuses
// it and measures as of the seeding's time (so "today" and "this hour" are the same ranges of the same calls).
func BenchmarkUsageSwarmByMysis(b *testing.B) {
	const myses, calls = 10_000, 1_000_000
	ctx := context.Background()
	var s *svcStore
	var p *pgxpool.Pool
	now := time.Now().UTC()
	seeded := false
	if url := os.Getenv("ZOEA_BENCH_USAGE_DB"); url != "" {
		var err error
		if p, err = pgutil.Open(ctx, url, "zoea-test", 10); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		if _, err := migrations.Up(ctx, p, nil); err != nil {
			b.Fatal(err)
		}
		s = newSvcStore(p, testBox(b))
		var n int
		var last *time.Time
		if err := p.QueryRow(ctx, `SELECT count(*), max(started_at) FROM llm_calls`).Scan(&n, &last); err != nil {
			b.Fatal(err)
		}
		switch {
		case n == calls:
			// The newest call is one step before the seeding's now (seedUsageSwarm).
			now, seeded = last.UTC().Add(7*24*time.Hour/calls), true
			b.Logf("reusing the seeded database (seeded as of %v)", now)
			// A database seeded before the seeding filled the per-mysis cost lists gets them now.
			var empty bool
			if err := p.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM llm_usage_mysis_cost)`).Scan(&empty); err != nil {
				b.Fatal(err)
			}
			if empty {
				if _, err := p.Exec(ctx, mysisCostBackfill); err != nil {
					b.Fatal(err)
				}
				if _, err := p.Exec(ctx, `VACUUM ANALYZE llm_usage_mysis_cost`); err != nil {
					b.Fatal(err)
				}
			}
		case n != 0:
			b.Fatalf("ZOEA_BENCH_USAGE_DB holds %d calls, neither none nor the %d seeded ones", n, calls)
		}
	} else {
		s, p = freshStore(b)
	}
	if !seeded {
		start := time.Now()
		rollup, swarmRollup := seedUsageSwarm(ctx, b, s, p, now, myses, calls)
		b.Logf("seeded %d myses and %d calls in %v (rollup: %v, swarm rollup: %v)", myses, calls, time.Since(start).Round(time.Second), rollup, swarmRollup)
	}

	type usageCase struct {
		name string
		q    memory.UsageQuery
		all  bool // page through the whole swarm
		// chunk, when set, asks q.MysisIDs chunk ids a request (as the runner's ListMyses does since issue 32).
		chunk int
	}
	today := now.Truncate(24 * time.Hour)
	one := []string{uuidN(1)}
	// The runner's ListMyses (the console's swarm page) asks the all-time usage of a page of 1,000 myses by id.
	var pageIDs []string
	for i := range 1000 {
		pageIDs = append(pageIDs, uuidN(5000+i))
	}
	// The console's spend page reads each of the last 24 hours by model and by mysis (every page), and this hour and
	// today by mysis (every page) for the limits.
	hourAgo := now.Truncate(time.Hour).Add(-3 * time.Hour)
	cases := []usageCase{
		{"all-time first page of 100", memory.UsageQuery{GroupBy: memory.GroupMysis}, false, 0},
		{"all-time whole swarm, pages of 1000", memory.UsageQuery{GroupBy: memory.GroupMysis, PageSize: 1000}, true, 0},
		{"all-time 1000 myses by id (swarm page)", memory.UsageQuery{GroupBy: memory.GroupMysis, MysisIDs: pageIDs, PageSize: 1000}, false, 0},
		{"one whole hour by model (spend page)", memory.UsageQuery{From: hourAgo, To: hourAgo.Add(time.Hour), GroupBy: memory.GroupModel, PageSize: 1000}, false, 0},
		{"one whole hour whole swarm by mysis, pages of 1000 (spend page)", memory.UsageQuery{From: hourAgo, To: hourAgo.Add(time.Hour), GroupBy: memory.GroupMysis, PageSize: 1000}, true, 0},
		{"this hour whole swarm by mysis, pages of 1000 (spend limits)", memory.UsageQuery{From: now.Truncate(time.Hour), GroupBy: memory.GroupMysis, PageSize: 1000}, true, 0},
		{"today whole swarm by mysis, pages of 1000 (spend limits)", memory.UsageQuery{From: now.Truncate(24 * time.Hour), GroupBy: memory.GroupMysis, PageSize: 1000}, true, 0},
		{"last 24h whole swarm by mysis, pages of 1000", memory.UsageQuery{From: now.Add(-24 * time.Hour), GroupBy: memory.GroupMysis, PageSize: 1000}, true, 0},
		// Since the top-by-cost query (issue 32): the spend page asks the top 10 myses of its range (the last 24 or
		// 168 hours, whole hours and this one) in one request; the limits read only the myses with limits, by id;
		// the swarm page can ask only its visible page; `zoea usage --by mysis` pages by 200.
		{"spend page 24h top 10 by cost", memory.UsageQuery{From: now.Truncate(time.Hour).Add(-23 * time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"spend page 168h top 10 by cost", memory.UsageQuery{From: now.Truncate(time.Hour).Add(-167 * time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"today top 10 by cost", memory.UsageQuery{From: today, GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"last hour top 10 by cost", memory.UsageQuery{From: now.Add(-time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"all-time top 10 by cost", memory.UsageQuery{GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		// Since the per-mysis cost lists (00015): one stored bucket needs no sum at all; a range of whole days
		// reads a list per day; `zoea usage --top 10 --since 24h` has ragged edges.
		{"this hour top 10 by cost", memory.UsageQuery{From: now.Truncate(time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"yesterday top 10 by cost", memory.UsageQuery{From: today.Add(-24 * time.Hour), To: today, GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"6 whole days and today top 10 by cost", memory.UsageQuery{From: today.Add(-6 * 24 * time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"since 24h top 10 by cost", memory.UsageQuery{From: now.Add(-24 * time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		// Ranges with an end (`zoea usage --top 10 --from … --to …`): whole days, and hours with ragged edges.
		{"6 whole days before today top 10 by cost", memory.UsageQuery{From: today.Add(-6 * 24 * time.Hour), To: today, GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"from 50h to 2h ago, ragged, top 10 by cost", memory.UsageQuery{From: now.Add(-50 * time.Hour), To: now.Add(-2 * time.Hour), GroupBy: memory.GroupMysis, Top: 10}, false, 0},
		{"all-time top 100 by cost", memory.UsageQuery{GroupBy: memory.GroupMysis, Top: 100}, false, 0},
		{"this hour 100 limited myses by id (spend limits)", memory.UsageQuery{From: now.Truncate(time.Hour), GroupBy: memory.GroupMysis, MysisIDs: pageIDs[:100], PageSize: 1000}, false, 0},
		{"today 100 limited myses by id (spend limits)", memory.UsageQuery{From: today, GroupBy: memory.GroupMysis, MysisIDs: pageIDs[:100], PageSize: 1000}, false, 0},
		{"all-time 100 myses by id (swarm page, visible page)", memory.UsageQuery{GroupBy: memory.GroupMysis, MysisIDs: pageIDs[:100], PageSize: 1000}, false, 0},
		{"all-time 200 myses by id", memory.UsageQuery{GroupBy: memory.GroupMysis, MysisIDs: pageIDs[:200], PageSize: 1000}, false, 0},
		{"all-time first page of 200 by mysis", memory.UsageQuery{GroupBy: memory.GroupMysis, PageSize: 200}, false, 0},
		{"today first page of 200 by mysis", memory.UsageQuery{From: today, GroupBy: memory.GroupMysis, PageSize: 200}, false, 0},
		{"last 24h first page of 200 by mysis", memory.UsageQuery{From: now.Add(-24 * time.Hour), GroupBy: memory.GroupMysis, PageSize: 200}, false, 0},
		{"last 24h middle page of 200 by mysis", memory.UsageQuery{From: now.Add(-24 * time.Hour), GroupBy: memory.GroupMysis, PageSize: 200, AfterName: "mysis-05000"}, false, 0},
		{"all-time 1000 myses by id, 200 a request (swarm page)", memory.UsageQuery{GroupBy: memory.GroupMysis, MysisIDs: pageIDs, PageSize: 200}, false, 200},
		{"all-time whole swarm by mysis, pages of 200 (zoea usage)", memory.UsageQuery{GroupBy: memory.GroupMysis, PageSize: 200}, true, 0},
		{"today whole swarm by mysis, pages of 200 (zoea usage --today)", memory.UsageQuery{From: today, GroupBy: memory.GroupMysis, PageSize: 200}, true, 0},
		{"last 24h whole swarm by mysis, pages of 200 (zoea usage --since 24h)", memory.UsageQuery{From: now.Add(-24 * time.Hour), GroupBy: memory.GroupMysis, PageSize: 200}, true, 0},
	}
	for _, r := range []struct {
		name string
		from time.Time
	}{{"all-time", time.Time{}}, {"today", today}, {"last 24h", now.Add(-24 * time.Hour)},
		{"last hour", now.Add(-time.Hour)}, {"since 15m", now.Add(-15 * time.Minute)}} {
		cases = append(cases,
			usageCase{r.name + " swarm total", memory.UsageQuery{From: r.from}, false, 0},
			usageCase{r.name + " by model", memory.UsageQuery{From: r.from, GroupBy: memory.GroupModel}, false, 0},
			usageCase{r.name + " one mysis", memory.UsageQuery{From: r.from, MysisIDs: one}, false, 0})
		if !r.from.IsZero() {
			cases = append(cases, usageCase{r.name + " first page of 100", memory.UsageQuery{From: r.from, GroupBy: memory.GroupMysis}, false, 0})
		}
	}
	var hasBefore bool
	if err := p.QueryRow(ctx, `SELECT to_regclass('llm_usage_before_marks') IS NOT NULL`).Scan(&hasBefore); err != nil {
		b.Fatal(err)
	}
	// ZOEA_BENCH_NO_SNAPSHOTS=1 measures the rankings from the lists alone (what the first ranking of a new range
	// does): no snapshot is built, and those already built are deleted.
	if hasBefore && os.Getenv("ZOEA_BENCH_NO_SNAPSHOTS") == "1" {
		if _, err := p.Exec(ctx, `DELETE FROM llm_usage_before_marks`); err != nil {
			b.Fatal(err)
		}
		hasBefore = false
	}
	reportAs := func(b *testing.B, lat []time.Duration, prefix string) {
		slices.Sort(lat)
		pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
		b.ReportMetric(pct(0.50), prefix+"p50_ms")
		b.ReportMetric(pct(0.95), prefix+"p95_ms")
		b.ReportMetric(pct(0.99), prefix+"p99_ms")
	}
	report := func(b *testing.B, lat []time.Duration) { reportAs(b, lat, "") }
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			// A range ranked by cost reads the snapshots of costs before its first (and last) whole hour
			// (before.go) once the memory service's snapshotter has built them: the first such ranking sums the
			// hours and asks for them. Built here first (where the schema has snapshots), their time reported.
			var build time.Duration
			if c.q.Top > 0 && !c.q.From.IsZero() && hasBefore {
				t0 := time.Now()
				hours := []time.Time{ceilHour(c.q.From)}
				if !c.q.To.IsZero() {
					hours = append(hours, c.q.To.Truncate(time.Hour))
				}
				for _, h := range hours {
					if _, err := s.BuildUsageSnapshot(ctx, h); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.VacuumUsageSnapshots(ctx); err != nil {
					b.Fatal(err)
				}
				build = time.Since(t0)
			}
			var lat, pages []time.Duration // each whole query; each request (page) of it
			for b.Loop() {
				t0 := time.Now()
				q := c.q
				if q.PageSize == 0 {
					q.PageSize = 100
				}
				if c.chunk > 0 {
					for chunk := range slices.Chunk(c.q.MysisIDs, c.chunk) {
						q.MysisIDs = chunk
						p0 := time.Now()
						if _, err := s.GetUsage(ctx, q); err != nil {
							b.Fatal(err)
						}
						pages = append(pages, time.Since(p0))
					}
					lat = append(lat, time.Since(t0))
					continue
				}
				for {
					p0 := time.Now()
					u, err := s.GetUsage(ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					pages = append(pages, time.Since(p0))
					if !c.all || !u.More {
						break
					}
					q.AfterName = u.Rows[len(u.Rows)-1].MysisName
				}
				lat = append(lat, time.Since(t0))
			}
			report(b, lat)
			if build > 0 { // (after the loop: b.Loop's first call deletes metrics reported before it)
				b.ReportMetric(float64(build)/1e6, "snapshot_build_ms")
			}
			if c.all || c.chunk > 0 {
				reportAs(b, pages, "page_")
			}
		})
	}
	b.Run("spend check one mysis", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := s.GetSpend(ctx, uuidN(1), time.Now()); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
}

// seedUsageSwarm fills a fresh store with myses myses and calls calls evenly over the 7 days before now (COPY), and
// the running totals, rollups and swarm rollup the write path would have kept (where the schema has them), then
// VACUUM ANALYZEs. It reports which rollups the schema has.
func seedUsageSwarm(ctx context.Context, tb testing.TB, s *svcStore, p *pgxpool.Pool, now time.Time, myses, calls int) (rollup, swarmRollup bool) {
	ms := make([]memory.Mysis, myses)
	for i := range ms {
		ms[i] = memory.Mysis{ID: uuidN(i + 1), Name: fmt.Sprintf("mysis-%05d", i), Provider: "openai", Model: "gpt-4o-mini", State: memory.StateIdle, CreatedAt: now}
	}
	if err := s.CopyMyses(ctx, ms); err != nil {
		tb.Fatal(err)
	}
	span := 7 * 24 * time.Hour
	_, err := p.CopyFrom(ctx, pgx.Identifier{"llm_calls"},
		[]string{"call_id", "mysis_id", "memory_seq", "started_at", "provider", "model", "prompt_tokens", "cached_prompt_tokens",
			"completion_tokens", "reasoning_tokens", "composed_tokens", "latency_ms", "retries", "error", "cost_nanos"},
		pgx.CopyFromFunc(func() func() ([]any, error) {
			i := 0
			return func() ([]any, error) {
				if i == calls {
					return nil, nil
				}
				i++
				// span/calls first: span*i overflows int64 (it did before issue 32, which put calls in the future).
				at := now.Add(-span / time.Duration(calls) * time.Duration(i))
				model := "gpt-4o-mini"
				if i%5 == 0 {
					model = "gpt-4.1-mini"
				}
				return []any{fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), uuidN(i%myses + 1), int64(i), at, "openai", model,
					int64(1000 + i%500), int64(512), int64(20 + i%50), int64(0), int64(990 + i%500), int64(400 + i%300), int32(i % 2), "", int64(150_000 + i%1000)}, nil
			}
		}()))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := p.Exec(ctx, `INSERT INTO llm_usage_totals (mysis_id, provider, model, calls, failed_calls, prompt_tokens,
			cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos,
			first_call_at, last_call_at)
		SELECT mysis_id, provider, model, count(*), count(*) FILTER (WHERE error <> ''), sum(prompt_tokens),
			sum(cached_prompt_tokens), sum(completion_tokens), sum(reasoning_tokens), sum(composed_tokens), sum(latency_ms),
			sum(retries), sum(cost_nanos), min(started_at), max(started_at)
		FROM llm_calls GROUP BY 1, 2, 3`); err != nil {
		tb.Fatal(err)
	}
	// The spend counters of one mysis, so the spend check reads what it reads in production.
	if _, err := p.Exec(ctx, `INSERT INTO mysis_spend (mysis_id, win, start, tokens, cost_nanos)
		VALUES ($1, 1, date_trunc('hour', now(), 'UTC'), 100, 100), ($1, 2, date_trunc('day', now(), 'UTC'), 1000, 1000),
			($1, 3, 'epoch', 10000, 10000)`, uuidN(1)); err != nil {
		tb.Fatal(err)
	}
	tables := []string{"llm_calls", "llm_usage_totals", "myses", "mysis_spend"}
	if err := p.QueryRow(ctx, `SELECT to_regclass('llm_usage_rollup') IS NOT NULL`).Scan(&rollup); err != nil {
		tb.Fatal(err)
	}
	if rollup { // the same statement as the migration's backfill (00010_usage_rollup.sql)
		if _, err := p.Exec(ctx, `INSERT INTO llm_usage_rollup (mysis_id, span, start, provider, model, calls, failed_calls,
				prompt_tokens, cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries,
				cost_nanos, first_call_at, last_call_at)
			SELECT c.mysis_id, s.span, s.start, c.provider, c.model, count(*), count(*) FILTER (WHERE c.error <> ''),
				sum(c.prompt_tokens), sum(c.cached_prompt_tokens), sum(c.completion_tokens), sum(c.reasoning_tokens),
				sum(c.composed_tokens), sum(c.latency_ms), sum(c.retries), sum(c.cost_nanos), min(c.started_at), max(c.started_at)
			FROM llm_calls c CROSS JOIN LATERAL (VALUES
				(1::smallint, date_trunc('hour', c.started_at, 'UTC')),
				(2::smallint, date_trunc('day', c.started_at, 'UTC'))) AS s(span, start)
			GROUP BY c.mysis_id, s.span, s.start, c.provider, c.model`); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, "llm_usage_rollup")
	}
	if err := p.QueryRow(ctx, `SELECT to_regclass('llm_usage_swarm_rollup') IS NOT NULL`).Scan(&swarmRollup); err != nil {
		tb.Fatal(err)
	}
	if swarmRollup { // the same statement as the migration's backfill (00013_swarm_usage_rollup.sql)
		if _, err := p.Exec(ctx, swarmRollupBackfill); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, "llm_usage_swarm_rollup")
	}
	// The per-mysis cost lists the top-by-cost ranking reads (00015), as its backfill builds them. Without them a
	// ranking would read an empty table and look fast.
	var mysisCost bool
	if err := p.QueryRow(ctx, `SELECT to_regclass('llm_usage_mysis_cost') IS NOT NULL`).Scan(&mysisCost); err != nil {
		tb.Fatal(err)
	}
	if mysisCost && rollup {
		if _, err := p.Exec(ctx, mysisCostBackfill); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, "llm_usage_mysis_cost")
	}
	for _, table := range tables {
		if _, err := p.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
			tb.Fatal(err)
		}
	}
	return rollup, swarmRollup
}

// mysisCostBackfill is 00015_usage_mysis_cost.sql's backfill.
const mysisCostBackfill = `INSERT INTO llm_usage_mysis_cost (mysis_id, span, start, cost_nanos, calls)
	SELECT mysis_id, span, start, sum(cost_nanos), sum(calls) FROM llm_usage_rollup GROUP BY mysis_id, span, start
	UNION ALL
	SELECT mysis_id, 3, 'epoch', sum(cost_nanos), sum(calls) FROM llm_usage_totals GROUP BY mysis_id`

// swarmRollupBackfill is 00013_swarm_usage_rollup.sql's backfill.
const swarmRollupBackfill = `INSERT INTO llm_usage_swarm_rollup (span, start, provider, model, shard, calls, failed_calls,
		prompt_tokens, cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries,
		cost_nanos, first_call_at, last_call_at)
	SELECT span, start, provider, model, get_byte(uuid_send(mysis_id), 15) & 15, sum(calls), sum(failed_calls),
		sum(prompt_tokens), sum(cached_prompt_tokens), sum(completion_tokens), sum(reasoning_tokens), sum(composed_tokens),
		sum(latency_ms), sum(retries), sum(cost_nanos), min(first_call_at), max(last_call_at)
	FROM (
		SELECT mysis_id, span, start, provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
			completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
		FROM llm_usage_rollup
		UNION ALL
		SELECT mysis_id, 3, 'epoch', provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
			completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
		FROM llm_usage_totals
	) r
	GROUP BY span, start, provider, model, get_byte(uuid_send(mysis_id), 15) & 15`

// BenchmarkRecordLlmCalls measures the write path's cost per recorded call: one RecordLlmCalls of 4 calls (this
// hour, so every rollup row is an update after the first) for one of 200 myses at a time, on a fresh database as
// migrated, and with and without migration 00014's covering index on llm_usage_rollup (whichever the schema lacks
// is created or dropped first). It reports ns per call and the share of the rollup's updates that were HOT.
//
//	go test -run '^$' -bench RecordLlmCalls -benchtime 3000x ./internal/pgstore/
func BenchmarkRecordLlmCalls(b *testing.B) {
	for _, c := range []struct{ name, sql string }{
		{"as migrated", ""},
		{"with 00014 rank index", `CREATE INDEX IF NOT EXISTS llm_usage_rollup_rank_idx ON llm_usage_rollup (span, start)
			INCLUDE (mysis_id, cost_nanos, calls)`},
		{"without 00014 rank index", `DROP INDEX IF EXISTS llm_usage_rollup_rank_idx`},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			s, p := freshStoreConns(b, 1) // one backend: its statistics are flushed on demand below
			if c.sql != "" {
				if _, err := p.Exec(ctx, c.sql); err != nil {
					b.Fatal(err)
				}
			}
			const myses, batch = 200, 4
			ms := make([]memory.Mysis, myses)
			for i := range ms {
				ms[i] = memory.Mysis{ID: uuidN(i + 1), Name: fmt.Sprintf("mysis-%05d", i), Provider: "openai", Model: "gpt-4o-mini", State: memory.StateIdle, CreatedAt: time.Now()}
			}
			if err := s.CopyMyses(ctx, ms); err != nil {
				b.Fatal(err)
			}
			n := 0
			record := func(m int) {
				calls := make([]memory.LlmCall, batch)
				for k := range calls {
					n++
					calls[k] = *call(fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n), time.Now(), 1000, 512, 40, 150_000)
				}
				if _, err := s.RecordLlmCalls(ctx, ms[m].ID, calls); err != nil {
					b.Fatal(err)
				}
			}
			for m := range ms { // every mysis's rows of this hour and day exist: the measured calls update them
				record(m)
			}
			var hot0, upd0 int64
			stats := func() (hot, upd int64) {
				if err := p.QueryRow(ctx, `SELECT n_tup_hot_upd, n_tup_upd FROM pg_stat_user_tables WHERE relname = 'llm_usage_rollup'`).Scan(&hot, &upd); err != nil {
					b.Fatal(err)
				}
				return hot, upd
			}
			hot0, upd0 = stats()
			i := 0
			for b.Loop() {
				record(i % myses)
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/call")
			// The backend's statistics reach pg_stat_user_tables when it flushes them: now, for the next statement.
			if _, err := p.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
				b.Fatal(err)
			}
			hot, upd := stats()
			if upd > upd0 {
				b.ReportMetric(100*float64(hot-hot0)/float64(upd-upd0), "hot_pct")
			}
		})
	}
}

// ceilHour rounds t up to a whole UTC hour.
func ceilHour(t time.Time) time.Time {
	if h := t.Truncate(time.Hour); !h.Equal(t) {
		return h.Add(time.Hour)
	}
	return t
}
