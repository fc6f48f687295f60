package swarmbus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// On a 3-node JetStream cluster every stream and bucket follows Options.Replicas (ZOEA_NATS_REPLICAS): created R3
// when the setting says 3, and an existing R1 deployment (one made before the cluster, or by a process with the
// default) is updated to R3 by the next process that connects with 3 — the message stream, its delivery consumer,
// the lease bucket (whose TTL this process leaves alone) and the status bucket alike; the consumer follows when the
// bus starts delivering. Connecting with 1 again scales them back down, so the setting, not history, decides.
func TestReplicasFollowTheSettingOnACluster(t *testing.T) {
	cluster := natstest.StartCluster(t, 3)
	ctx := testCtx(t)
	nc, err := nats.Connect(cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	// A fresh swarm created with 3.
	fresh := connect(t, cluster.URL(), swarmbus.Options{Name: "fresh", Swarm: "fresh", Replicas: 3})
	consumeOne(t, ctx, fresh, "fresh")
	checkReplicas(t, ctx, js, fresh.Names(), 3)

	// The default swarm made R1 (the runner with its TTL, the bus with the consumer), then a bus and a runner with 3.
	old := connect(t, cluster.URL(), swarmbus.Options{Name: "old", LeaseTTL: 7 * time.Second})
	consumeOne(t, ctx, old, "old")
	checkReplicas(t, ctx, js, old.Names(), 1)
	// As the services do it: the runner (Role runner) updates the buckets, the bus (Role bus) the stream and consumer.
	connect(t, cluster.URL(), swarmbus.Options{Name: "runner-r3", Role: swarmbus.RoleRunner, Replicas: 3})
	consumeOne(t, ctx, connect(t, cluster.URL(), swarmbus.Options{Name: "bus-r3", Role: swarmbus.RoleBus, Replicas: 3}), "r3")
	checkReplicas(t, ctx, js, old.Names(), 3)
	lease, err := js.KeyValue(ctx, old.Names().LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := lease.Status(ctx); err != nil || st.TTL() != 7*time.Second {
		t.Errorf("lease bucket TTL after the replicas update: %v %v, want the 7s it had (this process set none)", st, err)
	}

	// And back to 1.
	connect(t, cluster.URL(), swarmbus.Options{Name: "runner-r1", Role: swarmbus.RoleRunner, Replicas: 1, LeaseTTL: 7 * time.Second})
	consumeOne(t, ctx, connect(t, cluster.URL(), swarmbus.Options{Name: "bus-r1", Role: swarmbus.RoleBus, Replicas: 1}), "r1")
	checkReplicas(t, ctx, js, old.Names(), 1)
}

// consumeOne runs the delivery consumer of b until one broadcast (id, unique: the stream drops duplicates) went
// through it, so the durable consumer exists with b's settings.
func consumeOne(t *testing.T, ctx context.Context, b *swarmbus.Bus, id string) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := newCollector()
	done := make(chan error, 1)
	go func() { done <- b.ConsumeMessages(cctx, swarmbus.ConsumerOptions{}, c.handle) }()
	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: id, Content: "mine"}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 1, 20*time.Second)
	cancel()
	<-done
}

// checkReplicas checks the configured replication of the swarm's message stream, both buckets' streams and the
// delivery consumer, then waits (the cluster moves peers in the background) until each has that many peers placed.
func checkReplicas(t *testing.T, ctx context.Context, js jetstream.JetStream, n swarmbus.Names, want int) {
	t.Helper()
	streams := []string{n.Stream, "KV_" + n.LeaseBucket, "KV_" + n.StatusBucket}
	placed := func(name string, cl *jetstream.ClusterInfo) int {
		if cl == nil {
			return 0
		}
		return len(cl.Replicas) + 1
	}
	state := func() (configured map[string]int, peers map[string]int) {
		configured, peers = map[string]int{}, map[string]int{}
		for _, name := range streams {
			info, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatalf("stream %s: %v", name, err)
			}
			configured[name], peers[name] = info.CachedInfo().Config.Replicas, placed(name, info.CachedInfo().Cluster)
		}
		c, err := js.Consumer(ctx, n.Stream, n.Consumer)
		if err != nil {
			t.Fatalf("consumer %s: %v", n.Consumer, err)
		}
		ci := c.CachedInfo()
		key := "consumer " + n.Consumer
		configured[key], peers[key] = ci.Config.Replicas, placed(key, ci.Cluster)
		return configured, peers
	}
	configured, _ := state()
	for name, r := range configured {
		if r != want {
			t.Errorf("%s: %d replicas configured, want %d", name, r, want)
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		_, peers := state()
		settled := true
		for _, p := range peers {
			settled = settled && p == want
		}
		if settled {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("peers placed after 20s: %v, want %d for each", peers, want)
		}
	}
}
