package swarmbus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// authServer starts NATS with one user per Zoea service, each with swarmbus.Permissions, and returns its address
// and the permission violations it logs.
func authServer(t *testing.T) (host string, v *violations) {
	t.Helper()
	return authServerFor(t, swarmbus.Permissions)
}

// authServerFor starts NATS with one user per entry of perms.
func authServerFor(t *testing.T, perms map[string]swarmbus.SubjectPermissions) (host string, v *violations) {
	t.Helper()
	var users []natstest.User
	for name, p := range perms {
		users = append(users, natstest.User{Name: name, Password: name + "-secret",
			PublishAllow: p.PublishAllow, PublishDeny: p.PublishDeny, SubscribeAllow: p.SubscribeAllow})
	}
	v = &violations{}
	srv := natstest.StartWith(t, natstest.Options{Users: users, Log: v.record})
	return strings.TrimPrefix(srv.ClientURL(), "nats://"), v
}

// unprovisioned ends the connection names of the services started before provisioning.
const unprovisioned = "-unprovisioned"

// violations records the permission violations a NATS server logs ("Publish Violation", "Subscription
// Violation"): a legitimate operation of a service must cause none, or the allow list misses a subject it needs.
type violations struct {
	mu      sync.Mutex
	seen    []string
	changed chan struct{} // closed and replaced on every recorded line
}

func (v *violations) record(line string) {
	if strings.Contains(line, "Violation") {
		v.mu.Lock()
		v.seen = append(v.seen, line)
		if v.changed != nil {
			close(v.changed)
			v.changed = nil
		}
		v.mu.Unlock()
	}
}

// awaitEach waits until, for each of subs, a recorded violation contains it. The server answers a refused publish
// with -ERR and logs it separately, so a client can see its refusal before the log line is written.
func (v *violations) awaitEach(t *testing.T, ctx context.Context, subs ...string) {
	t.Helper()
	for {
		v.mu.Lock()
		missing := ""
		for _, sub := range subs {
			if !slices.ContainsFunc(v.seen, func(line string) bool { return strings.Contains(line, sub) }) {
				missing = sub
				break
			}
		}
		if missing == "" {
			v.mu.Unlock()
			return
		}
		if v.changed == nil {
			v.changed = make(chan struct{})
		}
		ch := v.changed
		v.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no permission violation containing %q was logged: %v", missing, ctx.Err())
		}
	}
}

func (v *violations) take() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.seen
	v.seen = nil
	return out
}

// provisionAs provisions swarm on host as its two provisioning users (password <user>-secret), with leaseTTL.
func provisionAs(t *testing.T, ctx context.Context, host, swarm string, leaseTTL time.Duration) []swarmbus.Provisioned {
	t.Helper()
	var all []swarmbus.Provisioned
	for part, user := range map[string]string{swarmbus.RoleBus: swarmbus.RoleProvisionBus, swarmbus.RoleRunner: swarmbus.RoleProvisionRunner} {
		done, err := swarmbus.Provision(ctx, fmt.Sprintf("nats://%s:%s-secret@%s", user, user, host), swarmbus.ProvisionOptions{
			Part: part, Swarm: swarm, LeaseTTL: leaseTTL, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("provision %s as %s: %v", part, user, err)
		}
		all = append(all, done...)
	}
	return all
}

func connectAs(ctx context.Context, host, user string, opts swarmbus.Options) (*swarmbus.Bus, error) {
	url := "nats://" + host
	if user != "" {
		url = fmt.Sprintf("nats://%s:%s-secret@%s", user, user, host)
		if opts.Role == "" {
			opts.Role = user
		}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return swarmbus.Connect(ctx, url, opts)
}

// Against a server with the project's authorization (swarmbus.Permissions, what deploy/nats/nats.conf holds):
// no credentials are refused with a sentence saying what to set; every operation the bus and a runner perform
// works and makes the server log no permission violation; and the runner's user cannot break the bus — it cannot
// publish broadcasts or direct messages, shrink or re-subject the message stream, delete the delivery consumer,
// read a queued direct message (by stream get, by its own consumer, or by listening on the bus's replies), create a
// stream (one capturing events, say), or purge or delete the stream.
func TestNATSAuthorization(t *testing.T) {
	host, viol := authServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	short, scancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := connectAs(short, host, "", swarmbus.Options{Name: "anonymous"})
	scancel()
	if err == nil || !strings.Contains(err.Error(), "ZOEA_NATS_CREDS") {
		t.Fatalf("anonymous connect: %v, want a refusal naming the settings", err)
	}

	// Before provisioning, each service finds its resources missing, may not create them, and says so at once
	// (not when its Connect deadline ends), naming the command that would.
	for _, user := range []string{"bus", "runner"} {
		start := time.Now()
		_, err := connectAs(ctx, host, user, swarmbus.Options{Name: user + unprovisioned})
		if !errors.Is(err, swarmbus.ErrNotProvisioned) || !strings.Contains(err.Error(), "zoea nats provision") {
			t.Fatalf("%s on an unprovisioned NATS: %v, want ErrNotProvisioned naming zoea nats provision", user, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %s to say it is not provisioned", user, d)
		}
	}
	// The refused creates. The server may log them after the client saw its refusal, so later checks leave out
	// these connections' lines (named apart) rather than trust that the log has caught up.
	viol.awaitEach(t, ctx, ":go:bus"+unprovisioned, ":go:runner"+unprovisioned)
	provisionAs(t, ctx, host, "", 3*time.Second)

	// A runner may start before the bus: it needs nothing of the bus's.
	runner, err := connectAs(ctx, host, "runner", swarmbus.Options{Name: "runner", LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatalf("runner credentials: %v", err)
	}
	defer runner.Close()
	bus, err := connectAs(ctx, host, "bus", swarmbus.Options{Name: "bus"})
	if err != nil {
		t.Fatalf("bus credentials: %v", err)
	}
	defer bus.Close()
	if err := runner.Ready(ctx); err != nil {
		t.Fatalf("runner not ready: %v", err)
	}
	if err := bus.Ready(ctx); err != nil {
		t.Fatalf("bus not ready: %v", err)
	}
	if _, err := bus.Leases("bus"); err == nil {
		t.Error("a bus with Role bus handed out leases: they are the runners'")
	}

	everyLegitimateOperation(t, ctx, bus, runner)
	if v := slices.DeleteFunc(viol.take(), func(line string) bool { return strings.Contains(line, unprovisioned) }); len(v) > 0 {
		t.Fatalf("the services' own operations hit permission violations (the allow lists miss a subject):\n%s", strings.Join(v, "\n"))
	}

	// A queued direct message (the bus is not delivering now) for the attacks to go after.
	if _, err := bus.PublishDirect(ctx, swarmbus.Direct{ID: "queued", MysisID: "m1", Content: "the password is swordfish"}); err != nil {
		t.Fatalf("bus direct: %v", err)
	}
	names := runner.Names()

	// The runner user, as raw NATS with JetStream, on its own inbox prefix (the only replies it may receive).
	nc, err := nats.Connect(fmt.Sprintf("nats://runner:runner-secret@%s", host),
		nats.CustomInboxPrefix(swarmbus.InboxPrefix(names, swarmbus.RoleRunner)), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	attempt := func(what string, f func(context.Context) error) {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, time.Second)
		defer acancel()
		if err := f(actx); err == nil {
			t.Errorf("the runner's user could %s", what)
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = runner.PublishBroadcast(pctx, swarmbus.Broadcast{ID: "forged", Content: "sell everything"})
	pcancel()
	if err == nil {
		t.Error("a runner published a broadcast")
	}
	pctx, pcancel = context.WithTimeout(ctx, 2*time.Second)
	_, err = runner.PublishDirect(pctx, swarmbus.Direct{ID: "forged", MysisID: "m1", Content: "jump"})
	pcancel()
	if err == nil {
		t.Error("a runner published a direct message")
	}
	busCfg := streamConfig(t, ctx, host, names.Stream)
	attempt("set the message stream's MaxMsgs to 1", func(ctx context.Context) error {
		cfg := busCfg
		cfg.MaxMsgs = 1
		_, err := js.UpdateStream(ctx, cfg)
		return err
	})
	attempt("add subjects to the message stream", func(ctx context.Context) error {
		cfg := busCfg
		cfg.Subjects = append(slices.Clone(cfg.Subjects), names.EventPrefix+">")
		_, err := js.UpdateStream(ctx, cfg)
		return err
	})
	attempt("delete the delivery consumer", func(ctx context.Context) error {
		return js.DeleteConsumer(ctx, names.Stream, names.Consumer)
	})
	attempt("read a queued direct message with a stream get", func(ctx context.Context) error {
		s, err := js.Stream(ctx, names.Stream)
		if err != nil {
			return err
		}
		_, err = s.GetLastMsgForSubject(ctx, names.DirectPrefix+"m1")
		return err
	})
	attempt("read a queued direct message with a direct get", func(ctx context.Context) error {
		_, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+names.Stream+"."+names.DirectPrefix+"m1", nil)
		return err
	})
	attempt("read a queued direct message through a consumer of its own", func(ctx context.Context) error {
		c, err := js.OrderedConsumer(ctx, names.Stream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return err
		}
		_, err = c.Next(jetstream.FetchMaxWait(time.Second))
		return err
	})
	attempt("read a queued direct message through the delivery consumer", func(ctx context.Context) error {
		c, err := js.Consumer(ctx, names.Stream, names.Consumer)
		if err != nil {
			return err
		}
		_, err = c.Next(jetstream.FetchMaxWait(time.Second))
		return err
	})
	attempt("create a stream on the events", func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CAPTURE", Subjects: []string{names.EventPrefix + ">"}})
		return err
	})
	attempt("purge the message stream", func(ctx context.Context) error {
		s, err := js.Stream(ctx, names.Stream)
		if err != nil {
			return err
		}
		return s.Purge(ctx)
	})
	attempt("delete the message stream", func(ctx context.Context) error {
		return js.DeleteStream(ctx, names.Stream)
	})
	// Listening on the bus's replies (where its pulled messages arrive) or on every inbox is refused.
	for _, subj := range []string{swarmbus.InboxPrefix(names, swarmbus.RoleBus) + ".>", "_INBOX.>", ">"} {
		sub, err := nc.SubscribeSync(subj)
		if err == nil {
			err = nc.FlushTimeout(2 * time.Second)
		}
		if err == nil && !errors.Is(nc.LastError(), nats.ErrPermissionViolation) {
			t.Errorf("the runner's user could subscribe to %s", subj)
		}
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}

	// Nothing changed: the stream keeps its config, the consumer is there and delivers the queued message once.
	if got := streamConfig(t, ctx, host, names.Stream); got.MaxMsgs != busCfg.MaxMsgs || !slices.Equal(got.Subjects, busCfg.Subjects) {
		t.Errorf("message stream config changed: MaxMsgs %d subjects %v, was %d %v", got.MaxMsgs, got.Subjects, busCfg.MaxMsgs, busCfg.Subjects)
	}
	c := newCollector()
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() { _ = bus.ConsumeMessages(cctx, swarmbus.ConsumerOptions{}, c.handle) }()
	got := c.wait(t, 1, 20*time.Second)
	if got[0].Direct == nil || got[0].Direct.ID != "queued" {
		t.Errorf("after the attempts the bus delivered %+v, want the queued direct message", got[0])
	}
}

// everyLegitimateOperation runs every swarmbus operation the bus and the runner services perform, each on the
// connection of the service that performs it.
func everyLegitimateOperation(t *testing.T, ctx context.Context, bus, runner *swarmbus.Bus) {
	t.Helper()
	// Runner: wakes (its own and from the bus), leases, statuses, events.
	wakes := make(chan swarmbus.Wake, 16)
	wsub, err := runner.SubscribeWakes(ctx, func(_ context.Context, w swarmbus.Wake) { wakes <- w })
	if err != nil {
		t.Fatalf("runner subscribe wakes: %v", err)
	}
	defer wsub.Stop()
	events := make(chan *busv1.Event, 16)
	esub, err := bus.SubscribeEvents(ctx, swarmbus.EventFilter{}, func(_ context.Context, ev *busv1.Event) { events <- ev })
	if err != nil {
		t.Fatalf("bus subscribe events: %v", err)
	}
	defer esub.Stop()

	if err := runner.PublishWake(ctx, "m1", swarmbus.WakeStart); err != nil {
		t.Errorf("runner wake: %v", err)
	}
	if err := bus.PublishWakes(ctx, []string{"m1", "m2"}, swarmbus.WakeBroadcast); err != nil {
		t.Errorf("bus wakes: %v", err)
	}
	for range 3 {
		select {
		case <-wakes:
		case <-ctx.Done():
			t.Fatal("the runner did not hear 3 wakes")
		}
	}
	leases, err := runner.Leases("r1")
	if err != nil {
		t.Fatal(err)
	}
	leaseEvents := make(chan swarmbus.LeaseEvent, 16)
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	go func() { _ = leases.Watch(lctx, func(e swarmbus.LeaseEvent) { leaseEvents <- e }) }()
	if ok, err := leases.Acquire(ctx, "m1"); err != nil || !ok {
		t.Errorf("runner lease: %v %v", ok, err)
	}
	select {
	case <-leaseEvents:
	case <-ctx.Done():
		t.Fatal("the lease watch saw nothing")
	}
	if err := leases.Renew(ctx, "m1"); err != nil {
		t.Errorf("renew: %v", err)
	}
	if lost, err := leases.RenewAll(ctx); err != nil || len(lost) > 0 {
		t.Errorf("renew all: %v %v", lost, err)
	}
	if owner, err := leases.Owner(ctx, "m1"); err != nil || owner != "r1" {
		t.Errorf("owner: %q %v", owner, err)
	}
	if owners, err := leases.Owners(ctx); err != nil || owners["m1"] != "r1" {
		t.Errorf("owners: %v %v", owners, err)
	}
	if err := leases.Release(ctx, "m1"); err != nil {
		t.Errorf("release: %v", err)
	}
	statuses := runner.Statuses()
	synced := make(chan struct{}, 4)
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	go func() {
		_ = statuses.Watch(sctx, func(swarmbus.StatusEvent) {}, func() { synced <- struct{}{} })
	}()
	if err := statuses.Put(ctx, swarmbus.Status{MysisID: "m1", State: "running"}); err != nil {
		t.Errorf("status put: %v", err)
	}
	if st, err := statuses.Get(ctx, "m1"); err != nil || st.State != "running" {
		t.Errorf("status get: %+v %v", st, err)
	}
	if all, err := statuses.List(ctx); err != nil || len(all) != 1 {
		t.Errorf("status list: %v %v", all, err)
	}
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("the status watch never synced")
	}
	if err := statuses.Delete(ctx, "m1"); err != nil {
		t.Errorf("status delete: %v", err)
	}
	if err := runner.PublishEvent(ctx, &busv1.Event{MysisId: "m1", Kind: busv1.EventKind_EVENT_KIND_STATE_CHANGED}); err != nil {
		t.Errorf("runner event: %v", err)
	}
	select {
	case <-events:
	case <-ctx.Done():
		t.Fatal("the bus heard no event")
	}

	// Bus: broadcasts and direct messages into the stream, delivered and acknowledged through the consumer.
	if _, err := bus.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "real", Content: "mine iron"}); err != nil {
		t.Fatalf("bus broadcast: %v", err)
	}
	if _, err := bus.PublishDirect(ctx, swarmbus.Direct{ID: "d1", MysisID: "m1", Content: "dock"}); err != nil {
		t.Fatalf("bus direct: %v", err)
	}
	c := newCollector()
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = bus.ConsumeMessages(cctx, swarmbus.ConsumerOptions{}, c.handle)
	}()
	c.wait(t, 2, 20*time.Second)
	if err := bus.DeliveryReady(ctx); err != nil {
		t.Errorf("delivery not ready while consuming: %v", err)
	}
	ccancel()
	<-done
}

// streamConfig reads a stream's config as an administrator would (a connection of its own with the bus's user,
// which may read the message stream).
func streamConfig(t *testing.T, ctx context.Context, host, stream string) jetstream.StreamConfig {
	t.Helper()
	nc, err := nats.Connect(fmt.Sprintf("nats://bus:bus-secret@%s", host), nats.CustomInboxPrefix(swarmbus.InboxPrefix(swarmbus.Names{Broadcast: "zoea.bcast"}, swarmbus.RoleBus)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return s.CachedInfo().Config
}

// A named swarm's services work with swarmbus.PermissionsFor(name), and those permissions keep them off the default
// swarm's subjects and buckets.
func TestNATSAuthorizationOfANamedSwarm(t *testing.T) {
	perms, err := swarmbus.PermissionsFor("alpha")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := authServerFor(t, perms)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	provisionAs(t, ctx, host, "alpha", 0)
	bus, err := connectAs(ctx, host, "bus", swarmbus.Options{Name: "bus", Swarm: "alpha"})
	if err != nil {
		t.Fatalf("bus credentials in swarm alpha: %v", err)
	}
	defer bus.Close()
	runner, err := connectAs(ctx, host, "runner", swarmbus.Options{Name: "runner", Swarm: "alpha"})
	if err != nil {
		t.Fatalf("runner credentials in swarm alpha: %v", err)
	}
	defer runner.Close()
	if _, err := bus.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "b1", Content: "mine iron"}); err != nil {
		t.Fatalf("bus broadcast in swarm alpha: %v", err)
	}
	if err := runner.PublishWake(ctx, "m1", swarmbus.WakeStart); err != nil {
		t.Errorf("runner wake in swarm alpha: %v", err)
	}
	leases, err := runner.Leases("r1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := leases.Acquire(ctx, "m1"); err != nil || !ok {
		t.Errorf("runner lease in swarm alpha: %v %v", ok, err)
	}
	if err := runner.Statuses().Put(ctx, swarmbus.Status{MysisID: "m1", State: "running"}); err != nil {
		t.Errorf("runner status in swarm alpha: %v", err)
	}

	// The same credentials in the default swarm: refused at Connect (the allow lists name swarm alpha's stream and
	// buckets only), at once and with a sentence saying what to give the user, for the bus and the runner alike.
	for _, user := range []string{"bus", "runner"} {
		cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
		other, err := connectAs(cctx, host, user, swarmbus.Options{Name: user + "-default"})
		ccancel()
		if err == nil {
			other.Close()
			t.Errorf("swarm alpha's %s user connected to the default swarm", user)
			continue
		}
		if !strings.Contains(err.Error(), "PermissionsFor") || !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("swarm alpha's %s user in the default swarm: %v, want a permission refusal naming PermissionsFor", user, err)
		}
	}
}
