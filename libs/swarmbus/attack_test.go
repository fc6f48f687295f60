package swarmbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// shippedConf is the NATS config compose and the dev overlay run (the Helm values hold the same accounts and users).
var shippedConf = filepath.Join("..", "..", "deploy", "nats", "nats.conf")

// shippedPassword is the password each user of shippedConf gets in these tests, through the variable it reads.
func shippedPassword(role string) string { return role + "-secret" }

func shippedEnv() []string {
	var env []string
	for role := range swarmbus.Permissions {
		env = append(env, "ZOEA_NATS_"+strings.ToUpper(strings.ReplaceAll(role, "-", "_"))+"_PASSWORD="+shippedPassword(role))
	}
	return env
}

// Least privilege proven by attack: against deploy/nats/nats.conf as shipped (its passwords supplied), on one server
// and on a 3-node cluster, provisioned by `zoea nats provision`'s Provision, every attack known on the bus's and the
// runners' credentials is tried as each of the two service users, and each must be refused or come to nothing:
// changing a stream's config (a republish, a source, a subject, a limit), mirroring or sourcing another stream,
// creating, deleting or purging streams, creating consumers on another stream or filtered on its subjects, push
// consumers whose deliver subject is another stream's subject, direct gets across streams, and the requests whose
// reply subject is another stream's subject (the server answers a direct get, a publish or a pull by publishing
// there, so a runner's own KV value could land in the message stream as a commander broadcast). Then the streams and
// the consumer still have their provisioned configs, no bucket holds a foreign subject, the lease a bus tried to
// write is free, and the bus delivers exactly the queued message and a marker, with no sequence in between.
func TestNATSAttacks(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		v := &violations{}
		srv := natstest.StartWith(t, natstest.Options{ConfigFile: shippedConf, Env: shippedEnv(), Log: v.record})
		attackShippedConfig(t, srv.ClientURL(), 1, v)
	})
	t.Run("cluster", func(t *testing.T) {
		v := &violations{}
		c := natstest.StartClusterWith(t, 3, natstest.Options{ConfigFile: shippedConf, Env: shippedEnv(), Log: v.record})
		attackShippedConfig(t, c.URL(), 3, v)
	})
}

// userURL puts role's credentials into every URL of a comma-separated list.
func userURL(urls, role string) string {
	return strings.ReplaceAll(urls, "nats://", "nats://"+role+":"+shippedPassword(role)+"@")
}

func attackShippedConfig(t *testing.T, urls string, replicas int, viol *violations) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	for part, user := range map[string]string{swarmbus.RoleBus: swarmbus.RoleProvisionBus, swarmbus.RoleRunner: swarmbus.RoleProvisionRunner} {
		if _, err := swarmbus.Provision(ctx, userURL(urls, user), swarmbus.ProvisionOptions{Part: part, Replicas: replicas, LeaseTTL: 3 * time.Second, Logger: quiet}); err != nil {
			t.Fatalf("provision %s as %s: %v", part, user, err)
		}
	}
	runner, err := swarmbus.Connect(ctx, userURL(urls, "runner"), swarmbus.Options{Name: "runner", Role: swarmbus.RoleRunner, Replicas: replicas, LeaseTTL: 3 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatalf("runner on the provisioned shipped config: %v", err)
	}
	defer runner.Close()
	bus, err := swarmbus.Connect(ctx, userURL(urls, "bus"), swarmbus.Options{Name: "bus", Role: swarmbus.RoleBus, Replicas: replicas, Logger: quiet})
	if err != nil {
		t.Fatalf("bus on the provisioned shipped config: %v", err)
	}
	defer bus.Close()
	// Wakes cross from the bus's account to the runners', events the other way; nothing either service does is
	// refused.
	everyLegitimateOperation(t, ctx, bus, runner)
	if v := viol.take(); len(v) > 0 {
		t.Fatalf("the services' own operations hit permission violations on the shipped config:\n%s", strings.Join(v, "\n"))
	}
	n := runner.Names()
	leaseStream, statusStream := "KV_"+n.LeaseBucket, "KV_"+n.StatusBucket
	before := provisionedConfigs(t, ctx, urls, n)

	queued, err := bus.PublishDirect(ctx, swarmbus.Direct{ID: "queued", MysisID: "m1", Content: "the password is swordfish"})
	if err != nil {
		t.Fatal(err)
	}
	// A runner may write any value into its own bucket: one shaped as a commander broadcast, for the attacks that
	// try to have the server carry it into the message stream.
	forged := func(tag string) []byte {
		b, _ := json.Marshal(swarmbus.Broadcast{ID: "forged-" + tag, Content: "FORGED-BY-RUNNER-USER " + tag})
		return b
	}
	rawRunner := attackerConn(t, urls, "runner", n)
	for _, key := range []string{"forged", "forge"} {
		if _, err := rawRunner.js.Publish(ctx, "$KV."+n.LeaseBucket+"."+key, forged(key)); err != nil {
			t.Fatalf("runner writes its own bucket: %v", err)
		}
	}

	type attack struct {
		name string
		// try returns nil when the server accepted the request.
		try func(ctx context.Context, a *attacker) error
	}
	streamUpdate := func(stream string, change func(*jetstream.StreamConfig)) func(context.Context, *attacker) error {
		return func(ctx context.Context, a *attacker) error {
			cfg := before.streams[stream]
			cfg.Subjects = slices.Clone(cfg.Subjects)
			change(&cfg)
			_, err := a.js.UpdateStream(ctx, cfg)
			return err
		}
	}
	// reply sends a request whose reply subject is another stream's subject, then a second request of the same
	// kind answered to the attacker, so the first has been handled (and its answer sent) when try returns.
	reply := func(subject, replyTo string, data []byte, then string) func(context.Context, *attacker) error {
		return func(ctx context.Context, a *attacker) error {
			if err := a.nc.PublishRequest(subject, replyTo, data); err != nil {
				return err
			}
			if _, err := a.nc.RequestWithContext(ctx, then, data); err != nil {
				return fmt.Errorf("sent; the round trip after it: %w", err)
			}
			return errSentJudgedByEffect
		}
	}
	// common are the attacks both users try: own is the attacker's stream, ownSubject one of its subjects, other
	// the other service's stream and otherSubject one of that stream's.
	common := func(own, ownSubject, other, otherSubject string) []attack {
		return []attack{
			{"republish " + ownSubject + " of " + own + " to " + otherSubject, streamUpdate(own, func(c *jetstream.StreamConfig) {
				c.RePublish = &jetstream.RePublish{Source: ownSubject, Destination: otherSubject}
			})},
			{"republish " + other + " to its own subject", streamUpdate(other, func(c *jetstream.StreamConfig) {
				c.RePublish = &jetstream.RePublish{Source: c.Subjects[0], Destination: "zoea.events.captured"}
			})},
			{"add " + other + " as a source of " + own, streamUpdate(own, func(c *jetstream.StreamConfig) {
				c.Sources = []*jetstream.StreamSource{{Name: other}}
			})},
			{"mirror " + other + " into a new stream", func(ctx context.Context, a *attacker) error {
				_, err := a.js.CreateStream(ctx, jetstream.StreamConfig{Name: "MIRROR", Mirror: &jetstream.StreamSource{Name: other}})
				return err
			}},
			{"add zoea.events.> to the subjects of " + own, streamUpdate(own, func(c *jetstream.StreamConfig) {
				c.Subjects = append(c.Subjects, "zoea.events.>")
			})},
			{"add zoea.events.> to the subjects of " + other, streamUpdate(other, func(c *jetstream.StreamConfig) {
				c.Subjects = append(c.Subjects, "zoea.events.>")
			})},
			{"set max_msgs=1 on " + own, streamUpdate(own, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1 })},
			{"set max_msgs=1 on " + other, streamUpdate(other, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1 })},
			{"create a stream capturing the events", func(ctx context.Context, a *attacker) error {
				_, err := a.js.CreateStream(ctx, jetstream.StreamConfig{Name: "CAPTURE", Subjects: []string{"zoea.events.>"}})
				return err
			}},
			{"purge " + own, func(ctx context.Context, a *attacker) error {
				s, err := a.js.Stream(ctx, own)
				if err != nil {
					return err
				}
				return s.Purge(ctx)
			}},
			{"delete " + own, func(ctx context.Context, a *attacker) error { return a.js.DeleteStream(ctx, own) }},
			{"delete " + other, func(ctx context.Context, a *attacker) error { return a.js.DeleteStream(ctx, other) }},
			{"create a consumer on " + other, func(ctx context.Context, a *attacker) error {
				_, err := a.js.CreateOrUpdateConsumer(ctx, other, jetstream.ConsumerConfig{Name: "spy", AckPolicy: jetstream.AckNonePolicy})
				return err
			}},
			{"direct get from " + other, func(ctx context.Context, a *attacker) error {
				m, err := a.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+other, []byte(`{"seq":1}`))
				if err == nil && m.Header.Get("Status") != "" {
					return errors.New("answered " + m.Header.Get("Status") + " " + m.Header.Get("Description"))
				}
				return err
			}},
		}
	}

	// The attacks judged by their effect come first: a stream broken by a later attack could hide it.
	runnerAttacks := []attack{
		{"a push consumer of " + leaseStream + " delivering the forged value to " + n.Broadcast + " (judged by effect)", func(ctx context.Context, a *attacker) error {
			_, err := a.js.CreateOrUpdateConsumer(ctx, leaseStream, jetstream.ConsumerConfig{Name: "p1", DeliverSubject: n.Broadcast,
				FilterSubject: "$KV." + n.LeaseBucket + ".forged", AckPolicy: jetstream.AckNonePolicy})
			if err != nil {
				return err
			}
			return errSentJudgedByEffect
		}},
		{"a push consumer of " + leaseStream + " delivering to " + n.DirectPrefix + "m1 (judged by effect)", func(ctx context.Context, a *attacker) error {
			_, err := a.js.CreateOrUpdateConsumer(ctx, leaseStream, jetstream.ConsumerConfig{Name: "p2", DeliverSubject: n.DirectPrefix + "m1",
				FilterSubject: "$KV." + n.LeaseBucket + ".forged", AckPolicy: jetstream.AckNonePolicy})
			if err != nil {
				return err
			}
			return errSentJudgedByEffect
		}},
		{"a direct get of its own forged value answered to " + n.Broadcast, reply(
			"$JS.API.DIRECT.GET."+leaseStream+".$KV."+n.LeaseBucket+".forged", n.Broadcast, nil,
			"$JS.API.DIRECT.GET."+leaseStream+".$KV."+n.LeaseBucket+".forged")},
		{"a KV put answered to " + n.DirectPrefix + "m1", reply(
			"$KV."+n.LeaseBucket+".forged", n.DirectPrefix+"m1", forged("putack"), "$KV."+n.LeaseBucket+".forge")},
	}
	runnerAttacks = append(runnerAttacks, common(leaseStream, "$KV."+n.LeaseBucket+".forged", n.Stream, n.Broadcast)...)
	runnerAttacks = append(runnerAttacks,
		attack{"publish a broadcast", func(ctx context.Context, a *attacker) error {
			_, err := a.js.Publish(ctx, n.Broadcast, forged("publish"))
			return err
		}},
		attack{"publish a direct message", func(ctx context.Context, a *attacker) error {
			_, err := a.js.Publish(ctx, n.DirectPrefix+"m1", forged("direct"))
			return err
		}},
		attack{"the issue's republish of " + leaseStream + " key forge to " + n.Broadcast, streamUpdate(leaseStream, func(c *jetstream.StreamConfig) {
			c.RePublish = &jetstream.RePublish{Source: "$KV." + n.LeaseBucket + ".forge", Destination: n.Broadcast}
		})},
		attack{"set max_msgs=1 on " + statusStream, streamUpdate(statusStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1 })},
		attack{"create a consumer on " + leaseStream + " filtered on " + n.Broadcast, func(ctx context.Context, a *attacker) error {
			_, err := a.js.CreateOrUpdateConsumer(ctx, leaseStream, jetstream.ConsumerConfig{Name: "f", FilterSubject: n.Broadcast, AckPolicy: jetstream.AckNonePolicy})
			return err
		}},
		attack{"delete the delivery consumer", func(ctx context.Context, a *attacker) error {
			return a.js.DeleteConsumer(ctx, n.Stream, n.Consumer)
		}},
		attack{"pull from the delivery consumer", func(ctx context.Context, a *attacker) error {
			_, err := a.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT."+n.Stream+"."+n.Consumer, []byte(`{"batch":1,"no_wait":true}`))
			return err
		}},
	)
	// The attacks judged by their effect come first: a stream broken by a later attack could hide it.
	busAttacks := []attack{
		// A duplicate of the queued message (its message id): nothing is stored, but the server still acknowledges
		// it, to the reply subject.
		{"a duplicate direct message publish answered to a lease key", func(ctx context.Context, a *attacker) error {
			m := nats.NewMsg(n.DirectPrefix + "m1")
			m.Reply = "$KV." + n.LeaseBucket + ".mysis.m2"
			m.Header.Set(jetstream.MsgIDHeader, "direct:queued")
			m.Data = []byte(`{"id":"queued","mysis_id":"m1","content":"the password is swordfish"}`)
			if err := a.nc.PublishMsg(m); err != nil {
				return err
			}
			if _, err := a.nc.RequestWithContext(ctx, "$JS.API.STREAM.INFO."+n.Stream, nil); err != nil {
				return fmt.Errorf("sent; the round trip after it: %w", err)
			}
			return errSentJudgedByEffect
		}},
		{"a pull from " + n.Consumer + " answered to a lease key", reply(
			"$JS.API.CONSUMER.MSG.NEXT."+n.Stream+"."+n.Consumer, "$KV."+n.LeaseBucket+".mysis.m3", []byte(`{"batch":1,"no_wait":true}`),
			"$JS.API.CONSUMER.INFO."+n.Stream+"."+n.Consumer)},
	}
	busAttacks = append(busAttacks, common(n.Stream, n.Broadcast, leaseStream, "$KV."+n.LeaseBucket+".mysis.m1")...)
	busAttacks = append(busAttacks,
		attack{"write a lease", func(ctx context.Context, a *attacker) error {
			_, err := a.js.Publish(ctx, "$KV."+n.LeaseBucket+".mysis.m1", []byte("bus"))
			return err
		}},
		attack{"set max_msgs=1 on " + leaseStream + " (the shared lease bucket)", streamUpdate(leaseStream, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1 })},
		attack{"redefine " + n.Consumer + " as a push consumer delivering to a lease", func(ctx context.Context, a *attacker) error {
			cfg := before.consumer
			cfg.DeliverSubject, cfg.MaxWaiting = "$KV."+n.LeaseBucket+".mysis.m1", 0
			_, err := a.js.CreateOrUpdateConsumer(ctx, n.Stream, cfg)
			return err
		}},
		attack{"create a consumer on " + n.Stream + " filtered on the lease subjects", func(ctx context.Context, a *attacker) error {
			_, err := a.js.CreateOrUpdateConsumer(ctx, n.Stream, jetstream.ConsumerConfig{Name: "f", FilterSubject: "$KV." + n.LeaseBucket + ".>", AckPolicy: jetstream.AckExplicitPolicy})
			return err
		}},
	)
	accepted := 0
	for _, side := range []struct {
		user    string
		attacks []attack
	}{{"runner", runnerAttacks}, {"bus", busAttacks}} {
		for _, at := range side.attacks {
			a := attackerConn(t, urls, side.user, n)
			result := a.attempt(ctx, at.try)
			a.nc.Close()
			t.Logf("attack as %s: %s: %s", side.user, at.name, result)
			if strings.HasPrefix(result, "ACCEPTED") {
				accepted++
				t.Errorf("the %s user could %s", side.user, at.name)
			}
		}
	}

	// What the attacks that the server answers elsewhere would have left behind.
	after := provisionedConfigs(t, ctx, urls, n)
	for name, cfg := range before.streams {
		if d := configDiff(cfg, after.streams[name]); d != "" {
			t.Errorf("effect: stream %s changed: %s", name, d)
		}
	}
	if have, want := after.consumer, before.consumer; have.DeliverSubject != want.DeliverSubject || have.FilterSubject != want.FilterSubject || have.MaxAckPending != want.MaxAckPending {
		t.Errorf("effect: consumer %s changed: deliver %q filter %q max ack pending %d", n.Consumer, have.DeliverSubject, have.FilterSubject, have.MaxAckPending)
	}
	for _, bucket := range []string{n.LeaseBucket, n.StatusBucket} {
		for subject := range bucketSubjects(t, ctx, rawRunner, bucket) {
			if !strings.HasPrefix(subject, "$KV."+bucket+".") {
				t.Errorf("effect: bucket %s holds a message on the foreign subject %s", bucket, subject)
			}
		}
	}
	leases, err := runner.Leases("checker")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		if owner, err := leases.Owner(ctx, m); err != nil || owner != "" {
			t.Errorf("effect: the lease of %s is held by %q (%v) after the bus's attacks; nobody acquired it", m, owner, err)
		}
	}
	// The message stream holds the queued message and nothing else; whatever is there, the bus delivers it, and a
	// broadcast published now still goes through and comes next.
	rawBus := attackerConn(t, urls, "bus", n)
	ms, err := rawBus.js.Stream(ctx, n.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ms.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("effect: the message stream holds %d messages on %v, want only the queued direct message", info.State.Msgs, info.State.Subjects)
	}
	c := newCollector()
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() { _ = bus.ConsumeMessages(cctx, swarmbus.ConsumerOptions{}, c.handle) }()
	var last uint64
	for _, d := range c.wait(t, 1, time.Minute) {
		t.Logf("the bus delivered seq %d: broadcast %+v direct %+v", d.Seq, d.Broadcast, d.Direct)
		if d.Direct == nil || d.Direct.ID != "queued" {
			t.Errorf("effect: the bus delivered %+v %+v, which no one published through it", d.Broadcast, d.Direct)
		}
		last = d.Seq
	}
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	_, err = bus.PublishBroadcast(pctx, swarmbus.Broadcast{ID: "marker", Content: "marker"})
	pcancel()
	if err != nil {
		t.Fatalf("effect: the bus can no longer publish a broadcast: %v", err)
	}
	got := c.wait(t, 1, time.Minute) // every delivery so far: the queued message, then the marker
	if d := got[len(got)-1]; d.Broadcast == nil || d.Broadcast.ID != "marker" || d.Seq != queued.Seq+1 {
		t.Errorf("effect: after the queued message (seq %d) the bus delivered seq %d %+v %+v, want the marker next: the attacks stored messages in between",
			last, d.Seq, d.Broadcast, d.Direct)
	}
	if accepted == 0 && !t.Failed() {
		t.Logf("all %d attacks refused or without effect", len(runnerAttacks)+len(busAttacks))
	}
}

// errSentJudgedByEffect: the server took the request, which is harmless unless it leaves something behind (the
// checks after the attacks).
var errSentJudgedByEffect = errors.New("sent; judged by its effect below")

// attacker is a service user's own raw connection, on its own inbox prefix (the only replies it may receive).
type attacker struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	violation chan error
}

func attackerConn(t *testing.T, urls, user string, n swarmbus.Names) *attacker {
	t.Helper()
	a := &attacker{violation: make(chan error, 16)}
	nc, err := nats.Connect(userURL(urls, user), nats.CustomInboxPrefix(swarmbus.InboxPrefix(n, user)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case a.violation <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("%s connects: %v", user, err)
	}
	t.Cleanup(nc.Close)
	a.nc = nc
	if a.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return a
}

// attempt runs try and says how the server took it: refused at once when it reports a permission violation (the
// server answers a refused request with nothing but that), refused with its error, or ACCEPTED.
func (a *attacker) attempt(ctx context.Context, try func(context.Context, *attacker) error) string {
	ctx, cancel := context.WithTimeoutCause(ctx, 10*time.Second, errors.New("no answer in 10s"))
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case err := <-a.violation:
			stop(err)
		case <-ctx.Done():
		}
	}()
	err := try(ctx, a)
	switch {
	case err == nil:
		return "ACCEPTED"
	case errors.Is(err, errSentJudgedByEffect):
		return err.Error()
	case context.Cause(ctx) != nil && ctx.Err() != nil:
		return "refused: " + context.Cause(ctx).Error()
	default:
		return "refused: " + err.Error()
	}
}

// provisioned are the provisioned configs of the swarm's streams and delivery consumer, read by the provisioning
// users (the only ones besides the owners that may look).
type provisioned struct {
	streams  map[string]jetstream.StreamConfig
	consumer jetstream.ConsumerConfig
}

func provisionedConfigs(t *testing.T, ctx context.Context, urls string, n swarmbus.Names) provisioned {
	t.Helper()
	p := provisioned{streams: map[string]jetstream.StreamConfig{}}
	for user, streams := range map[string][]string{
		swarmbus.RoleProvisionBus:    {n.Stream},
		swarmbus.RoleProvisionRunner: {"KV_" + n.LeaseBucket, "KV_" + n.StatusBucket},
	} {
		a := attackerConn(t, urls, user, n)
		for _, name := range streams {
			s, err := a.js.Stream(ctx, name)
			if err != nil {
				t.Fatalf("stream %s as %s: %v", name, user, err)
			}
			p.streams[name] = s.CachedInfo().Config
		}
		if user == swarmbus.RoleProvisionBus {
			c, err := a.js.Consumer(ctx, n.Stream, n.Consumer)
			if err != nil {
				t.Fatalf("consumer %s: %v", n.Consumer, err)
			}
			p.consumer = c.CachedInfo().Config
		}
		a.nc.Close()
	}
	return p
}

// configDiff says what of a stream's config an attack would change, "" when nothing did.
func configDiff(was, is jetstream.StreamConfig) string {
	var d []string
	if !slices.Equal(was.Subjects, is.Subjects) {
		d = append(d, fmt.Sprintf("subjects %v → %v", was.Subjects, is.Subjects))
	}
	if is.RePublish != nil || is.Mirror != nil || len(is.Sources) > 0 {
		d = append(d, "republish, mirror or sources added")
	}
	if was.MaxMsgs != is.MaxMsgs || was.MaxBytes != is.MaxBytes || was.MaxMsgsPerSubject != is.MaxMsgsPerSubject || was.Replicas != is.Replicas {
		d = append(d, fmt.Sprintf("limits max_msgs %d → %d, max_bytes %d → %d, per subject %d → %d, replicas %d → %d",
			was.MaxMsgs, is.MaxMsgs, was.MaxBytes, is.MaxBytes, was.MaxMsgsPerSubject, is.MaxMsgsPerSubject, was.Replicas, is.Replicas))
	}
	return strings.Join(d, "; ")
}

// bucketSubjects lists the subjects a bucket's stream holds messages on, as the runner (its owner) sees them.
func bucketSubjects(t *testing.T, ctx context.Context, a *attacker, bucket string) map[string]uint64 {
	t.Helper()
	s, err := a.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatalf("bucket %s: %v", bucket, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatalf("bucket %s subjects: %v", bucket, err)
	}
	return info.State.Subjects
}
