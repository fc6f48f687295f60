package compose_test

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/benchcpu"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/replay"
	"github.com/zoeaswarm/zoea/services/composer/internal/tokcache"
)

// window20 is a 20-memory window from the middle of a generated SpaceMolt session, at a mid-turn request.
func window20(b *testing.B) compose.Input {
	s := replay.Generate(60, 1)
	at := s.Requests[len(s.Requests)/2]
	for string(s.Rows[at-1].Role) == "user" { // compose after a tool result, the common case
		at++
	}
	rows := s.Rows[at-20 : at]
	return compose.Input{SystemPrompt: replay.SystemPrompt, Window: rows,
		Mission: &compose.Mission{MemoryID: s.Rows[0].ID, Seq: s.Rows[0].Seq, Source: s.Rows[0].Source, Content: s.Rows[0].Content}}
}

// BenchmarkCompose20 is one production compose call: a fresh per-call token memo, real tokenizer.
func BenchmarkCompose20(b *testing.B) {
	in := window20(b)
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	if _, err := compose.Compose(in, p); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := compose.Compose(in, p); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b, b.N)
}

// BenchmarkCompose20Watermark is BenchmarkCompose20WarmCounter under composition v2's watermark compaction: the
// v2 side of "compose CPU no worse than v2" in the same build and run.
func BenchmarkCompose20Watermark(b *testing.B) {
	benchWarm(b, compose.CompactionWatermark)
}

// BenchmarkCompose20WarmCounter reuses one o200k.Counter across calls, as a composer server may per worker: the
// piece memo is warm, so only the merges of unseen pieces cost.
func BenchmarkCompose20WarmCounter(b *testing.B) {
	benchWarm(b, compose.CompactionPriced)
}

func benchWarm(b *testing.B, mode compose.Compaction) {
	in := window20(b)
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	p.Compaction = mode
	tok, err := o200k.Load()
	if err != nil {
		b.Fatal(err)
	}
	c := tok.NewCounter()
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := compose.ComposeWith(in, p, c); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b, b.N)
}

// BenchmarkReplay200 composes every request of a 200-turn session with Zoea's defaults.
func BenchmarkReplay200(b *testing.B) {
	s := replay.Generate(200, 1)
	p := compose.DefaultPolicy()
	cpu := benchcpu.Start()
	for b.Loop() {
		for _, at := range s.Requests {
			rows := s.Rows[max(0, at-p.ScanWindow):at]
			if _, err := compose.Compose(compose.Input{SystemPrompt: replay.SystemPrompt, Window: rows}, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu.Report(b, b.N)
	b.ReportMetric(float64(len(s.Requests)), "requests/op")
}

// BenchmarkCompose20Cached is Compose20 through the server's shared token-count cache, warm: the same window again,
// the lower bound of a compose (nothing to count).
func BenchmarkCompose20Cached(b *testing.B) {
	in := window20(b)
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	tok, err := o200k.Load()
	if err != nil {
		b.Fatal(err)
	}
	c := tokcache.New(tok, 0)
	if _, err := compose.ComposeWith(in, p, c); err != nil {
		b.Fatal(err)
	}
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := compose.ComposeWith(in, p, c); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b, b.N)
}

// BenchmarkCompose20ColdCache is Compose20 through a fresh cache each time: every text is a miss, so this is the
// cache's overhead on a cold compose (a mysis the server has not seen, or after a restart).
func BenchmarkCompose20ColdCache(b *testing.B) {
	in := window20(b)
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	tok, err := o200k.Load()
	if err != nil {
		b.Fatal(err)
	}
	cpu := benchcpu.Start()
	for b.Loop() {
		if _, err := compose.ComposeWith(in, p, tokcache.New(tok, 1024)); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b, b.N)
}

// BenchmarkSteadyState is the composer server's common case: one mysis's requests in order, each a 20-memory window
// (ScanWindow 20, as Compose20), through a shared warm cache, so each compose counts only the memories added since
// the previous one (new tool results, the reply). Sessions are generated ahead, outside the timer.
func BenchmarkSteadyState(b *testing.B) {
	benchSteady(b, 20)
}

// BenchmarkSteadyState50 is BenchmarkSteadyState with the default 50-memory window.
func BenchmarkSteadyState50(b *testing.B) {
	benchSteady(b, 50)
}

func benchSteady(b *testing.B, window int) {
	p := compose.DefaultPolicy()
	p.ScanWindow = window
	tok, err := o200k.Load()
	if err != nil {
		b.Fatal(err)
	}
	c := tokcache.New(tok, 0)
	seed := uint64(1)
	var s replay.Session
	var next int
	newSession := func() {
		s = replay.Generate(400, seed)
		seed++
		next = 0
		for next < len(s.Requests) && s.Requests[next] < window {
			next++
		}
		at := s.Requests[next] // warm the cache with the first request, as the mysis's previous compose did
		if _, err := compose.ComposeWith(compose.Input{SystemPrompt: replay.SystemPrompt, Window: s.Rows[at-window : at]}, p, c); err != nil {
			b.Fatal(err)
		}
		next++
	}
	newSession()
	var misses, composes uint64
	before := c.Stats()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for range b.N {
		if next == len(s.Requests) {
			b.StopTimer()
			regen := benchcpu.Start()
			st := c.Stats()
			misses += st.Misses - before.Misses
			newSession()
			before = c.Stats()
			cpu.Exclude(regen)
			b.StartTimer()
		}
		at := s.Requests[next]
		next++
		composes++
		if _, err := compose.ComposeWith(compose.Input{SystemPrompt: replay.SystemPrompt, Window: s.Rows[at-window : at],
			Mission: &compose.Mission{MemoryID: s.Rows[0].ID, Seq: s.Rows[0].Seq, Source: s.Rows[0].Source, Content: s.Rows[0].Content}}, p, c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.Report(b, b.N)
	misses += c.Stats().Misses - before.Misses
	b.ReportMetric(float64(misses)/float64(composes), "misses/op")
}
