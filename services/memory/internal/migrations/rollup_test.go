package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
)

// TestUsageRollupBackfill migrates calls written at schema v9 (no rollup) and checks 00010 built the hourly and
// daily rollup rows from them: per mysis, hour or day, provider and model, the sums, failures and first/last call.
func TestUsageRollupBackfill(t *testing.T) {
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
