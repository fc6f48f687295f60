package swarmbus_test

import (
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/natstest"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// TestWorksWithTheSystemNATSServer runs the whole protocol against the machine's own nats-server (Debian 12 ships
// 2.9, which lacks multiple consumer filters and KV limit markers), because that is the server CI and `zoea dev`
// use; the embedded server of the other tests is always the newest.
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
	// Without limit markers nobody is told of the expiry, but the lease does expire: an acquire sweep gets it.
	deadline := time.Now().Add(3 * ttl)
	for {
		if ok, err := o.Acquire(ctx, "m1"); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease never expired for the other holder within %v", 3*ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := a.Renew(ctx, "m1"); err == nil {
		t.Fatal("the old holder renewed a lease it lost")
	}
}
