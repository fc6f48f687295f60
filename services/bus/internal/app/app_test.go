package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// assertOnce checks that every mysis has exactly one memory row for the broadcast, as a user prompt.
func assertOnce(t *testing.T, mem *memfake.Fake, ids []string, broadcastID, content string) {
	t.Helper()
	rows := mem.BroadcastRows(broadcastID)
	if len(rows) != len(ids) {
		t.Fatalf("broadcast %s reached %d myses, want %d", broadcastID, len(rows), len(ids))
	}
	for _, id := range ids {
		if rows[id] != 1 {
			t.Fatalf("mysis %s has %d rows of broadcast %s, want exactly 1", id, rows[id], broadcastID)
		}
	}
	for _, m := range mem.Memories(ids[0]) {
		if m.GetBroadcastId() == broadcastID &&
			(m.GetRole() != memoryv1.Role_ROLE_USER || m.GetSource() != memoryv1.Source_SOURCE_BROADCAST || m.GetContent() != content) {
			t.Fatalf("delivered row = %v", m)
		}
	}
}

func delivered(mem *memfake.Fake, broadcastID string, n int) func() bool {
	return func() bool { return len(mem.BroadcastRows(broadcastID)) == n }
}

// drain proves the bus has finished with everything published before it, instead of waiting a while: the delivery
// consumer handles one message at a time in stream order (MaxAckPending 1), so once a sentinel broadcast published
// now has reached all n myses, a duplicate of an earlier message would already have been written.
func drain(t *testing.T, client busv1.BusServiceClient, mem *memfake.Fake, n int) {
	t.Helper()
	resp, err := client.Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "sentinel " + uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	mem.Await(10*time.Second, "the sentinel broadcast", delivered(mem, resp.GetBroadcastId(), n))
}

func TestBroadcastReachesEveryMysisExactlyOnce(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 50)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	wakes := watchWakes(t, observer(t, nats.ClientURL()))
	ctx := ctxT(t)

	resp, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Explore the universe!"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(resp.GetBroadcastId()); err != nil || resp.GetTargetCount() != 50 {
		t.Fatalf("response = %v", resp)
	}
	mem.Await(10*time.Second, "delivery to 50 myses", delivered(mem, resp.GetBroadcastId(), 50))
	assertOnce(t, mem, ids, resp.GetBroadcastId(), "Explore the universe!")
	wakes.await(t, 5*time.Second, "a broadcast wake for every mysis", func() bool { return wakes.count(swarmbus.WakeBroadcast) == 50 })

	// A client retry with the id it was given (say the response was lost) delivers nothing more.
	again, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Explore the universe!", BroadcastId: strings.ToUpper(resp.GetBroadcastId())})
	if err != nil || again.GetBroadcastId() != resp.GetBroadcastId() {
		t.Fatalf("retry = %v, %v", again, err)
	}
	drain(t, bus.client, mem, 50)
	assertOnce(t, mem, ids, resp.GetBroadcastId(), "Explore the universe!")
	if n := mem.Calls("RecordBroadcast"); n != 2 {
		t.Fatalf("RecordBroadcast called %d times, want 2 (the broadcast and the sentinel); JetStream should have deduplicated the retried publish", n)
	}
}

func TestBroadcastsKeepTheirOrderInEveryMemory(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 5)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	ctx := ctxT(t)
	var bids []string
	for _, c := range []string{"first", "second", "third", "fourth"} {
		resp, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: c})
		if err != nil {
			t.Fatal(err)
		}
		bids = append(bids, resp.GetBroadcastId())
	}
	mem.Await(10*time.Second, "all four delivered", delivered(mem, bids[3], 5))
	for _, id := range ids {
		var got []string
		for _, m := range mem.Memories(id) {
			got = append(got, m.GetContent())
		}
		if strings.Join(got, ",") != "first,second,third,fourth" {
			t.Fatalf("mysis %s memory order %v", id, got)
		}
	}
}

// The acceptance guarantee: a broadcast acknowledged by one bus process, which stops before delivering it, is
// delivered exactly once by the next bus process.
func TestAcknowledgedBroadcastSurvivesBusRestart(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 20)
	first := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), noDelivery: true, waitReady: true})
	resp, err := first.client.Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "Mine iron ore"})
	if err != nil {
		t.Fatal(err)
	}
	first.stop(t)
	if mem.Calls("RecordBroadcast") != 0 {
		t.Fatal("the first bus delivered although it had no consumer")
	}

	second := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr()})
	mem.Await(10*time.Second, "delivery by the restarted bus", delivered(mem, resp.GetBroadcastId(), 20))
	drain(t, second.client, mem, 20)
	assertOnce(t, mem, ids, resp.GetBroadcastId(), "Mine iron ore")
}

// A bus that fails to deliver (memory down) and is stopped hands the broadcast over: the next bus delivers it
// once memory is back, exactly once.
func TestBroadcastInFlightWhenBusStopsIsDeliveredByTheNextBus(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 10)
	first := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	mem.Stop()
	resp, err := first.client.Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "Regroup at Sol"})
	if err != nil {
		t.Fatalf("broadcast with memory down must still be accepted: %v", err)
	}
	if resp.GetTargetCount() != 0 {
		t.Fatalf("target count with memory down = %d, want 0 (unknown)", resp.GetTargetCount())
	}
	// Memory comes back refusing every RecordBroadcast: the first bus is seen trying and failing, then stops.
	mem.FailAll("RecordBroadcast", codes.Unavailable)
	mem.Restart()
	mem.Await(10*time.Second, "the first bus retrying", func() bool { return mem.Calls("RecordBroadcast") >= 2 })
	first.stop(t)
	mem.ClearFaults()
	second := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr()})
	mem.Await(10*time.Second, "delivery after memory returned", delivered(mem, resp.GetBroadcastId(), 10))
	drain(t, second.client, mem, 10)
	assertOnce(t, mem, ids, resp.GetBroadcastId(), "Regroup at Sol")
}

func TestMemoryOutageDelaysButNeverLosesOrDuplicates(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 10)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	ctx := ctxT(t)

	mem.Stop()
	bus.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	resp, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Hold position"})
	if err != nil {
		t.Fatal(err)
	}
	// Memory answers again but fails every RecordBroadcast: the bus must keep the broadcast and keep retrying
	// (a bus that acked and dropped it would stop calling), and deliver it once the outage ends.
	mem.FailAll("RecordBroadcast", codes.Unavailable)
	mem.Restart()
	bus.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	mem.Await(10*time.Second, "retries through the outage", func() bool { return mem.Calls("RecordBroadcast") >= 3 })
	mem.ClearFaults()
	mem.Await(10*time.Second, "delivery after memory returned", delivered(mem, resp.GetBroadcastId(), 10))

	// The worst case: memory commits the rows, then the response is lost. The retry must not write again.
	mem.FailNext("RecordBroadcast", memfake.Fault{Code: codes.Unavailable, AfterCommit: true})
	before := mem.Calls("RecordBroadcast")
	resp2, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Second order"})
	if err != nil {
		t.Fatal(err)
	}
	mem.Await(10*time.Second, "the retry after a lost response", func() bool { return mem.Calls("RecordBroadcast") >= before+2 })
	drain(t, bus.client, mem, 10)
	assertOnce(t, mem, ids, resp.GetBroadcastId(), "Hold position")
	assertOnce(t, mem, ids, resp2.GetBroadcastId(), "Second order")
}

func TestMysisBroadcast(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 4)
	ctx := ctxT(t)

	closed := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	_, err := closed.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "hi all", SenderId: ids[0]})
	wantCode(t, err, codes.PermissionDenied)
	if !strings.Contains(status.Convert(err).Message(), "ZOEA_ALLOW_MYSIS_BROADCAST") {
		t.Fatalf("message does not say how to allow it: %v", err)
	}
	closed.stop(t)

	open := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), allowMysis: true, waitReady: true})
	resp, err := open.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "hi all", SenderId: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTargetCount() != 3 {
		t.Fatalf("target count %d, want 3 (everyone but the sender)", resp.GetTargetCount())
	}
	mem.Await(10*time.Second, "delivery to the other three", delivered(mem, resp.GetBroadcastId(), 3))
	if mem.BroadcastRows(resp.GetBroadcastId())[ids[0]] != 0 {
		t.Fatal("the sender received its own broadcast")
	}
	last := mem.Memories(ids[1])
	if got := last[len(last)-1].GetSenderId(); got != ids[0] {
		t.Fatalf("sender_id stored as %q", got)
	}
	_, err = open.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "hi", SenderId: uuid.NewString()})
	wantCode(t, err, codes.InvalidArgument)
	if fieldOf(err) != "sender_id" {
		t.Fatalf("unknown sender: field %q (%v)", fieldOf(err), err)
	}
}

func TestSendDirect(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("scout", 2)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	wakes := watchWakes(t, observer(t, nats.ClientURL()))
	ctx := ctxT(t)

	byName, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "scout-0001", Content: "Dock at the nearest station"})
	if err != nil {
		t.Fatal(err)
	}
	m := byName.GetMemory()
	if m.GetMysisId() != ids[1] || m.GetRole() != memoryv1.Role_ROLE_USER || m.GetSource() != memoryv1.Source_SOURCE_DIRECT ||
		m.GetContent() != "Dock at the nearest station" || m.GetSenderId() != "" || !strings.HasPrefix(m.GetIdempotencyKey(), "direct:") || m.GetSeq() != 1 {
		t.Fatalf("stored memory = %v", m)
	}
	wakes.await(t, 5*time.Second, "a direct wake", func() bool { return wakes.count(swarmbus.WakeDirect) == 1 })

	// By id, with an idempotency key and a mysis sender: a retry returns the stored row and writes nothing.
	req := &busv1.SendDirectRequest{Mysis: ids[0], Content: "Follow me", MessageId: "order-42", SenderId: ids[1]}
	first, err := bus.client.SendDirect(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := bus.client.SendDirect(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if retry.GetMemory().GetId() != first.GetMemory().GetId() || len(mem.Memories(ids[0])) != 1 {
		t.Fatalf("retry stored again: %v vs %v (%d rows)", retry.GetMemory(), first.GetMemory(), len(mem.Memories(ids[0])))
	}
	if first.GetMemory().GetIdempotencyKey() != "direct:order-42" || first.GetMemory().GetSenderId() != ids[1] {
		t.Fatalf("stored = %v", first.GetMemory())
	}

	// The same message id with another content is refused naming message_id, and the first message stands.
	_, err = bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0], Content: "Scatter", MessageId: "order-42", SenderId: ids[1]})
	wantCode(t, err, codes.AlreadyExists)
	if msg := status.Convert(err).Message(); !strings.HasPrefix(msg, `message_id: "order-42" was already used`) {
		t.Errorf("the refusal says %q", msg)
	}
	if ms := mem.Memories(ids[0]); len(ms) != 1 || ms[0].GetContent() != "Follow me" {
		t.Fatalf("after the refused reuse: %v", ms)
	}

	_, err = bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "nobody", Content: "hello?"})
	wantCode(t, err, codes.NotFound)
	_, err = bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: uuid.NewString(), Content: "hello?"})
	wantCode(t, err, codes.NotFound)

	mem.Stop()
	_, err = bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0], Content: "anyone?"})
	wantCode(t, err, codes.Unavailable)
}

// Producers may also publish direct messages to JetStream (swarmbus.PublishDirect); the bus delivers them once,
// and drops — visibly — those addressed to a mysis that does not exist.
func TestQueuedDirectMessages(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 1)
	startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	obs := observer(t, nats.ClientURL())
	ctx := ctxT(t)
	errEvents := make(chan *busv1.Event, 10)
	if _, err := obs.SubscribeEvents(ctx, swarmbus.EventFilter{Kinds: []busv1.EventKind{busv1.EventKind_EVENT_KIND_ERROR}}, func(_ context.Context, ev *busv1.Event) {
		errEvents <- ev
	}); err != nil {
		t.Fatal(err)
	}
	ghost := uuid.NewString()
	for _, d := range []swarmbus.Direct{
		{ID: "q1", MysisID: ghost, Content: "to nobody"},
		{ID: "q2", MysisID: ids[0], Content: "queued order"},
		{ID: "q2", MysisID: ids[0], Content: "queued order"}, // a retried publish
	} {
		if _, err := obs.PublishDirect(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	mem.Await(10*time.Second, "the queued direct message", func() bool { return len(mem.Memories(ids[0])) == 1 })
	select {
	case ev := <-errEvents:
		if ev.GetMysisId() != ghost || !strings.Contains(ev.GetError().GetMessage(), "not found") {
			t.Fatalf("error event = %v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no error event for the undeliverable message")
	}
	// Drain: a direct message queued after the others, in the same stream, is handled after them.
	if _, err := obs.PublishDirect(ctx, swarmbus.Direct{ID: "q3", MysisID: ids[0], Content: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	mem.Await(10*time.Second, "the sentinel direct message", func() bool { return len(mem.Memories(ids[0])) >= 2 })
	if ms := mem.Memories(ids[0]); len(ms) != 2 || ms[0].GetIdempotencyKey() != "direct:q2" || ms[0].GetContent() != "queued order" {
		t.Fatalf("memories = %v", ms)
	}
}

func TestWatchEventsFilters(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 3)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()

	watch := func(req *busv1.WatchEventsRequest) chan *busv1.Event {
		stream, err := bus.client.WatchEvents(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Header(); err != nil { // the subscription is live once headers arrive
			t.Fatal(err)
		}
		ch := make(chan *busv1.Event, 100)
		go func() {
			for {
				resp, err := stream.Recv()
				if err != nil {
					close(ch)
					return
				}
				ch <- resp.GetEvent()
			}
		}()
		return ch
	}
	onlyBroadcastsOfM0 := watch(&busv1.WatchEventsRequest{MysisIds: []string{ids[0]}, Kinds: []busv1.EventKind{busv1.EventKind_EVENT_KIND_BROADCAST}})
	everythingOfM1 := watch(&busv1.WatchEventsRequest{MysisIds: []string{ids[1]}})
	all := watch(&busv1.WatchEventsRequest{})

	if _, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0], Content: "direct to m0"}); err != nil {
		t.Fatal(err)
	}
	bresp, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "to everyone"})
	if err != nil {
		t.Fatal(err)
	}
	next := func(ch chan *busv1.Event) *busv1.Event {
		t.Helper()
		select {
		case ev := <-ch:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return nil
		}
	}
	ev := next(onlyBroadcastsOfM0)
	if ev.GetMysisId() != ids[0] || ev.GetKind() != busv1.EventKind_EVENT_KIND_BROADCAST || ev.GetBroadcast().GetBroadcastId() != bresp.GetBroadcastId() ||
		ev.GetBroadcast().GetExcerpt() != "to everyone" {
		t.Fatalf("filtered watcher got %v", ev)
	}
	if ev := next(everythingOfM1); ev.GetMysisId() != ids[1] || ev.GetKind() != busv1.EventKind_EVENT_KIND_BROADCAST {
		t.Fatalf("m1 watcher got %v", ev)
	}
	kinds := map[string]int{}
	for range 4 { // one MEMORY_APPENDED for the direct, three BROADCAST
		ev := next(all)
		kinds[ev.GetKind().String()]++
		if ev.GetKind() == busv1.EventKind_EVENT_KIND_MEMORY_APPENDED && ev.GetMemoryAppended().GetExcerpt() != "direct to m0" {
			t.Fatalf("memory appended event = %v", ev)
		}
	}
	if kinds["EVENT_KIND_BROADCAST"] != 3 || kinds["EVENT_KIND_MEMORY_APPENDED"] != 1 {
		t.Fatalf("unfiltered watcher got %v", kinds)
	}
	// Nothing else reached the filtered watchers: every event above was published (the unfiltered watcher saw all
	// four) before this sentinel broadcast, and one subscription receives in publish order, so a leaked event would
	// arrive before the sentinel. Each filtered watcher's next event must be the sentinel itself.
	sentinel, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "sentinel"})
	if err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan *busv1.Event{"filtered watcher": onlyBroadcastsOfM0, "m1 watcher": everythingOfM1} {
		if ev := next(ch); ev.GetKind() != busv1.EventKind_EVENT_KIND_BROADCAST || ev.GetBroadcast().GetBroadcastId() != sentinel.GetBroadcastId() {
			t.Fatalf("%s got an extra event before the sentinel: %v", name, ev)
		}
	}
}

func TestBadInputsNameTheField(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 1)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	ctx := ctxT(t)
	long := strings.Repeat("x", 16<<10+1)
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"broadcast without content", func() error {
			_, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{})
			return err
		}, "content"},
		{"broadcast of whitespace", func() error {
			_, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "  \n"})
			return err
		}, "content"},
		{"broadcast over 16 KiB", func() error {
			_, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: long})
			return err
		}, "content"},
		{"broadcast with a NUL byte", func() error {
			_, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "a\x00b"})
			return err
		}, "content"},
		{"broadcast id not a UUID", func() error {
			_, err := bus.client.Broadcast(ctx, &busv1.BroadcastRequest{Content: "x", BroadcastId: "my-broadcast"})
			return err
		}, "broadcast_id"},
		{"direct without target", func() error {
			_, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Content: "x"})
			return err
		}, "mysis"},
		{"direct without content", func() error {
			_, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0]})
			return err
		}, "content"},
		{"direct over 16 KiB", func() error {
			_, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0], Content: long})
			return err
		}, "content"},
		{"direct with a bad message id", func() error {
			_, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0], Content: "x", MessageId: "a b"})
			return err
		}, "message_id"},
		{"direct from an unknown sender", func() error {
			_, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: ids[0], Content: "x", SenderId: uuid.NewString()})
			return err
		}, "sender_id"},
		{"watch an unknown kind", func() error { return watchErr(ctx, bus, &busv1.WatchEventsRequest{Kinds: []busv1.EventKind{1, 99}}) }, "kinds[1]"},
		{"watch a malformed mysis id", func() error {
			return watchErr(ctx, bus, &busv1.WatchEventsRequest{MysisIds: []string{ids[0], "zoea\u200b>"}})
		}, "mysis_ids[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			wantCode(t, err, codes.InvalidArgument)
			if got := fieldOf(err); got != c.field {
				t.Fatalf("field %q, want %q (%v)", got, c.field, err)
			}
			if !strings.Contains(status.Convert(err).Message(), c.field) {
				t.Fatalf("message %q does not name %s", status.Convert(err).Message(), c.field)
			}
		})
	}
	if n := mem.Broadcasts(); n != 0 {
		t.Fatalf("%d broadcasts recorded from bad requests", n)
	}
}

func watchErr(ctx context.Context, bus *busProc, req *busv1.WatchEventsRequest) error {
	stream, err := bus.client.WatchEvents(ctx, req)
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

func TestHealthFollowsDependencies(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	if err := server.Healthcheck(ctxT(t), bus.addr); err != nil {
		t.Fatalf("healthcheck subcommand's check: %v", err)
	}
	mem.Stop()
	bus.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	mem.Restart()
	bus.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
}

// With NATS gone a broadcast cannot be made durable: the caller hears Unavailable with the id to retry with, and
// a retry with that id once NATS is back is delivered once.
func TestBroadcastWithoutNATSIsUnavailableAndRetryable(t *testing.T) {
	dir := t.TempDir()
	nats := natstest.StartDir(t, dir)
	mem := memfake.Start(t)
	ids := mem.AddMyses("m", 3)
	port := nats.Port()
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	nats.Shutdown()
	bus.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	id := uuid.NewString()
	_, err := bus.client.Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "anyone?", BroadcastId: id})
	wantCode(t, err, codes.Unavailable)
	if !strings.Contains(status.Convert(err).Message(), id) {
		t.Fatalf("message does not give the id to retry with: %v", err)
	}
	if mem.Broadcasts() != 0 {
		t.Fatal("an unacknowledged broadcast was delivered")
	}

	// NATS comes back on the same address and store: the bus reconnects by itself and the retry goes through.
	natstest.StartDirPort(t, dir, port)
	bus.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	resp, err := bus.client.Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "anyone?", BroadcastId: id})
	if err != nil || resp.GetBroadcastId() != id {
		t.Fatalf("retry after NATS returned: %v %v", resp, err)
	}
	mem.Await(10*time.Second, "delivery after NATS returned", delivered(mem, id, 3))
	assertOnce(t, mem, ids, id, "anyone?")
}

func TestAdminTokenIsRequiredWhenSet(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	mem.AddMyses("m", 1)
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), token: "s3cret", waitReady: true})
	if _, err := bus.client.Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "with token"}); err != nil {
		t.Fatalf("with token: %v", err)
	}
	bare, err := server.Dial(bus.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	_, err = busv1.NewBusServiceClient(bare).Broadcast(ctxT(t), &busv1.BroadcastRequest{Content: "without"})
	wantCode(t, err, codes.Unauthenticated)
}

// A watch on a mysis that does not exist is refused instead of streaming nothing forever; a name is resolved.
func TestWatchResolvesOrRefusesMyses(t *testing.T) {
	nats := natstest.Start(t)
	mem := memfake.Start(t)
	wid := mem.AddMyses("w", 1)[0]
	bus := startBus(t, busSetup{natsURL: nats.ClientURL(), memAddr: mem.Addr(), waitReady: true})
	ctx := ctxT(t)
	for _, ref := range []string{uuid.NewString(), "nobody"} {
		stream, err := bus.client.WatchEvents(ctx, &busv1.WatchEventsRequest{MysisIds: []string{ref}})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.NotFound || !strings.Contains(status.Convert(err).Message(), "mysis_ids[0]") {
			t.Errorf("watch %q: %v, want NotFound naming mysis_ids[0]", ref, err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := bus.client.WatchEvents(wctx, &busv1.WatchEventsRequest{MysisIds: []string{"w-0000"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil { // sent once the subscription is live
		t.Fatalf("watch by name: %v", err)
	}
	if _, err := bus.client.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "w-0000", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil || resp.GetEvent().GetMysisId() != wid {
		t.Fatalf("watch by name got %v, %v; want an event of %s", resp, err, wid)
	}
}
