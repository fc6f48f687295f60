package composing

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// windows is a Windows that serves one fixed window and records the boundary each read started from.
type windows struct {
	in    compose.Input
	m     Mysis
	err   error
	froms []int64
}

func (w *windows) Read(_ context.Context, _ string, _ compose.Policy, recentFrom int64) (compose.Input, Mysis, error) {
	w.froms = append(w.froms, recentFrom)
	return w.in, w.m, w.err
}

func window(n int) compose.Input {
	in := compose.Input{SystemPrompt: "You play SpaceMolt."}
	for i := range n {
		seq := int64(i + 1)
		in.Window = append(in.Window, compose.Memory{ID: seq, Seq: seq, Turn: seq, Role: chat.RoleUser, Source: compose.SourceDirect, Content: "mine the belt"})
	}
	return in
}

// Each request starts from the boundary the mysis's previous one ended at, unless the caller passes its own
// previous compaction; a stateless service remembers none.
func TestComposeStartsWhereThePreviousEnded(t *testing.T) {
	ctx := context.Background()
	w := &windows{in: window(5), m: Mysis{Known: true, Provider: "openai", Model: "gpt-4.1-mini"}}
	s := New(Options{})
	r := Request{MysisID: "m1", Policy: compose.DefaultPolicy()}
	first, p, err := s.Compose(ctx, w, r)
	if err != nil {
		t.Fatal(err)
	}
	if first.Manifest.Boundary <= 0 || p.Cache != compose.CacheOpenAI {
		t.Fatalf("boundary %d, cache model %q: want a boundary and the mysis's provider's model", first.Manifest.Boundary, p.Cache.Name)
	}
	if _, _, err := s.Compose(ctx, w, r); err != nil {
		t.Fatal(err)
	}
	r.Previous = &Mark{Boundary: 2, CompactSeq: 1}
	if _, _, err := s.Compose(ctx, w, r); err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, first.Manifest.Boundary, 2}; !slices.Equal(w.froms, want) {
		t.Fatalf("reads started from %v, want %v", w.froms, want)
	}
	if f := s.Fills(); len(f) != 1 || f[0].Name != "composer.boundaries" || f[0].Size != 1 {
		t.Fatalf("fills %+v, want one mysis remembered", f)
	}

	stateless, w2 := New(Options{Stateless: true}), &windows{in: window(5)}
	for range 2 {
		if _, _, err := stateless.Compose(ctx, w2, Request{MysisID: "m1", Policy: compose.DefaultPolicy()}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(w2.froms, []int64{0, 0}) || stateless.Fills() != nil {
		t.Fatalf("stateless reads started from %v with fills %+v", w2.froms, stateless.Fills())
	}
}

// A bad request names its field; a failed read or composition keeps what it means to the caller.
func TestComposeErrors(t *testing.T) {
	ctx := context.Background()
	s := New(Options{})
	for _, c := range []struct {
		r     Request
		field string
	}{
		{Request{MysisID: " "}, "mysis_id"},
		{Request{MysisID: "m1", Previous: &Mark{Boundary: -1}}, "previous_compaction.boundary_seq"},
		{Request{MysisID: "m1", Previous: &Mark{CompactSeq: -1}}, "previous_compaction.compaction_seq"},
	} {
		c.r.Policy = compose.DefaultPolicy()
		w := &windows{in: window(1)}
		_, _, err := s.Compose(ctx, w, c.r)
		var e *errs.Error
		if !errors.As(err, &e) || e.Kind != errs.Invalid || e.Field != c.field || len(w.froms) != 0 {
			t.Errorf("%+v: %v (reads %v), want InvalidArgument on %s before any read", c.r, err, w.froms, c.field)
		}
	}

	empty := &windows{in: compose.Input{}}
	_, _, err := s.Compose(ctx, empty, Request{MysisID: "m1", Policy: compose.DefaultPolicy()})
	if e := (*errs.Error)(nil); !errors.As(err, &e) || e.Kind != errs.Conflict {
		t.Errorf("empty system prompt: %v, want a conflict", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	failing := &windows{err: errors.New("memory GetComposeWindow: connection reset")}
	if _, _, err := s.Compose(cancelled, failing, Request{MysisID: "m1", Policy: compose.DefaultPolicy()}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller got %v, want its own cancellation", err)
	}
	if _, _, err := s.Compose(ctx, failing, Request{MysisID: "m1", Policy: compose.DefaultPolicy()}); err != failing.err {
		t.Errorf("a failed read got %v, want it unchanged", err)
	}
}
