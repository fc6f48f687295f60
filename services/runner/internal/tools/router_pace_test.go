package tools

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Session creations, logins and registers leave a replica evenly spaced at AuthPerMinute, whoever asks: 190 myses
// started within 23 s used to hit the game's 30-a-minute limit and its escalating lock-outs, and 161 ended ERRORED
// (issue 44). Not paced when AuthPerMinute is 0 or less.
func TestLoginsArePacedUnderTheGamesLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var waits []time.Duration
	r := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp", AuthPerMinute: 30,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return nil
		},
	}, newAccounts(t), &fakeSearch{})
	ctx := context.Background()
	for range 5 { // five at the same instant (a swarm started at once)
		if err := r.paceAuth(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v (the first goes at once)", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	// After a quiet minute the next one goes at once again.
	mu.Lock()
	now = now.Add(time.Minute)
	waits = nil
	mu.Unlock()
	if err := r.paceAuth(ctx); err != nil || len(waits) != 0 {
		t.Fatalf("after a quiet minute: waits %v, %v", waits, err)
	}
	// A stopped mysis stops waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	slow := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp", AuthPerMinute: 1}, newAccounts(t), &fakeSearch{})
	_ = slow.paceAuth(ctx)
	if err := slow.paceAuth(cctx); err == nil {
		t.Fatal("a cancelled wait for a login slot returned no error")
	}
	off := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp", Sleep: func(context.Context, time.Duration) error {
		t.Fatal("not paced, yet it waited")
		return nil
	}}, newAccounts(t), &fakeSearch{})
	for range 100 {
		if err := off.paceAuth(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
