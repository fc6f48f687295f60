package llm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// gate is a fake Provider whose calls block until released, counting how many run at once.
type gate struct {
	release  chan struct{}
	entered  chan struct{}
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	calls    atomic.Int32
}

func newGate() *gate {
	return &gate{release: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (g *gate) Name() string { return "gate" }

func (g *gate) Chat(ctx context.Context, _ Request) (Response, error) {
	g.calls.Add(1)
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return Response{}, nil
	case <-ctx.Done():
		return Response{}, ctx.Err()
	}
}

// The tests run in a synctest bubble: synctest.Wait returns once every other goroutine is durably blocked, so "the
// others are queued, not running" is established rather than hoped for after a pause.
func TestWithLimitNeverMoreThanN(t *testing.T) { synctest.Test(t, testWithLimitNeverMoreThanN) }

func testWithLimitNeverMoreThanN(t *testing.T) {
	const n, callers = 3, 12
	g := newGate()
	p := WithLimit(g, n)
	if p.Name() != "gate" {
		t.Fatalf("Name() = %q", p.Name())
	}
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if _, err := p.Chat(t.Context(), Request{}); err != nil {
				t.Error(err)
			}
		})
	}
	// Every caller has either entered the provider or blocked waiting for a slot.
	synctest.Wait()
	if got := g.inFlight.Load(); got != n {
		t.Fatalf("in flight = %d, want %d", got, n)
	}
	if got := g.calls.Load(); got != n {
		t.Fatalf("provider calls while %d slots are held = %d, want %d", n, got, n)
	}
	close(g.release)
	wg.Wait()
	if got := g.maxSeen.Load(); got != n {
		t.Fatalf("max in flight = %d, want %d", got, n)
	}
	if got := g.calls.Load(); got != callers {
		t.Fatalf("calls = %d, want %d", got, callers)
	}
}

func TestWithLimitQueuedCallerCancels(t *testing.T) {
	synctest.Test(t, testWithLimitQueuedCallerCancels)
}

func testWithLimitQueuedCallerCancels(t *testing.T) {
	g := newGate()
	p := WithLimit(g, 1)
	holder := make(chan error, 1)
	go func() {
		_, err := p.Chat(t.Context(), Request{})
		holder <- err
	}()
	<-g.entered

	ctx, cancel := context.WithCancel(t.Context())
	waiter := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, Request{})
		waiter <- err
	}()
	synctest.Wait() // the waiter is queued for the slot
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("provider calls with the slot held = %d, want 1", got)
	}
	cancel()
	select {
	case err := <-waiter:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("queued caller err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("queued caller did not give up on cancel")
	}
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("provider calls = %d; the cancelled caller must not reach it", got)
	}
	close(g.release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	// The slot is free again.
	if _, err := p.Chat(t.Context(), Request{}); err != nil {
		t.Fatal(err)
	}
}

func TestWithLimitAlreadyCancelled(t *testing.T) {
	g := newGate()
	close(g.release)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := WithLimit(g, 1).Chat(ctx, Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if g.calls.Load() != 0 {
		t.Fatal("a cancelled caller reached the provider")
	}
}

func TestWithLimitZeroIsUnlimited(t *testing.T) {
	g := newGate()
	if WithLimit(g, 0) != Provider(g) {
		t.Fatal("WithLimit(p, 0) should return p itself")
	}
}
