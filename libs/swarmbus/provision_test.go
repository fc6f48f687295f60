package swarmbus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

func actions(done []swarmbus.Provisioned) map[string]string {
	out := map[string]string{}
	for _, p := range done {
		out[p.Kind+" "+p.Name] = p.Action
	}
	return out
}

// Provision creates the four resources, leaves them alone the second time, and puts back what an administrator
// (or an attacker with a user that could) changed: a republish on the lease bucket, its TTL, a limit on the stream.
func TestProvisionCreatesReconcilesAndLeavesAlone(t *testing.T) {
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := swarmbus.ProvisionOptions{LeaseTTL: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	want := []string{"stream ZOEA_MESSAGES", "consumer bus-delivery", "bucket zoea_leases", "bucket zoea_status"}
	for i, action := range []string{swarmbus.ActionCreated, swarmbus.ActionUnchanged} {
		done, err := swarmbus.Provision(ctx, srv.ClientURL(), opts)
		if err != nil {
			t.Fatalf("provision #%d: %v", i+1, err)
		}
		got := actions(done)
		for _, r := range want {
			if got[r] != action {
				t.Errorf("provision #%d: %s %q, want %s (all: %v)", i+1, r, got[r], action, done)
			}
		}
	}

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for name, change := range map[string]func(*jetstream.StreamConfig){
		"KV_zoea_leases": func(c *jetstream.StreamConfig) {
			c.RePublish = &jetstream.RePublish{Source: "$KV.zoea_leases.forge", Destination: "zoea.bcast"}
		},
		"ZOEA_MESSAGES":  func(c *jetstream.StreamConfig) { c.MaxMsgs = 1 },
		"KV_zoea_status": func(c *jetstream.StreamConfig) { c.Subjects = append(c.Subjects, "zoea.events.>") },
	} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		change(&cfg)
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatalf("tamper with %s: %v", name, err)
		}
	}
	opts.LeaseTTL = 5 * time.Second
	done, err := swarmbus.Provision(ctx, srv.ClientURL(), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := actions(done)
	for _, r := range []string{"stream ZOEA_MESSAGES", "bucket zoea_leases", "bucket zoea_status"} {
		if got[r] != swarmbus.ActionUpdated {
			t.Errorf("after tampering: %s %q, want updated (all: %v)", r, got[r], done)
		}
	}
	leases, _ := js.Stream(ctx, "KV_zoea_leases")
	if c := leases.CachedInfo().Config; c.RePublish != nil || c.MaxAge != 5*time.Second {
		t.Errorf("lease bucket after provisioning: republish %+v, TTL %s; want none and 5s", c.RePublish, c.MaxAge)
	}
	status, _ := js.Stream(ctx, "KV_zoea_status")
	if c := status.CachedInfo().Config; len(c.Subjects) != 1 {
		t.Errorf("status bucket subjects after provisioning: %v", c.Subjects)
	}
	messages, _ := js.Stream(ctx, "ZOEA_MESSAGES")
	if c := messages.CachedInfo().Config; c.MaxMsgs != -1 {
		t.Errorf("message stream max_msgs after provisioning: %d", c.MaxMsgs)
	}
}

// Bad settings are refused with a sentence before anything is sent.
func TestProvisionRejectsBadSettings(t *testing.T) {
	ctx := context.Background()
	for _, o := range []swarmbus.ProvisionOptions{{Part: "memory"}, {Replicas: -1}, {LeaseTTL: 500 * time.Millisecond}, {Swarm: "Alpha"}} {
		if _, err := swarmbus.Provision(ctx, "nats://127.0.0.1:1", o); err == nil {
			t.Errorf("Provision(%+v) accepted", o)
		} else {
			t.Logf("%+v: %v", o, err)
		}
	}
}

// On a NATS with Zoea's permissions, a bus whose delivery consumer differs from the provisioned one (here: its own
// ack wait) may not change it, and says so at once; a provisioning user missing a permission is told which.
func TestNotProvisionedIsSaidAtOnce(t *testing.T) {
	host, _ := authServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	provisionAs(t, ctx, host, "", 0)
	bus, err := connectAs(ctx, host, "bus", swarmbus.Options{Name: "bus"})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	start := time.Now()
	err = bus.ConsumeMessages(ctx, swarmbus.ConsumerOptions{AckWait: 7 * time.Second}, func(context.Context, swarmbus.Delivery) error { return nil })
	if !errors.Is(err, swarmbus.ErrNotProvisioned) || !strings.Contains(err.Error(), "zoea nats provision") || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("ConsumeMessages with another ack wait: %v, want ErrNotProvisioned saying the consumer differs", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to say so", d)
	}

	// R3 on a single server is refused by the server, and said at once; the runners' provisioning user cannot
	// provision the bus's part.
	_, err = swarmbus.Provision(ctx, fmt.Sprintf("nats://%s:%s-secret@%s", swarmbus.RoleProvisionRunner, swarmbus.RoleProvisionRunner, host),
		swarmbus.ProvisionOptions{Part: swarmbus.RoleRunner, Replicas: 3, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "NATS refused") {
		t.Errorf("provisioning R3 on a single server: %v, want the server's refusal at once", err)
	}
	_, err = swarmbus.Provision(ctx, fmt.Sprintf("nats://%s:%s-secret@%s", swarmbus.RoleProvisionRunner, swarmbus.RoleProvisionRunner, host),
		swarmbus.ProvisionOptions{Part: swarmbus.RoleBus, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "PermissionsFor") {
		t.Errorf("provision-runner provisioning the bus's part: %v, want a refusal naming PermissionsFor", err)
	} else {
		t.Log(err)
	}
}

// A message in the stream on a subject that is not the swarm's (the server stores a push delivery under its original
// subject, so one on a NATS without accounts can carry a KV value there) is terminated unread: never taken for a
// direct message, even one whose subject's tail spells its mysis id.
func TestForeignSubjectsAreNotDelivered(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	bus := connect(t, srv.ClientURL(), swarmbus.Options{Name: "bus"})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// "$KV.zoea_leases.m1" minus the length of "zoea.direct." is "ses.m1".
	if _, err := js.Publish(ctx, "$KV.zoea_leases.m1", []byte(`{"id":"forged","mysis_id":"ses.m1","content":"forged"}`)); err != nil {
		t.Fatal(err)
	}
	// Listening on the deliver subject too: the server hands the delivery to the stream's subscription and to this
	// one in the same fan-out, so once it arrives here the stream has queued it ahead of the marker below.
	sub, err := nc.SubscribeSync("zoea.bcast")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if _, err := js.CreateOrUpdateConsumer(ctx, "KV_zoea_leases", jetstream.ConsumerConfig{Name: "p", DeliverSubject: "zoea.bcast",
		FilterSubject: "$KV.zoea_leases.m1", AckPolicy: jetstream.AckNonePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsgWithContext(ctx); err != nil {
		t.Fatalf("the push consumer delivered nothing: %v", err)
	}
	c := newCollector()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = bus.ConsumeMessages(cctx, swarmbus.ConsumerOptions{}, c.handle) }()
	c.nothingBefore(t, bus)
}
