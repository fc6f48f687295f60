package app_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// BenchmarkBroadcastToRows measures what a commander waits for: from calling Broadcast to every mysis's memory row
// being committed, for a swarm of 1,000 myses (ZOEA_BENCH_MYSES overrides). One broadcast at a time; each
// iteration ends when the first EVENT_KIND_BROADCAST event of that broadcast arrives, which the bus publishes only
// after RecordBroadcast has committed all rows and the wakes are out — so the figure is an upper bound.
//
//	memory=postgres                     the real memory service binary on a fresh Postgres database (the target)
//	memory=postgres/…/RecordBroadcast-only  the memory service's RecordBroadcast alone: the floor under the above
//	memory=fake                         the in-memory fake: the bus's own overhead (gRPC, JetStream, consumer, wakes)
//
// Run: go test -run '^$' -bench BroadcastToRows -benchtime 200x ./internal/app/
func BenchmarkBroadcastToRows(b *testing.B) {
	n := 1000
	if v := os.Getenv("ZOEA_BENCH_MYSES"); v != "" {
		fmt.Sscan(v, &n)
	}
	b.Run(fmt.Sprintf("memory=postgres/myses=%d", n), func(b *testing.B) {
		mem := startRealMemory(b)
		ids := mem.addMyses(b, "bench", n)
		benchBroadcast(b, mem.addr, ids)
	})
	// The floor set by the memory service alone: RecordBroadcast called directly, no bus in between.
	b.Run(fmt.Sprintf("memory=postgres/myses=%d/RecordBroadcast-only", n), func(b *testing.B) {
		mem := startRealMemory(b)
		mem.addMyses(b, "bench", n)
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := mem.client.RecordBroadcast(context.Background(), &memoryv1.RecordBroadcastRequest{
				BroadcastId: uuid.NewString(), Content: "Mission: mine iron_ore near the belt"}); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		report(b, "rows", ds)
	})
	b.Run(fmt.Sprintf("memory=fake/myses=%d", n), func(b *testing.B) {
		mem := memfake.Start(b)
		ids := mem.AddMyses("bench", n)
		benchBroadcast(b, mem.Addr(), ids)
	})
}

func benchBroadcast(b *testing.B, memAddr string, ids []string) {
	nats := natstest.Start(b)
	bus := startBus(b, busSetup{natsURL: nats.ClientURL(), memAddr: memAddr, waitReady: true})
	obs := observer(b, nats.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	committed := make(chan string, 16)
	if _, err := obs.SubscribeEvents(ctx, swarmbus.EventFilter{MysisIDs: []string{ids[0]}, Kinds: []busv1.EventKind{busv1.EventKind_EVENT_KIND_BROADCAST}},
		func(_ context.Context, ev *busv1.Event) { committed <- ev.GetBroadcast().GetBroadcastId() }); err != nil {
		b.Fatal(err)
	}
	one := func(i int) (accepted, done time.Duration) {
		start := time.Now()
		resp, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: fmt.Sprintf("Mission %d: mine iron_ore near the belt", i)})
		if err != nil {
			b.Fatal(err)
		}
		accepted = time.Since(start)
		for {
			select {
			case id := <-committed:
				if id == resp.GetBroadcastId() {
					return accepted, time.Since(start)
				}
			case <-time.After(30 * time.Second):
				b.Fatalf("broadcast %d not delivered within 30s", i)
			}
		}
	}
	for i := range 3 { // warm up connections, caches and plans
		one(-1 - i)
	}
	var accept, total []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a, d := one(i)
		accept = append(accept, a)
		total = append(total, d)
	}
	b.StopTimer()
	report(b, "rows", total)
	report(b, "ack", accept)
}

func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	q := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.5) - 1
		i = max(0, min(i, len(ds)-1))
		return float64(ds[i].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), name+"-p50-ms")
	b.ReportMetric(q(0.99), name+"-p99-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
}
