package app_test

import (
	"testing"
	"time"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// End to end with the real memory service on Postgres: a broadcast accepted by a bus that stops before delivering
// reaches every mysis exactly once through the next bus, and direct messages land by name.
func TestEndToEndWithTheRealMemoryService(t *testing.T) {
	mem := startRealMemory(t)
	nats := natstest.Start(t)
	ids := mem.addMyses(t, "e2e", 30)
	ctx := ctxT(t)

	first := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.addr, noDelivery: true, waitReady: true})
	resp, err := first.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Explore the universe!"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTargetCount() != 30 {
		t.Fatalf("target count %d", resp.GetTargetCount())
	}
	first.stop(t)

	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.addr, waitReady: true})
	var rows map[string]int
	eventually(t, 15*time.Second, "delivery to every mysis", func() bool {
		rows = mem.broadcastRows(t, ids, resp.GetBroadcastId())
		return len(rows) == len(ids)
	})
	for _, id := range ids {
		if rows[id] != 1 {
			t.Fatalf("mysis %s has %d rows of the broadcast, want 1 (all: %d myses)", id, rows[id], len(rows))
		}
	}
	// A retried Broadcast RPC with the same id changes nothing.
	if _, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Explore the universe!", BroadcastId: resp.GetBroadcastId()}); err != nil {
		t.Fatal(err)
	}
	// Drain: the consumer handles messages one at a time in order, so once a sentinel broadcast is everywhere, a
	// duplicate of the first would be too.
	sentinel, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "sentinel"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the sentinel broadcast", func() bool {
		return len(mem.broadcastRows(t, ids, sentinel.GetBroadcastId())) == len(ids)
	})
	for id, n := range mem.broadcastRows(t, ids, resp.GetBroadcastId()) {
		if n != 1 {
			t.Fatalf("after a retry mysis %s has %d rows", id, n)
		}
	}

	d, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "e2e-0007", Content: "Scout the belt", MessageId: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetMemory().GetMysisId() != ids[7] || d.GetMemory().GetSource() != memoryv1.Source_SOURCE_DIRECT || d.GetMemory().GetSeq() != 3 { // after the broadcast and the sentinel
		t.Fatalf("direct stored as %v", d.GetMemory())
	}
	again, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[7], Content: "Scout the belt", MessageId: "m-1"})
	if err != nil || again.GetMemory().GetId() != d.GetMemory().GetId() {
		t.Fatalf("idempotent retry = %v, %v", again.GetMemory(), err)
	}
}
