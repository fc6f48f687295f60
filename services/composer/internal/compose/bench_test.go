package compose_test

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/replay"
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
	for b.Loop() {
		if _, err := compose.Compose(in, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompose20WarmCounter reuses one o200k.Counter across calls, as a composer server may per worker: the
// piece memo is warm, so only the merges of unseen pieces cost.
func BenchmarkCompose20WarmCounter(b *testing.B) {
	in := window20(b)
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	tok, err := o200k.Load()
	if err != nil {
		b.Fatal(err)
	}
	c := tok.NewCounter()
	for b.Loop() {
		if _, err := compose.ComposeWith(in, p, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay200 composes every request of a 200-turn session with Zoea's defaults.
func BenchmarkReplay200(b *testing.B) {
	s := replay.Generate(200, 1)
	p := compose.DefaultPolicy()
	for b.Loop() {
		for _, at := range s.Requests {
			rows := s.Rows[max(0, at-p.ScanWindow):at]
			if _, err := compose.Compose(compose.Input{SystemPrompt: replay.SystemPrompt, Window: rows}, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(s.Requests)), "requests/op")
}
