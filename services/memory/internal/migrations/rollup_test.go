package migrations_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
)

// atSchema9 is a fresh database migrated to schema v9 (before the rollups) with two myses, a and b, and an exec
// that fails the test on an error.
func atSchema9(t *testing.T) (context.Context, *pgxpool.Pool, func(string, ...any), string, string) {
	t.Helper()
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	if err := migrations.UpTo(ctx, p, 9); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := p.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	a, b := memory.NewID(), memory.NewID()
	exec(`INSERT INTO myses (id, name, provider) VALUES ($1, 'a', 'openai'), ($2, 'b', 'openai')`, a, b)
	return ctx, p, exec, a, b
}

// TestUsageRollupBackfill migrates calls written at schema v9 (no rollup) and checks 00010 built the hourly and
// daily rollup rows from them: per mysis, hour or day, provider and model, the sums, failures and first/last call.
func TestUsageRollupBackfill(t *testing.T) {
	ctx, p, exec, a, b := atSchema9(t)
	t0 := time.Date(2026, 11, 23, 23, 10, 0, 0, time.UTC)
	calls := []struct {
		mysis  string
		at     time.Time
		model  string
		prompt int64
		err    string
	}{
		{a, t0, "m1", 100, ""},
		{a, t0.Add(20 * time.Minute), "m1", 200, "boom"},
		{a, t0.Add(50 * time.Minute), "m1", 400, ""}, // the next hour and the next day
		{a, t0.Add(55 * time.Minute), "m2", 800, ""},
		{b, t0.Add(5 * time.Minute), "m1", 1600, ""},
	}
	for _, c := range calls {
		exec(`INSERT INTO llm_calls (call_id, mysis_id, started_at, provider, model, prompt_tokens, cost_nanos, error)
			VALUES ($1, $2, $3, 'openai', $4, $5::bigint, $5::bigint * 10, $6)`, memory.NewID(), c.mysis, c.at, c.model, c.prompt, c.err)
	}
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	type key struct {
		mysis string
		span  int
		start time.Time
		model string
	}
	type sums struct {
		calls, failed, prompt, cost int64
		first, last                 time.Time
	}
	rows, err := p.Query(ctx, `SELECT mysis_id::text, span, start, model, calls, failed_calls, prompt_tokens, cost_nanos,
		first_call_at, last_call_at FROM llm_usage_rollup`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[key]sums{}
	for rows.Next() {
		var k key
		var s sums
		if err := rows.Scan(&k.mysis, &k.span, &k.start, &k.model, &s.calls, &s.failed, &s.prompt, &s.cost, &s.first, &s.last); err != nil {
			t.Fatal(err)
		}
		k.start, s.first, s.last = k.start.UTC(), s.first.UTC(), s.last.UTC()
		got[k] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	h23, h00 := t0.Truncate(time.Hour), t0.Add(time.Hour).Truncate(time.Hour)
	d23, d24 := t0.Truncate(24*time.Hour), h00
	want := map[key]sums{
		{a, 1, h23, "m1"}: {2, 1, 300, 3000, t0, t0.Add(20 * time.Minute)},
		{a, 1, h00, "m1"}: {1, 0, 400, 4000, t0.Add(50 * time.Minute), t0.Add(50 * time.Minute)},
		{a, 1, h00, "m2"}: {1, 0, 800, 8000, t0.Add(55 * time.Minute), t0.Add(55 * time.Minute)},
		{b, 1, h23, "m1"}: {1, 0, 1600, 16000, t0.Add(5 * time.Minute), t0.Add(5 * time.Minute)},
		{a, 2, d23, "m1"}: {2, 1, 300, 3000, t0, t0.Add(20 * time.Minute)},
		{a, 2, d24, "m1"}: {1, 0, 400, 4000, t0.Add(50 * time.Minute), t0.Add(50 * time.Minute)},
		{a, 2, d24, "m2"}: {1, 0, 800, 8000, t0.Add(55 * time.Minute), t0.Add(55 * time.Minute)},
		{b, 2, d23, "m1"}: {1, 0, 1600, 16000, t0.Add(5 * time.Minute), t0.Add(5 * time.Minute)},
	}
	if len(got) != len(want) {
		t.Fatalf("rollup rows\n got %+v\nwant %+v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("rollup %+v: got %+v, want %+v", k, got[k], w)
		}
	}
}

// TestSwarmUsageRollupBackfill migrates calls written at schema v9 (with the running totals the write path kept)
// and checks 00013 built the swarm rollup from the per-mysis rollup and the totals: per hour, day and all time,
// provider, model and shard (the mysis id's last byte & 15), equal to a direct aggregate over the calls.
func TestSwarmUsageRollupBackfill(t *testing.T) {
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	if err := migrations.UpTo(ctx, p, 9); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := p.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// a and b share shard 1; c is shard 2.
	a, b, c := "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000011", "00000000-0000-4000-8000-000000000002"
	exec(`INSERT INTO myses (id, name, provider) VALUES ($1, 'a', 'openai'), ($2, 'b', 'openai'), ($3, 'c', 'openai')`, a, b, c)
	t0 := time.Date(2026, 11, 23, 23, 10, 0, 0, time.UTC)
	for i, call := range []struct {
		mysis string
		at    time.Duration
		model string
		err   string
	}{{a, 0, "m1", ""}, {b, 20 * time.Minute, "m1", "boom"}, {a, 50 * time.Minute, "m1", ""}, {c, 55 * time.Minute, "m1", ""},
		{b, 5 * time.Minute, "m2", ""}, {c, 0, "m1", ""}} {
		exec(`INSERT INTO llm_calls (call_id, mysis_id, started_at, provider, model, prompt_tokens, cost_nanos, error)
			VALUES ($1, $2, $3, 'openai', $4, $5::bigint, $5::bigint * 10, $6)`, memory.NewID(), call.mysis, t0.Add(call.at), call.model, 100*(i+1), call.err)
	}
	exec(`INSERT INTO llm_usage_totals (mysis_id, provider, model, calls, failed_calls, prompt_tokens, cost_nanos, first_call_at, last_call_at)
		SELECT mysis_id, provider, model, count(*), count(*) FILTER (WHERE error <> ''), sum(prompt_tokens), sum(cost_nanos),
			min(started_at), max(started_at) FROM llm_calls GROUP BY 1, 2, 3`)
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	var diff string
	if err := p.QueryRow(ctx, `WITH raw AS (
			SELECT s.span, s.start, c.provider, c.model, (get_byte(uuid_send(c.mysis_id), 15) & 15)::smallint AS shard,
				count(*) AS calls, count(*) FILTER (WHERE c.error <> '') AS failed, sum(c.prompt_tokens) AS prompt,
				sum(c.cost_nanos) AS cost, min(c.started_at) AS first, max(c.started_at) AS last
			FROM llm_calls c CROSS JOIN LATERAL (VALUES (1::smallint, date_trunc('hour', c.started_at, 'UTC')),
				(2::smallint, date_trunc('day', c.started_at, 'UTC')), (3::smallint, 'epoch'::timestamptz)) AS s(span, start)
			GROUP BY 1, 2, 3, 4, 5
		), got AS (
			SELECT span, start, provider, model, shard, calls, failed_calls AS failed, prompt_tokens AS prompt, cost_nanos AS cost,
				first_call_at AS first, last_call_at AS last FROM llm_usage_swarm_rollup
		)
		SELECT coalesce(string_agg(x::text, '; '), '') FROM ((TABLE raw EXCEPT TABLE got) UNION ALL (TABLE got EXCEPT TABLE raw)) x`).Scan(&diff); err != nil {
		t.Fatal(err)
	}
	if diff != "" {
		t.Fatalf("swarm rollup differs from the calls: %s", diff)
	}
	// One row by hand: shard 1's hour 23:00 of m1 holds a's first call and b's failed one.
	var calls, failed, prompt int64
	var first, last time.Time
	if err := p.QueryRow(ctx, `SELECT calls, failed_calls, prompt_tokens, first_call_at, last_call_at FROM llm_usage_swarm_rollup
		WHERE span = 1 AND start = $1 AND model = 'm1' AND shard = 1`, t0.Truncate(time.Hour)).Scan(&calls, &failed, &prompt, &first, &last); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || failed != 1 || prompt != 300 || !first.Equal(t0) || !last.Equal(t0.Add(20*time.Minute)) {
		t.Fatalf("shard 1, 23:00, m1: %d calls, %d failed, %d prompt, %v–%v", calls, failed, prompt, first, last)
	}
}

// TestMysisCostBackfill migrates calls written at schema v9 (with the running totals the write path kept) and
// checks 00015 built the per-mysis cost lists from the rollup and the totals: per mysis, hour, day and all time over
// every model, equal to a direct aggregate over the calls; and that 00014's covering index gave way to the plain one.
func TestMysisCostBackfill(t *testing.T) {
	ctx, p, exec, a, b := atSchema9(t)
	t0 := time.Date(2026, 11, 23, 23, 10, 0, 0, time.UTC)
	for i, call := range []struct {
		mysis string
		at    time.Duration
		model string
	}{{a, 0, "m1"}, {a, 5 * time.Minute, "m2"}, {b, 20 * time.Minute, "m1"}, {a, 50 * time.Minute, "m1"}, {b, 55 * time.Minute, "m2"},
		{b, 26 * time.Hour, "m1"}} {
		exec(`INSERT INTO llm_calls (call_id, mysis_id, started_at, provider, model, prompt_tokens, cost_nanos)
			VALUES ($1, $2, $3, 'openai', $4, 1, $5)`, memory.NewID(), call.mysis, t0.Add(call.at), call.model, int64(1000*(i+1)))
	}
	exec(`INSERT INTO llm_usage_totals (mysis_id, provider, model, calls, prompt_tokens, cost_nanos, first_call_at, last_call_at)
		SELECT mysis_id, provider, model, count(*), sum(prompt_tokens), sum(cost_nanos), min(started_at), max(started_at)
		FROM llm_calls GROUP BY 1, 2, 3`)
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	var diff string
	var rows int
	if err := p.QueryRow(ctx, `WITH raw AS (
			SELECT c.mysis_id, s.span, s.start, sum(c.cost_nanos) AS cost, count(*) AS calls
			FROM llm_calls c CROSS JOIN LATERAL (VALUES (1::smallint, date_trunc('hour', c.started_at, 'UTC')),
				(2::smallint, date_trunc('day', c.started_at, 'UTC')), (3::smallint, 'epoch'::timestamptz)) AS s(span, start)
			GROUP BY 1, 2, 3
		), got AS (SELECT mysis_id, span, start, cost_nanos AS cost, calls FROM llm_usage_mysis_cost)
		SELECT coalesce(string_agg(x::text, '; '), ''), (SELECT count(*) FROM got)
		FROM ((TABLE raw EXCEPT TABLE got) UNION ALL (TABLE got EXCEPT TABLE raw)) x`).Scan(&diff, &rows); err != nil {
		t.Fatal(err)
	}
	// a: hours 23:00 (two models, one row), 00:00; days 23rd, 24th; all time. b: hours 23:00, 00:00, 01:00 on the
	// 25th; days 23rd, 24th, 25th; all time.
	if diff != "" || rows != 12 {
		t.Fatalf("per-mysis cost rows (%d, want 12) differ from the calls: %s", rows, diff)
	}
	var idx []string
	if err := p.QueryRow(ctx, `SELECT array_agg(indexname::text ORDER BY indexname) FROM pg_indexes WHERE tablename = 'llm_usage_rollup'`).Scan(&idx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idx, []string{"llm_usage_rollup_pkey", "llm_usage_rollup_span_start_idx"}) {
		t.Fatalf("llm_usage_rollup's indexes: %v", idx)
	}
}
