package swarmbus_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/natstest"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// WatchSwarm reports the other replicas' heartbeats and departures (never the watcher's own), a holder id with a
// host name's dots included, and a departure before the releases written after it; Owners is not confused by the
// presence keys that share the lease bucket.
func TestWatchSwarmReportsPresenceInOrder(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	ba := connect(t, srv.ClientURL(), swarmbus.Options{LeaseTTL: time.Minute, Role: swarmbus.RoleRunner})
	bb := connect(t, srv.ClientURL(), swarmbus.Options{Role: swarmbus.RoleRunner})
	a, _ := ba.Leases("runner-a.pod.cluster.local-1")
	b, _ := bb.Leases("replica-b")

	type event struct {
		kind, who string
		live      bool
	}
	var mu sync.Mutex
	var events []event
	changed := make(chan struct{}, 1)
	note := func(e event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_ = b.WatchSwarm(wctx,
			func(ev swarmbus.LeaseEvent) { note(event{"lease", ev.MysisID, ev.Owner != ""}) },
			func(ev swarmbus.ReplicaEvent) { note(event{"replica", ev.Holder, ev.Live}) })
	}()
	if err := b.Heartbeat(ctx); err != nil { // its own: never reported to itself
		t.Fatal(err)
	}
	if err := a.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	want := []event{
		{"replica", "runner-a_pod_cluster_local-1", true},
		{"lease", "m1", true},
		{"replica", "runner-a_pod_cluster_local-1", false},
		{"lease", "m1", false},
	}
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("events %v, want %v", events, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, w := range want {
		if events[i] != w {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
	if len(events) != len(want) {
		t.Fatalf("events %v, want exactly %v", events, want)
	}
	if err := b.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	owners, err := b.Owners(ctx)
	if err != nil || len(owners) != 0 {
		t.Fatalf("Owners with only presence keys in the bucket: %v %v, want none", owners, err)
	}
}
