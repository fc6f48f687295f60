package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// The large-scale numbers come from `memorybench bench` against a database filled by `memorybench seed` (see README and
// docs/BENCHMARKS.md). These Go benchmarks are the quick, always-runnable versions:
//
//	go test -run '^$' -bench . ./internal/pgstore/
//
// and, with ZOEA_BENCH_DATABASE_URL pointing at a seeded database, BenchmarkSeeded* measure it too.

func BenchmarkComposeWindow(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	m := mkMysis(b, s)
	batch := make([]memory.NewMemory, 0, 1000)
	for i := range 1000 {
		batch = append(batch, assistant(fmt.Sprintf("step %d", i), memory.ToolCall{ID: fmt.Sprint(i), Name: "mine", Arguments: "{}"}))
	}
	must[[]memory.Memory](b)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("mission")}))
	must[[]memory.Memory](b)(s.AppendMemories(ctx, m.ID, batch))
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComposeWindowV2LongTurn: the v2 window of a mysis in the middle of a long turn — 300 rows since its
// order, 40 distinct calls and 10 replies carried from the 2,000 rows before it — against the v1 window of the same
// mysis (sub-benchmarks, so they run on the same data).
func BenchmarkComposeWindowV2LongTurn(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	m := mkMysis(b, s)
	var rows []memory.NewMemory
	loop := func(i int, name string, arg int) {
		id := fmt.Sprintf("c%d", i)
		args := fmt.Sprintf(`{"item":"i%d"}`, arg)
		rows = append(rows, assistant("", memory.ToolCall{ID: id, Name: name, Arguments: args}),
			toolResultArgs(id, name, args, strings.Repeat("x", 400)))
	}
	must[[]memory.Memory](b)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("Trade")}))
	for t := range 10 {
		rows = append(rows[:0], memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."})
		for i := range 99 {
			loop(t*1000+i, "view_market", i%40)
		}
		rows = append(rows, assistant("Prices noted."))
		must[[]memory.Memory](b)(s.AppendMemories(ctx, m.ID, rows))
	}
	rows = append(rows[:0], memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."})
	for i := range 150 {
		loop(100000+i, "mine", 0)
	}
	must[[]memory.Memory](b)(s.AppendMemories(ctx, m.ID, rows))
	for _, c := range []struct {
		name string
		q    memory.WindowQuery
	}{
		{"v1", memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}},
		{"v2", memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true, CarryLimit: 64, ReplyLimit: 10,
			SnapshotTools: []string{"get_status"}, PinnedTools: []string{"login"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				w, err := s.GetComposeWindow(ctx, c.q)
				if err != nil {
					b.Fatal(err)
				}
				n = len(w.Memories)
			}
			b.ReportMetric(float64(n), "memories")
		})
	}
}

func BenchmarkAppendBatch1000(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	m := mkMysis(b, s)
	batch := make([]memory.NewMemory, 1000)
	for i := range batch {
		batch[i] = toolResult("c", "get_status", `{"player":{"credits":1234,"current_system":"sol","current_poi":"main_belt"},"ship":{"hull":90,"fuel":55}}`)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.AppendMemories(ctx, m.ID, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "memories/s")
}

func seeded(b *testing.B) *svcStore {
	url := os.Getenv("ZOEA_BENCH_DATABASE_URL")
	if url == "" {
		b.Skip("set ZOEA_BENCH_DATABASE_URL to a database filled by `memorybench seed`")
	}
	p, err := pgutil.Open(context.Background(), url, "zoea-test", 4)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return newSvcStore(p, nil)
}

func BenchmarkSeededComposeWindow(b *testing.B) {
	ctx := context.Background()
	s := seeded(b)
	for _, name := range []string{"long-1000", "long-10000", "long-100000", "long-1000000", "seed-000123"} {
		m, err := s.GetMysisByName(ctx, name)
		if err != nil {
			b.Logf("skip %s: %v", name, err)
			continue
		}
		b.Run(fmt.Sprintf("history=%d", m.LastSeq), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSeededSearch(b *testing.B) {
	ctx := context.Background()
	s := seeded(b)
	m, err := s.GetMysisByName(ctx, "seed-000123")
	if err != nil {
		b.Skip(err)
	}
	for _, q := range []string{"iron_ore", `"travel cooldown"`, "sell OR buy", "titanium -copper"} {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
