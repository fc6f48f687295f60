package swarmbus_test

import (
	"context"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// TestWorksWithTheSystemNATSServer runs the whole protocol against the machine's own nats-server (Debian 12 ships
// 2.9, which lacks multiple consumer filters and KV limit markers), because that is the server CI and `zoea dev`
// use; the other tests run natstest.Version, a current 2.x.
func TestWorksWithTheSystemNATSServer(t *testing.T) {
	url := natstest.StartSystem(t)
	const ttl = 2 * time.Second
	b := connect(t, url, swarmbus.Options{LeaseTTL: ttl})
	ctx := testCtx(t)

	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "9f1c2a4e-0000-4000-8000-000000000001", Content: "Mine iron_ore"}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	c := newCollector()
	consume(t, b, swarmbus.ConsumerOptions{}, c.handle)
	if got := c.wait(t, 1, 10*time.Second); got[0].Broadcast.Content != "Mine iron_ore" {
		t.Fatalf("delivered %+v", got[0])
	}

	a, _ := b.Leases("replica-a")
	other := connect(t, url, swarmbus.Options{})
	o, _ := other.Leases("replica-b")
	if ok, err := a.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if ok, _ := o.Acquire(ctx, "m1"); ok {
		t.Fatal("second holder acquired a held lease")
	}
	if err := a.Renew(ctx, "m1"); err != nil {
		t.Fatalf("renew: %v", err)
	}
	renewed := time.Now()
	// Without limit markers nobody is told of the expiry, so there is no event to wait for: this is a real
	// wall-clock wait for the TTL, which the NATS server enforces with its own clock. The server stored the renewal
	// before Renew returned and drops it TTL later (its expiry timer is armed for that moment); the margin covers that
	// timer firing late on a loaded machine. After it, a single acquire (the runner's periodic sweep) gets the lease.
	const margin = ttl / 2
	if !sleepUntil(ctx, renewed.Add(ttl+margin)) {
		t.Fatal("test context ended while waiting out the lease TTL")
	}
	if ok, err := o.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("acquire %v after the last renewal (TTL %v): %v %v; the lease did not expire", time.Since(renewed), ttl, ok, err)
	}
	if err := a.Renew(ctx, "m1"); err == nil {
		t.Fatal("the old holder renewed a lease it lost")
	}
}

// sleepUntil waits on a timer until t (false if ctx ends first). Only for waits that must be real time.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
