package swarmbus_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
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
	want := []event{
		{"replica", "runner-a_pod_cluster_local-1", true},
		{"lease", "m1", true},
		{"replica", "runner-a_pod_cluster_local-1", false},
		{"lease", "m1", false},
	}
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	waitFor := func(n int) {
		t.Helper()
		for {
			mu.Lock()
			got := len(events)
			mu.Unlock()
			if got >= n {
				return
			}
			select {
			case <-changed:
			case <-deadline.C:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("events %v, want %v", events, want)
			}
		}
	}
	// The watch may start after the heartbeat (then it reports it among the bucket's current values) or before:
	// either way the heartbeat is its first event, and what follows is written while it is watching.
	waitFor(1)
	if ok, err := a.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	waitFor(len(want))
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

// A release that races a renewal of the same lease (the revision moved on after Release read it) still frees the
// lease, instead of leaving it held and unrenewed until the TTL; a lease someone else holds is left alone.
func TestReleaseAfterARacingRenewalFreesTheLease(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{LeaseTTL: time.Minute, Role: swarmbus.RoleRunner})
	a, _ := b.Leases("replica-a")
	same, _ := b.Leases("replica-a") // the same holder's write that lands between Release's read and its delete
	if ok, err := a.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if ok, err := same.Acquire(ctx, "m1"); err != nil || !ok { // adopts the entry: its revision moves on
		t.Fatalf("adopt: %v %v", ok, err)
	}
	if err := a.Release(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if owner, err := a.Owner(ctx, "m1"); err != nil || owner != "" {
		t.Fatalf("after the release the lease is held by %q (%v), want it free", owner, err)
	}

	other, _ := b.Leases("replica-b")
	if ok, err := a.Acquire(ctx, "m2"); err != nil || !ok {
		t.Fatalf("acquire m2: %v %v", ok, err)
	}
	// replica-a's lease expired and replica-b took it: simulated by deleting and creating it anew.
	if ok, err := same.Acquire(ctx, "m2"); err != nil || !ok {
		t.Fatalf("adopt m2: %v %v", ok, err)
	}
	if err := same.Release(ctx, "m2"); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.Acquire(ctx, "m2"); err != nil || !ok {
		t.Fatalf("b acquires m2: %v %v", ok, err)
	}
	if err := a.Release(ctx, "m2"); err != nil {
		t.Fatal(err)
	}
	if owner, _ := a.Owner(ctx, "m2"); owner != "replica-b" {
		t.Fatalf("a stale release freed replica-b's lease: owner %q", owner)
	}
}
