package swarmbus_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// The default swarm keeps today's names, so deployments without ZOEA_SWARM find their stream and buckets; a named
// swarm gets its own of each.
func TestNamesFor(t *testing.T) {
	def, err := swarmbus.NamesFor("")
	if err != nil {
		t.Fatal(err)
	}
	want := swarmbus.Names{Stream: "ZOEA_MESSAGES", Consumer: "bus-delivery", LeaseBucket: "zoea_leases", StatusBucket: "zoea_status",
		Broadcast: "zoea.bcast", DirectPrefix: "zoea.direct.", WakePrefix: "zoea.wake.", EventPrefix: "zoea.events."}
	if def != want {
		t.Fatalf("default names = %+v, want %+v", def, want)
	}
	alpha, err := swarmbus.NamesFor("alpha-2")
	if err != nil {
		t.Fatal(err)
	}
	want = swarmbus.Names{Swarm: "alpha-2", Stream: "ZOEA_ALPHA-2_MESSAGES", Consumer: "bus-delivery", LeaseBucket: "zoea_alpha-2_leases",
		StatusBucket: "zoea_alpha-2_status", Broadcast: "zoea_alpha-2.bcast", DirectPrefix: "zoea_alpha-2.direct.",
		WakePrefix: "zoea_alpha-2.wake.", EventPrefix: "zoea_alpha-2.events."}
	if alpha != want {
		t.Fatalf("names of alpha-2 = %+v, want %+v", alpha, want)
	}
	// Names that look like the default's subject tokens are no problem: a named swarm's subjects never start
	// with the token "zoea".
	for _, swarm := range []string{"bcast", "direct", "events", "wake", "leases", "messages", "0", strings.Repeat("z", swarmbus.MaxSwarmLen)} {
		n, err := swarmbus.NamesFor(swarm)
		if err != nil {
			t.Errorf("NamesFor(%q): %v", swarm, err)
			continue
		}
		for _, subj := range []string{n.Broadcast, n.DirectPrefix, n.WakePrefix, n.EventPrefix} {
			if strings.HasPrefix(subj, "zoea.") {
				t.Errorf("swarm %q subject %q shares the default swarm's first token", swarm, subj)
			}
		}
	}

	for _, bad := range []string{"Alpha", "a.b", "a*", "a>", "a b", "a_b", "-a", "ä", strings.Repeat("z", swarmbus.MaxSwarmLen+1)} {
		_, err := swarmbus.NamesFor(bad)
		if !errors.Is(err, swarmbus.ErrInvalidSwarm) {
			t.Errorf("NamesFor(%q) = %v, want ErrInvalidSwarm", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), "ZOEA_SWARM") {
			t.Errorf("error for %q does not name the variable: %v", bad, err)
		}
	}
}

func TestConnectRejectsABadSwarmName(t *testing.T) {
	srv := natstest.Start(t)
	_, err := swarmbus.Connect(testCtx(t), srv.ClientURL(), swarmbus.Options{Logger: quietLogger(), Swarm: "My.Swarm"})
	if !errors.Is(err, swarmbus.ErrInvalidSwarm) || !strings.Contains(err.Error(), "ZOEA_SWARM") {
		t.Fatalf("Connect with swarm %q: %v, want an error naming ZOEA_SWARM", "My.Swarm", err)
	}
}

// Two swarms on one NATS server each deliver only their own broadcasts and direct messages (the bug: they shared the
// stream and its delivery consumer, so one swarm's bus wrote the other's messages into its own memory service); two
// buses of the same swarm share the stream and its consumer.
func TestSwarmsOnOneServerDeliverOnlyTheirOwnMessages(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	swarms := []string{"", "alpha", "beta"}
	// Two buses per swarm: the first publishes, both consume.
	buses := map[string][2]*swarmbus.Bus{}
	for _, s := range swarms {
		buses[s] = [2]*swarmbus.Bus{connect(t, srv.ClientURL(), swarmbus.Options{Swarm: s}), connect(t, srv.ClientURL(), swarmbus.Options{Swarm: s})}
	}
	label := func(s string) string {
		if s == "" {
			return "default"
		}
		return s
	}
	for _, s := range swarms {
		pub := buses[s][0]
		if _, err := pub.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "b-" + label(s), Content: "mission of " + label(s)}); err != nil {
			t.Fatal(err)
		}
		// The same message id in every swarm: deduplication is per swarm too.
		if _, err := pub.PublishDirect(ctx, swarmbus.Direct{ID: "same-id", MysisID: "m1", Content: "hello from " + label(s)}); err != nil {
			t.Fatal(err)
		}
	}
	// Each swarm's sentinel is published after every other message of every swarm; a swarm's consumer delivers in
	// stream order, so once it has handled its sentinel, anything that reached its stream has been handled.
	for _, s := range swarms {
		if _, err := buses[s][0].PublishBroadcast(ctx, swarmbus.Broadcast{ID: "sentinel", Content: "sentinel"}); err != nil {
			t.Fatal(err)
		}
	}

	type handled struct {
		mu       sync.Mutex
		got      []string
		sentinel chan struct{}
	}
	got := map[string]*handled{}
	for _, s := range swarms {
		h := &handled{sentinel: make(chan struct{})}
		got[s] = h
		for _, b := range buses[s] {
			consume(t, b, swarmbus.ConsumerOptions{}, func(_ context.Context, d swarmbus.Delivery) error {
				h.mu.Lock()
				defer h.mu.Unlock()
				switch {
				case d.Broadcast != nil && d.Broadcast.ID == "sentinel":
					close(h.sentinel)
				case d.Broadcast != nil:
					h.got = append(h.got, d.Broadcast.Content)
				default:
					h.got = append(h.got, d.Direct.MysisID+": "+d.Direct.Content)
				}
				return nil
			})
		}
	}
	for _, s := range swarms {
		h := got[s]
		select {
		case <-h.sentinel:
		case <-ctx.Done():
			t.Fatalf("swarm %s never delivered its sentinel", label(s))
		}
		h.mu.Lock()
		want := []string{"mission of " + label(s), "m1: hello from " + label(s)}
		if !slices.Equal(h.got, want) {
			t.Errorf("swarm %s delivered %q, want exactly %q", label(s), h.got, want)
		}
		h.mu.Unlock()
	}

	// Each swarm has its own stream, with the one delivery consumer both of its buses share.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range swarms {
		n := buses[s][0].Names()
		stream, err := js.Stream(ctx, n.Stream)
		if err != nil {
			t.Fatalf("stream of swarm %s: %v", label(s), err)
		}
		var consumers []string
		for name := range stream.ConsumerNames(ctx).Name() {
			consumers = append(consumers, name)
		}
		if !slices.Equal(consumers, []string{swarmbus.DeliveryConsumer}) {
			t.Errorf("stream %s has consumers %v, want only %s", n.Stream, consumers, swarmbus.DeliveryConsumer)
		}
	}
}

// Wakes, leases and statuses are per swarm as well.
func TestSwarmsOnOneServerKeepWakesLeasesAndStatusesApart(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	alpha := connect(t, srv.ClientURL(), swarmbus.Options{Swarm: "alpha", LeaseTTL: time.Minute})
	alpha2 := connect(t, srv.ClientURL(), swarmbus.Options{Swarm: "alpha"})
	beta := connect(t, srv.ClientURL(), swarmbus.Options{Swarm: "beta", LeaseTTL: 30 * time.Second})
	def := connect(t, srv.ClientURL(), swarmbus.Options{})

	// Leases: the same mysis id is free in each swarm, held in its own; each swarm keeps its own TTL.
	la, _ := alpha.Leases("a")
	la2, _ := alpha2.Leases("a2")
	lb, _ := beta.Leases("b")
	ld, _ := def.Leases("d")
	for name, l := range map[string]*swarmbus.Leases{"alpha": la, "beta": lb, "default": ld} {
		if ok, err := l.Acquire(ctx, "m1"); err != nil || !ok {
			t.Fatalf("%s: acquire m1: %v %v (another swarm's lease must not count)", name, ok, err)
		}
	}
	if ok, err := la2.Acquire(ctx, "m1"); err != nil || ok {
		t.Fatalf("a second holder in the same swarm acquired a held lease: %v %v", ok, err)
	}
	if owner, _ := la2.Owner(ctx, "m1"); owner != "a" {
		t.Fatalf("owner in swarm alpha = %q, want a", owner)
	}
	if alpha.LeaseTTL() != time.Minute || alpha2.LeaseTTL() != time.Minute || beta.LeaseTTL() != 30*time.Second || def.LeaseTTL() != swarmbus.DefaultLeaseTTL {
		t.Fatalf("lease TTLs alpha %v, alpha2 %v, beta %v, default %v", alpha.LeaseTTL(), alpha2.LeaseTTL(), beta.LeaseTTL(), def.LeaseTTL())
	}

	// Statuses: written in alpha, readable in alpha only.
	if err := alpha.Statuses().Put(ctx, swarmbus.Status{MysisID: "m1", State: "running"}); err != nil {
		t.Fatal(err)
	}
	if st, err := alpha2.Statuses().Get(ctx, "m1"); err != nil || st.State != "running" {
		t.Fatalf("status in the same swarm: %+v %v", st, err)
	}
	for name, b := range map[string]*swarmbus.Bus{"beta": beta, "default": def} {
		if _, err := b.Statuses().Get(ctx, "m1"); !errors.Is(err, swarmbus.ErrStatusNotFound) {
			t.Fatalf("%s sees alpha's status: %v", name, err)
		}
	}

	// Wakes: every swarm's subscriber hears its own swarm's wakes only. PublishWakes returns once the server has
	// routed the wakes, and the server delivers to one subscriber in routing order, so a subscriber that receives
	// its own swarm's later wake without the other swarm's earlier one never gets that one.
	type rec struct {
		swarm string
		wake  swarmbus.Wake
	}
	wakes := make(chan rec, 10)
	for name, b := range map[string]*swarmbus.Bus{"alpha": alpha2, "beta": beta, "default": def} {
		if _, err := b.SubscribeWakes(ctx, func(_ context.Context, w swarmbus.Wake) { wakes <- rec{name, w} }); err != nil {
			t.Fatal(err)
		}
	}
	if err := alpha.PublishWakes(ctx, []string{"from-alpha"}, swarmbus.WakeStart); err != nil {
		t.Fatal(err)
	}
	if err := beta.PublishWakes(ctx, []string{"from-beta"}, swarmbus.WakeStart); err != nil {
		t.Fatal(err)
	}
	if err := def.PublishWakes(ctx, []string{"from-default"}, swarmbus.WakeStart); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for len(seen) < 3 {
		select {
		case r := <-wakes:
			if want := "from-" + r.swarm; r.wake.MysisID != want {
				t.Fatalf("swarm %s heard the wake of %s", r.swarm, r.wake.MysisID)
			}
			seen[r.swarm] = r.wake.MysisID
		case <-ctx.Done():
			t.Fatalf("wakes heard: %v", seen)
		}
	}
}

// PermissionsFor confines each service to its swarm's subjects and buckets; the default swarm's are Permissions.
func TestPermissionsFor(t *testing.T) {
	def, err := swarmbus.PermissionsFor("")
	if err != nil {
		t.Fatal(err)
	}
	for svc, p := range swarmbus.Permissions {
		if !slices.Equal(def[svc].PublishAllow, p.PublishAllow) || !slices.Equal(def[svc].SubscribeAllow, p.SubscribeAllow) || !slices.Equal(def[svc].PublishDeny, p.PublishDeny) {
			t.Errorf("%s: PermissionsFor(\"\") = %+v, Permissions = %+v", svc, def[svc], p)
		}
	}
	alpha, err := swarmbus.PermissionsFor("alpha")
	if err != nil {
		t.Fatal(err)
	}
	for svc, p := range alpha {
		for _, subj := range slices.Concat(p.PublishAllow, p.SubscribeAllow) {
			if strings.HasPrefix(subj, "zoea.") || strings.Contains(subj, "zoea_leases") || strings.Contains(subj, "zoea_status") ||
				strings.Contains(subj, "ZOEA_MESSAGES") || strings.HasPrefix(subj, "_INBOX.zoea.") {
				t.Errorf("%s of swarm alpha may use the default swarm's %q", svc, subj)
			}
		}
	}
	if !slices.Contains(alpha["bus"].PublishAllow, "zoea_alpha.bcast") || !slices.Contains(alpha["runner"].SubscribeAllow, "zoea_alpha.wake.>") ||
		slices.Contains(alpha["runner"].PublishAllow, "zoea_alpha.bcast") ||
		!slices.Contains(alpha["bus"].PublishAllow, "$JS.API.CONSUMER.MSG.NEXT.ZOEA_ALPHA_MESSAGES.bus-delivery") {
		t.Errorf("swarm alpha permissions = %+v", alpha)
	}
	// Allow lists only: every JetStream API or ack subject names its stream (no "$JS.API.>"), and no deny list is
	// needed.
	for _, perms := range []map[string]swarmbus.SubjectPermissions{def, alpha} {
		for svc, p := range perms {
			if len(p.PublishDeny) > 0 {
				t.Errorf("%s has a deny list %v: allow exactly what it needs instead", svc, p.PublishDeny)
			}
			for _, subj := range p.PublishAllow {
				if rest, ok := strings.CutPrefix(subj, "$JS."); ok && (strings.HasPrefix(rest, ">") || strings.HasPrefix(rest, "API.>") ||
					strings.HasPrefix(rest, "ACK.>") || strings.HasPrefix(rest, "API.STREAM.>") || strings.HasPrefix(rest, "API.CONSUMER.>")) {
					t.Errorf("%s may publish %q: JetStream subjects must name their stream", svc, subj)
				}
			}
		}
	}
	if _, err := swarmbus.PermissionsFor("A"); !errors.Is(err, swarmbus.ErrInvalidSwarm) {
		t.Errorf("PermissionsFor(%q) = %v, want ErrInvalidSwarm", "A", err)
	}
}
