package game

import (
	"testing"
	"time"
)

// The bucket allows a burst of perMinute, then one call per 60/perMinute s of game time, and names the wait in whole
// seconds rounded up.
func TestBucketBurstRefillAndRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bucket
	for i := range 6 {
		if _, ok := b.take(t0, 6); !ok {
			t.Fatalf("call %d of the burst refused", i+1)
		}
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{0, 10}, {time.Second, 9}, {9500 * time.Millisecond, 1}} {
		if got, ok := b.take(t0.Add(c.at), 6); ok || got != c.want {
			t.Fatalf("at +%v: take = %d, %v; want retry after %ds", c.at, got, ok, c.want)
		}
	}
	if _, ok := b.take(t0.Add(10*time.Second), 6); !ok {
		t.Fatal("a token refilled after 10 s was refused")
	}
	if _, ok := b.take(t0.Add(10*time.Second), 6); ok {
		t.Fatal("a second call in the same instant was allowed")
	}
	// A long pause refills to the burst, not beyond.
	later := t0.Add(time.Hour)
	for i := range 6 {
		if _, ok := b.take(later, 6); !ok {
			t.Fatalf("refilled burst call %d refused", i+1)
		}
	}
	if _, ok := b.take(later, 6); ok {
		t.Fatal("the bucket held more than its burst")
	}
	var unlimited bucket
	for range 1000 {
		if _, ok := unlimited.take(t0, -1); !ok {
			t.Fatal("a negative limit means unlimited")
		}
	}
}
