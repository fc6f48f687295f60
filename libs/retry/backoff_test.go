package retry_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/retry"
)

func seq(b *retry.Backoff, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = b.Next()
	}
	return out
}

func TestDoublesUpToTheCap(t *testing.T) {
	b := retry.New(retry.Policy{Initial: time.Second, Max: 5 * time.Second})
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if got := seq(b, 5); !reflect.DeepEqual(got, want) {
		t.Fatalf("delays = %v, want %v", got, want)
	}
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Fatalf("after Reset the first delay is %v, want 1s", got)
	}
}

// The jitter is downward and uses the whole band: every delay lies in [(1−Jitter)·d, d] (a nanosecond of float
// rounding allowed below), the cap is never exceeded, and over many draws both ends of the band are reached.
func TestJitterIsDownwardOverTheWholeBand(t *testing.T) {
	p := retry.Policy{Initial: time.Second, Max: 3 * time.Second, Jitter: 0.5}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	low, high := make([]bool, 3), make([]bool, 3)
	for range 2000 {
		for i, got := range seq(retry.New(p), 3) {
			d := want[i]
			if got < d/2-1 || got > d {
				t.Fatalf("delay %d = %v, outside [%v, %v]", i+1, got, d/2, d)
			}
			low[i] = low[i] || got < d/2+d/20
			high[i] = high[i] || got > d-d/20
		}
	}
	for i := range want {
		if !low[i] || !high[i] {
			t.Errorf("delay %d: band [%v, %v] not covered in 2000 draws (reached the bottom %v, the top %v)", i+1, want[i]/2, want[i], low[i], high[i])
		}
	}
}

func TestDefaultRandStaysInBounds(t *testing.T) {
	p := retry.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}
	b := retry.New(p)
	d := p.Initial
	spread := map[time.Duration]bool{}
	for range 200 {
		got := b.Next()
		if got < d-d/5-1 || got > d { // a nanosecond of float rounding allowed below
			t.Fatalf("delay %v outside [%v, %v]", got, d-d/5, d)
		}
		spread[got] = true
		d = min(2*d, p.Max)
	}
	if len(spread) < 10 {
		t.Fatalf("only %d distinct delays in 200: no jitter", len(spread))
	}
}

func TestDelayIsTheStatelessForm(t *testing.T) {
	p := retry.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
	for attempt, want := range map[int]time.Duration{
		-3: 100 * time.Millisecond, 0: 100 * time.Millisecond, 1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		6: 3200 * time.Millisecond, 7: 5 * time.Second, 1 << 20: 5 * time.Second,
	} {
		if got := p.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want)
		}
	}
}

func TestMaxBelowInitialIsRaised(t *testing.T) {
	b := retry.New(retry.Policy{Initial: time.Second, Max: time.Millisecond})
	if got := seq(b, 3); !reflect.DeepEqual(got, []time.Duration{time.Second, time.Second, time.Second}) {
		t.Fatalf("delays = %v", got)
	}
}

// Do retries on the library's loop with the policy's delays (fake time: synctest), stops at a Permanent error, at
// the time bound and when the context ends.
func TestDo(t *testing.T) {
	p := retry.Policy{Initial: time.Second, Max: 4 * time.Second}
	boom := errors.New("boom")
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		var waits []time.Duration
		start := time.Now()
		err := retry.Do(t.Context(), p, 0, func() error {
			if calls++; calls < 4 {
				return boom
			}
			return nil
		}, func(err error, d time.Duration) {
			if !errors.Is(err, boom) {
				t.Errorf("notified of %v", err)
			}
			waits = append(waits, d)
		})
		if err != nil || calls != 4 || !reflect.DeepEqual(waits, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}) {
			t.Fatalf("Do = %v after %d calls, waits %v; want success on the 4th after 1s, 2s, 4s", err, calls, waits)
		}
		if took := time.Since(start); took != 7*time.Second {
			t.Errorf("Do took %v of fake time, want the 7s it waited", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), p, 0, func() error { calls++; return retry.Permanent(boom) }, nil)
		if err != boom || calls != 1 {
			t.Fatalf("Do = %v after %d calls; want boom itself after one", err, calls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		// Waits of 1s and 2s: the second would end 3s after the start, past 2.5s.
		err := retry.Do(t.Context(), p, 2500*time.Millisecond, func() error { calls++; return boom }, nil)
		if !errors.Is(err, boom) || calls != 2 {
			t.Fatalf("Do = %v after %d calls; want boom after two (the bound)", err, calls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		err := retry.Do(ctx, p, 0, func() error { return boom }, func(error, time.Duration) { cancel() })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v after the context ended during a wait, want context.Canceled", err)
		}
	})
}
