package bench_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/pgtest"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/bench"
)

// TestSeedAndBenchSmoke runs both commands at toy scale so the benchmark tooling cannot rot, and checks that a
// seeded database obeys the same invariants as one written through the API.
func TestSeedAndBenchSmoke(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := bench.SeedMain(ctx, log, url, []string{"-myses", "12", "-memories", "4000", "-long", "1000", "-broadcasts", "50", "-workers", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := bench.SeedMain(ctx, log, url, []string{"-myses", "12", "-memories", "4000"}); err == nil {
		t.Fatal("seeding a non-empty database succeeded")
	}
	p, err := pgutil.Open(ctx, url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var rows, badSeq, badCounters, indexes int64
	if err := p.QueryRow(ctx, `SELECT count(*) FROM memories`).Scan(&rows); err != nil || rows != 4000 {
		t.Fatalf("rows %d %v", rows, err)
	}
	// seq is 1..n per mysis and the counters match the data.
	if err := p.QueryRow(ctx, `SELECT count(*) FROM (SELECT mysis_id FROM memories GROUP BY mysis_id HAVING max(seq) <> count(*) OR min(seq) <> 1) x`).Scan(&badSeq); err != nil || badSeq != 0 {
		t.Fatalf("myses with seq gaps: %d %v", badSeq, err)
	}
	if err := p.QueryRow(ctx, `SELECT count(*) FROM myses y WHERE last_seq <> (SELECT coalesce(max(seq), 0) FROM memories m WHERE m.mysis_id = y.id)
		OR current_turn <> (SELECT coalesce(max(turn), 0) FROM memories m WHERE m.mysis_id = y.id)`).Scan(&badCounters); err != nil || badCounters != 0 {
		t.Fatalf("myses with wrong counters: %d %v", badCounters, err)
	}
	if err := p.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'memories'`).Scan(&indexes); err != nil || indexes != 12 {
		t.Fatalf("indexes after the load: %d %v", indexes, err)
	}
	// Seeded tool results carry their call's arguments and key, as appended ones do.
	var unkeyed, keyed int64
	if err := p.QueryRow(ctx, `SELECT count(*) FILTER (WHERE call_key IS NULL OR call_arguments_json IS NULL),
		count(*) FILTER (WHERE call_key = tool_name || ' ' || call_arguments_json) FROM memories WHERE role = 4`).Scan(&unkeyed, &keyed); err != nil || unkeyed != 0 || keyed == 0 {
		t.Fatalf("seeded tool results without keys: %d (keyed %d) %v", unkeyed, keyed, err)
	}
	out := t.TempDir() + "/report.md"
	if err := bench.BenchMain(ctx, log, url, []string{"-long", "1000", "-compose", "20", "-compose-long", "10", "-search", "20",
		"-search-long", "5", "-append-rows", "200", "-append-batch", "50", "-appenders", "2", "-single", "20", "-out", out}); err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(out)
	if err != nil || len(report) < 200 {
		t.Fatalf("report: %q %v", report, err)
	}
	out = t.TempDir() + "/search.md"
	if err := bench.SearchBenchMain(ctx, log, url, []string{"-long", "1000", "-n", "2", "-out", out}); err != nil {
		t.Fatal(err)
	}
	if report, err := os.ReadFile(out); err != nil || !strings.Contains(string(report), "| 1000 rows | common word") ||
		!strings.Contains(string(report), "EXPLAIN (ANALYZE, BUFFERS)") {
		t.Fatalf("search report: %q %v", report, err)
	}
}
