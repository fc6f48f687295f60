package game

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable game clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// world drives an engine by hand: a mutation runs in a goroutine and the test
// ticks until it resolves, so tick counts never depend on timing.
type world struct {
	t     *testing.T
	e     *Engine
	clock *fakeClock
}

func newWorldT(t *testing.T, cfg Config) *world {
	t.Helper()
	clock := newFakeClock()
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if cfg.Seed == 0 {
		cfg.Seed = 42
	}
	return &world{t: t, e: New(cfg), clock: clock}
}

// act runs a mutation to completion, ticking on demand.
func (w *world) act(f func(ctx context.Context) (any, error)) (any, error) {
	w.t.Helper()
	type res struct {
		v   any
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f(context.Background())
		ch <- res{v, err}
	}()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		queued := w.e.Queued()
		if w.e.Pending() > 0 {
			w.e.Tick()
			w.clock.Advance(time.Second)
			continue
		}
		select {
		case r := <-ch:
			return r.v, r.err
		case <-queued:
		case <-deadline.C:
			w.t.Fatal("action did not resolve")
			return nil, nil
		}
	}
}

func (w *world) register(name string) *RegisterResult {
	w.t.Helper()
	r, err := w.e.Register(name, "solarian", "")
	if err != nil {
		w.t.Fatalf("register %s: %v", name, err)
	}
	return r
}

func (w *world) must(v any, err error) any {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("unexpected error: %v", err)
	}
	return v
}

func code(err error) string {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	if err == nil {
		return ""
	}
	return "non-game error: " + err.Error()
}

func wantCode(t *testing.T, err error, want string) *Error {
	t.Helper()
	if got := code(err); got != want {
		t.Fatalf("error code = %q, want %q (err: %v)", got, want, err)
	}
	var ge *Error
	errors.As(err, &ge)
	return ge
}
