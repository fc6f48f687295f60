package benchkit_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
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
	p, err := pgutil.Open(ctx, url, "zoea-benchkit", 2)
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
	ref, err := pgutil.Open(ctx, pgtest.New(t), "zoea-benchkit", 2)
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

// locomoFixture is a made-up conversation in LoCoMo's layout (the real data set is not in this repository): two
// sessions, an image caption, evidence written both ways the data set writes it, and an adversarial question.
const locomoFixture = `[{"sample_id":"fx","conversation":{"speaker_a":"Ada","speaker_b":"Bo",
"session_1_date_time":"1:00 pm on 1 May, 2023","session_1":[
 {"speaker":"Ada","dia_id":"D1:1","text":"I went to a pottery class yesterday."},
 {"speaker":"Bo","dia_id":"D1:2","text":"Nice! I adopted a puppy called Biscuit.","blip_caption":"a photo of a small dog"}],
"session_2_date_time":"2:00 pm on 9 May, 2023","session_2":[
 {"speaker":"Ada","dia_id":"D2:1","text":"My sister moved to Lisbon for work."},
 {"speaker":"Bo","dia_id":"D2:2","text":"Biscuit chewed my shoes again."}]},
"qa":[{"question":"When did Ada go to the pottery class?","answer":"30 April 2023","evidence":["D1:1"],"category":2},
 {"question":"What is the name of Bo's dog?","answer":"Biscuit","evidence":["D1:2; D2:2"],"category":1},
 {"question":"Where did Bo's sister move?","evidence":["D2:1"],"category":5,"adversarial_answer":"Lisbon"}]}]`

// TestRecallSmoke runs `memorybench recall` at toy scale: a LoCoMo-shaped conversation under 300 game memories and
// a 1,000-row planted history, with the BM25 reference, so the recall benchmark cannot rot; the engine must find
// the answers.
func TestRecallSmoke(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	dir := t.TempDir()
	fx := dir + "/locomo.json"
	if err := os.WriteFile(fx, []byte(locomoFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	out := dir + "/recall.md"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := benchkit.RecallMain(ctx, log, url, []string{"-locomo", fx, "-game", "300", "-planted", "1000", "-modes", "asked,or",
		"-concurrency", "2", "-concurrency-calls", "20", "-out", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []string{
		"| SearchMessages, asked | 2 | 100.0 | 100.0 | 100.0 | 0.0 |", // both answerable questions, all evidence found
		"BM25 reference", "Planted facts, 1072-row game history (72 facts)", "2 concurrent searches",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if r := recallAt10(t, report, "Planted facts"); r < 90 {
		t.Errorf("planted recall@10 %.1f < 90:\n%s", r, report)
	}
}

// recallAt10 reads the recall@10 of the first "SearchMessages, asked" row after section in a recall report.
func recallAt10(t testing.TB, report, section string) float64 {
	t.Helper()
	i := strings.Index(report, section)
	if i < 0 {
		t.Fatalf("no section %q", section)
	}
	rest := report[i:]
	j := strings.Index(rest, "| SearchMessages, asked |")
	if j < 0 {
		t.Fatalf("no asked row in %q", section)
	}
	cols := strings.Split(rest[j:strings.Index(rest[j:], "\n")+j], "|")
	r, err := strconv.ParseFloat(strings.TrimSpace(cols[4]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// BenchmarkRecallPlanted reports the engine's recall@10 on a 5,000-row planted history (`make bench`); the full
// benchmark is `memorybench recall` (docs/benchmarks/2026-12-02-search-v4.md).
func BenchmarkRecallPlanted(b *testing.B) {
	ctx := context.Background()
	url := pgtest.New(b)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	out := b.TempDir() + "/recall.md"
	for b.Loop() {
		if err := benchkit.RecallMain(ctx, log, url, []string{"-planted", "5000", "-ref=false", "-out", out}); err != nil {
			b.Fatal(err)
		}
	}
	rep, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(recallAt10(b, string(rep), "Planted facts"), "recall@10")
}
