package benchkit_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/tools/benchkit"
)

// TestSeedAndBenchSmoke runs both commands at toy scale so the benchmark tooling cannot rot, and checks that a
// seeded database obeys the same invariants as one written through the API.
func TestSeedAndBenchSmoke(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := benchkit.SeedMain(ctx, log, url, []string{"-myses", "12", "-memories", "4000", "-long", "1000", "-broadcasts", "50", "-workers", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := benchkit.SeedMain(ctx, log, url, []string{"-myses", "12", "-memories", "4000"}); err == nil {
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
	// The load drops the secondary indexes and rebuilds them: afterwards the table and each partition have
	// exactly the indexes of a freshly migrated database, under the same names (a partition's as <index>_pNN).
	ref, err := pgutil.Open(ctx, pgtest.New(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if _, err := migrations.Up(ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
	const indexNames = `SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = $1`
	var want, got, gotPart string
	if err := ref.QueryRow(ctx, indexNames, "memories").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if err := p.QueryRow(ctx, indexNames, "memories").Scan(&got); err != nil || got != want {
		t.Fatalf("indexes after the load:\n%s\nwant\n%s (%v)", got, want, err)
	}
	if err := p.QueryRow(ctx, indexNames, "memories_p07").Scan(&gotPart); err != nil ||
		gotPart != strings.ReplaceAll(want, ",", "_p07,")+"_p07" {
		t.Fatalf("a partition's indexes after the load: %s (%v)", gotPart, err)
	}
	if err := p.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE NOT indisvalid`).Scan(&indexes); err != nil || indexes != 0 {
		t.Fatalf("invalid indexes: %d %v", indexes, err)
	}
	// Seeded broadcast deliveries are stored as online ones are: no copy of the text, resolved on read.
	var copies, deliveries int64
	if err := p.QueryRow(ctx, `SELECT count(*) FILTER (WHERE content <> ''), count(*) FROM memories WHERE broadcast_id IS NOT NULL`).Scan(&copies, &deliveries); err != nil || copies != 0 {
		t.Fatalf("seeded deliveries: %d of %d carry a copy (%v)", copies, deliveries, err)
	}
	// Every seeded row is fully indexed.
	if err := p.QueryRow(ctx, `SELECT count(*) FROM memories WHERE content_tsv IS NULL AND broadcast_id IS NULL`).Scan(&indexes); err != nil || indexes != 0 {
		t.Fatalf("seeded rows without a vector: %d %v", indexes, err)
	}
	// Seeded tool results carry their call's arguments and key, as appended ones do.
	var unkeyed, keyed int64
	if err := p.QueryRow(ctx, `SELECT count(*) FILTER (WHERE call_key IS NULL OR call_arguments_json IS NULL),
		count(*) FILTER (WHERE call_key = tool_name || ' ' || call_arguments_json) FROM memories WHERE role = 4`).Scan(&unkeyed, &keyed); err != nil || unkeyed != 0 || keyed == 0 {
		t.Fatalf("seeded tool results without keys: %d (keyed %d) %v", unkeyed, keyed, err)
	}
	out := t.TempDir() + "/report.md"
	if err := benchkit.BenchMain(ctx, log, url, []string{"-long", "1000", "-compose", "20", "-compose-long", "10", "-search", "20",
		"-search-long", "5", "-append-rows", "200", "-append-batch", "50", "-appenders", "2", "-single", "20", "-out", out}); err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(out)
	if err != nil || len(report) < 200 {
		t.Fatalf("report: %q %v", report, err)
	}
}
