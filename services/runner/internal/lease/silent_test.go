package lease

import (
	"testing"
	"testing/synctest"
	"time"
)

// A holder renews every TTL/3: silent for over half a TTL means it has stopped, and the lease expires a TTL after
// it was last heard.
func TestSilentUntil(t *testing.T) {
	heard := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	ttl := 15 * time.Second
	for _, tc := range []struct {
		after  time.Duration
		silent bool
	}{{0, false}, {5 * time.Second, false}, {7500 * time.Millisecond, false}, {8 * time.Second, true}, {14 * time.Second, true}, {15 * time.Second, false}, {time.Minute, false}} {
		until, ok := silentUntil(heard, ttl, heard.Add(tc.after))
		if ok != tc.silent {
			t.Errorf("%s after the last renewal: silent %v, want %v", tc.after, ok, tc.silent)
		}
		if ok && !until.Equal(heard.Add(ttl)) {
			t.Errorf("%s after: paused until %v, want %v", tc.after, until, heard.Add(ttl))
		}
	}
}

// The manager reports another replica's lease as silent once it has gone unrenewed for half a TTL, never its own.
func TestManagerReportsASilentHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New(fakeLeases{tb: newTable(), holder: "me"}, fakeLister{}, func(string) Actor { return nil }, Config{})
		start := time.Now()
		m.onLease("m-1", "runner-dead")
		m.onLease("m-2", "me")
		if _, ok := m.Silent("m-1"); ok {
			t.Fatal("silent right after its renewal was heard")
		}
		time.Sleep(leaseTTL/2 + time.Millisecond)
		until, ok := m.Silent("m-1")
		if !ok || !until.Equal(start.Add(leaseTTL)) {
			t.Fatalf("after half a TTL without renewal: %v %v, want silent until %v", until, ok, start.Add(leaseTTL))
		}
		if _, ok := m.Silent("m-2"); ok {
			t.Fatal("this replica's own lease reported silent")
		}
		m.onLease("m-1", "runner-live") // renewed (or taken over): not silent any more
		if _, ok := m.Silent("m-1"); ok {
			t.Fatal("silent after a renewal")
		}
	})
}
