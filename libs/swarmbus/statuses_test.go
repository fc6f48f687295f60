package swarmbus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// statusMirror collects a Watch into a map, the way a runner replica mirrors the bucket.
type statusMirror struct {
	mu   sync.Mutex
	byID map[string]swarmbus.Status
	// changed is closed (and replaced) after every change the watch applies, so a test waits for the next change
	// instead of polling.
	changed chan struct{}
	synced  chan struct{}
	once    sync.Once
}

func watchStatuses(t *testing.T, b *swarmbus.Bus) *statusMirror {
	t.Helper()
	m := &statusMirror{byID: map[string]swarmbus.Status{}, changed: make(chan struct{}), synced: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Statuses().Watch(ctx, func(ev swarmbus.StatusEvent) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if ev.Status == nil {
				delete(m.byID, ev.MysisID)
			} else {
				m.byID[ev.MysisID] = *ev.Status
			}
			close(m.changed)
			m.changed = make(chan struct{})
		}, func() { m.once.Do(func() { close(m.synced) }) })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
	})
	return m
}

func (m *statusMirror) get(id string) (swarmbus.Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.byID[id]
	return st, ok
}

// waitFor returns once cond holds for the mirror's contents, re-checking after each change the watch applies.
func (m *statusMirror) waitFor(t *testing.T, what string, cond func(byID map[string]swarmbus.Status) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		m.mu.Lock()
		ok, changed := cond(m.byID), m.changed
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Statuses written by one replica are readable (Get, List) and watched (Watch) by another; a delete is seen as
// a deletion; bad ids are rejected before reaching NATS.
func TestStatusesPutGetListWatchDelete(t *testing.T) {
	srv := natstest.Start(t)
	writer := connect(t, srv.ClientURL(), swarmbus.Options{}).Statuses()
	readerBus := connect(t, srv.ClientURL(), swarmbus.Options{})
	reader := readerBus.Statuses()
	ctx := testCtx(t)

	if _, err := reader.Get(ctx, "m1"); !errors.Is(err, swarmbus.ErrStatusNotFound) {
		t.Fatalf("Get of a missing status: %v, want ErrStatusNotFound", err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st1 := swarmbus.Status{MysisID: "m1", Owner: "r1", State: "running", LastAction: "mine", LastActionAt: at, Credits: 120, Turns: 3, UpdatedAt: at}
	if err := writer.Put(ctx, st1); err != nil {
		t.Fatal(err)
	}
	// A watch started after the first write replays it, then signals that it is in sync.
	mirror := watchStatuses(t, readerBus)
	select {
	case <-mirror.synced:
	case <-time.After(10 * time.Second):
		t.Fatal("Watch never reported the initial sync")
	}
	if got, ok := mirror.get("m1"); !ok || got != st1 {
		t.Fatalf("mirror after sync = %+v (present %v), want %+v", got, ok, st1)
	}

	st2 := swarmbus.Status{MysisID: "m2", Owner: "r2", State: "idle", Credits: -1, UpdatedAt: at.Add(time.Second)}
	if err := writer.Put(ctx, st2); err != nil {
		t.Fatal(err)
	}
	st1.Turns, st1.LastAction = 4, "sell"
	if err := writer.Put(ctx, st1); err != nil {
		t.Fatal(err)
	}
	got, err := reader.Get(ctx, "m1")
	if err != nil || got != st1 {
		t.Fatalf("Get m1 = %+v, %v; want %+v", got, err, st1)
	}
	all, err := reader.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["m1"] != st1 || all["m2"] != st2 {
		t.Fatalf("List = %+v", all)
	}
	mirror.waitFor(t, "the watch to see both statuses", func(byID map[string]swarmbus.Status) bool {
		a, okA := byID["m1"]
		b, okB := byID["m2"]
		return okA && okB && a == st1 && b == st2
	})

	if err := writer.Delete(ctx, "m2"); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, "never-written"); err != nil {
		t.Fatalf("deleting a missing status: %v", err)
	}
	if _, err := reader.Get(ctx, "m2"); !errors.Is(err, swarmbus.ErrStatusNotFound) {
		t.Fatalf("Get after delete: %v", err)
	}
	mirror.waitFor(t, "the watch to see the deletion", func(byID map[string]swarmbus.Status) bool { _, ok := byID["m2"]; return !ok })
	if all, err := reader.List(ctx); err != nil || len(all) != 1 {
		t.Fatalf("List after delete = %+v, %v", all, err)
	}

	for _, bad := range []string{"", "a.b", "a*"} {
		if err := writer.Put(ctx, swarmbus.Status{MysisID: bad}); !errors.Is(err, swarmbus.ErrInvalidID) {
			t.Errorf("Put with id %q: %v, want ErrInvalidID", bad, err)
		}
		if _, err := writer.Get(ctx, bad); !errors.Is(err, swarmbus.ErrInvalidID) {
			t.Errorf("Get with id %q: %v, want ErrInvalidID", bad, err)
		}
	}
}

// The status bucket lives in the NATS server's memory: a restart loses it, the connection re-creates it on
// reconnect, statuses can be written again and a running watch picks them up without being restarted by hand.
func TestStatusesComeBackAfterNATSRestart(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.StartDir(t, dir)
	port := srv.Port()
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	reconnected := make(chan struct{}, 1)
	b.OnReconnect(func() { reconnected <- struct{}{} })
	ctx := testCtx(t)
	mirror := watchStatuses(t, b)
	if err := b.Statuses().Put(ctx, swarmbus.Status{MysisID: "m1", State: "running", Turns: 1}); err != nil {
		t.Fatal(err)
	}
	mirror.waitFor(t, "the first status", func(byID map[string]swarmbus.Status) bool { _, ok := byID["m1"]; return ok })

	srv.Shutdown()
	natstest.StartDirPort(t, dir, port)
	select {
	case <-reconnected:
	case <-time.After(15 * time.Second):
		t.Fatal("no reconnect after the restart")
	}
	// OnReconnect callbacks run after the buckets are ensured again.
	if err := b.Statuses().Put(ctx, swarmbus.Status{MysisID: "m1", State: "running", Turns: 2}); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
	if err := b.Statuses().Put(ctx, swarmbus.Status{MysisID: "m2", State: "idle"}); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
	mirror.waitFor(t, "the watch to see statuses written after the restart", func(byID map[string]swarmbus.Status) bool {
		st, ok := byID["m1"]
		_, ok2 := byID["m2"]
		return ok && st.Turns == 2 && ok2
	})
}
