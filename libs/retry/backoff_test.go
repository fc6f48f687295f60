package retry_test

import (
	"reflect"
	"testing"
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

func TestJitterIsDownwardAndDeterministicWithInjectedRand(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want []time.Duration
	}{
		// r → 0 gives the smallest delay, (1−Jitter)·d; r → 1 the full d. The cap is never exceeded.
		{0, []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond}},
		{0.5, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 2250 * time.Millisecond}},
		{0.999999, []time.Duration{999999500, 1999999000, 2999998500}},
	} {
		b := retry.New(retry.Policy{Initial: time.Second, Max: 3 * time.Second, Jitter: 0.5, Rand: func() float64 { return c.r }})
		if got := seq(b, 3); !reflect.DeepEqual(got, c.want) {
			t.Errorf("rand %v: delays = %v, want %v", c.r, got, c.want)
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
		if got < d-d/5 || got > d {
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
