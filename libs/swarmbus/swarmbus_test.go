package swarmbus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func connect(t *testing.T, url string, opts swarmbus.Options) *swarmbus.Bus {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	b, err := swarmbus.Connect(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// collector records deliveries handled by a ConsumeMessages handler.
type collector struct {
	mu      sync.Mutex
	got     []swarmbus.Delivery
	seen    chan swarmbus.Delivery
	markers int // markers published (nothingBefore)
}

func newCollector() *collector { return &collector{seen: make(chan swarmbus.Delivery, 1000)} }

func (c *collector) handle(_ context.Context, d swarmbus.Delivery) error {
	c.mu.Lock()
	c.got = append(c.got, d)
	c.mu.Unlock()
	c.seen <- d
	return nil
}

func (c *collector) wait(t *testing.T, n int, within time.Duration) []swarmbus.Delivery {
	t.Helper()
	deadline := time.After(within)
	for range n {
		select {
		case <-c.seen:
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("got %d deliveries within %v, want %d", len(c.got), within, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]swarmbus.Delivery(nil), c.got...)
}

// nothingBefore proves that nothing more is delivered: it publishes a marker broadcast through b and waits for it.
// A consumer receives the stream in order, so a delivery the test says must not happen (a duplicate, a redelivery)
// would come before the marker; the marker arriving next is the event that shows there was none.
func (c *collector) nothingBefore(t *testing.T, b *swarmbus.Bus) {
	t.Helper()
	c.markers++
	id := fmt.Sprintf("marker-%d", c.markers)
	if _, err := b.PublishBroadcast(testCtx(t), swarmbus.Broadcast{ID: id, Content: "marker"}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-c.seen:
		if d.Broadcast == nil || d.Broadcast.ID != id {
			t.Fatalf("unexpected delivery before the marker: %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the marker was never delivered")
	}
	c.mu.Lock()
	c.got = c.got[:len(c.got)-1] // the marker is the test's, not a delivery under test
	c.mu.Unlock()
}

func consume(t *testing.T, b *swarmbus.Bus, opts swarmbus.ConsumerOptions, h func(context.Context, swarmbus.Delivery) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if opts.FetchWait == 0 {
		opts.FetchWait = 200 * time.Millisecond
	}
	go func() {
		defer close(done)
		if err := b.ConsumeMessages(ctx, opts, h); err != nil {
			t.Errorf("ConsumeMessages: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestConnectConcurrentlyIsIdempotent(t *testing.T) {
	srv := natstest.Start(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			b, err := swarmbus.Connect(ctx, srv.ClientURL(), swarmbus.Options{Logger: quietLogger()})
			if err != nil {
				errs <- err
				return
			}
			b.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent connect: %v", err)
	}
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	if err := b.Ready(testCtx(t)); err != nil {
		t.Fatalf("ready: %v", err)
	}
	if got := b.LeaseTTL(); got != swarmbus.DefaultLeaseTTL {
		t.Fatalf("lease TTL %v, want default %v", got, swarmbus.DefaultLeaseTTL)
	}
}

// logSignal is a slog handler that closes ch at the first record whose message is msg and drops everything.
type logSignal struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

// A process may start before NATS: Connect keeps trying, and NATS is started only once the client has reported a
// failed attempt, so the test always covers the retry path.
func TestConnectWaitsForNATS(t *testing.T) {
	// Reserve a port, start nothing on it yet.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close()
	failed := make(chan struct{})
	log := slog.New(logSignal{msg: swarmbus.LogConnectAttemptFailed, once: new(sync.Once), ch: failed})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		b   *swarmbus.Bus
		err error
	}
	res := make(chan result, 1)
	go func() {
		b, err := swarmbus.Connect(ctx, "nats://127.0.0.1:"+strconv.Itoa(port), swarmbus.Options{Logger: log})
		res <- result{b, err}
	}()
	select {
	case <-failed:
	case r := <-res:
		t.Fatalf("Connect returned before NATS was started: %v", r.err)
	case <-ctx.Done():
		t.Fatal("the client never reported a failed connect attempt")
	}
	natstest.StartDirPort(t, t.TempDir(), port)
	r := <-res
	if r.err != nil {
		t.Fatalf("connect after late NATS start: %v", r.err)
	}
	t.Cleanup(r.b.Close)
	if err := r.b.Ready(testCtx(t)); err != nil {
		t.Fatalf("ready after late NATS start: %v", err)
	}
}

func TestRetriedBroadcastPublishIsDeduplicated(t *testing.T) {
	srv := natstest.Start(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx := testCtx(t)
	bc := swarmbus.Broadcast{ID: "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11", Content: "Explore the universe!"}
	first, err := b.PublishBroadcast(ctx, bc)
	if err != nil || first.Duplicate {
		t.Fatalf("first publish: %+v %v", first, err)
	}
	again, err := b.PublishBroadcast(ctx, bc)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("retried publish = %+v, want duplicate of seq %d", again, first.Seq)
	}
	other, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "other", Content: "Mine iron ore"})
	if err != nil || other.Duplicate {
		t.Fatalf("distinct publish: %+v %v", other, err)
	}

	c := newCollector()
	consume(t, b, swarmbus.ConsumerOptions{}, c.handle)
	got := c.wait(t, 2, 10*time.Second)
	c.nothingBefore(t, b) // the retried publish was not stored a second time
	if got[0].Broadcast.ID != bc.ID || got[0].Broadcast.Content != bc.Content || got[1].Broadcast.ID != "other" {
		t.Fatalf("deliveries out of order or wrong: %+v / %+v", got[0].Broadcast, got[1].Broadcast)
	}
	if got[0].Broadcast.At.IsZero() {
		t.Fatal("broadcast time not set")
	}
}

func TestPublishRejectsBadIDs(t *testing.T) {
	srv := natstest.Start(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx := testCtx(t)
	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{Content: "x"}); !errors.Is(err, swarmbus.ErrInvalidID) {
		t.Fatalf("empty broadcast id: %v", err)
	}
	if _, err := b.PublishDirect(ctx, swarmbus.Direct{ID: "m1", MysisID: "a.b", Content: "x"}); !errors.Is(err, swarmbus.ErrInvalidID) {
		t.Fatalf("dotted mysis id: %v", err)
	}
	if err := b.PublishWake(ctx, "*", swarmbus.WakeStart); !errors.Is(err, swarmbus.ErrInvalidID) {
		t.Fatalf("wildcard wake: %v", err)
	}
	if err := b.PublishWake(ctx, "m1", "dance"); err == nil {
		t.Fatal("unknown wake reason accepted")
	}
}

// An acknowledged broadcast is on disk: it survives a NATS restart on the same store, and the same Bus
// reconnects by itself and keeps working.
func TestBroadcastsSurviveNATSRestart(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.StartDir(t, dir)
	port := srv.Port()
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	reconnected := make(chan struct{}, 1)
	b.OnReconnect(func() { reconnected <- struct{}{} })
	ctx := testCtx(t)
	for i := range 3 {
		if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: fmt.Sprintf("b%d", i), Content: fmt.Sprintf("mission %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.PublishDirect(ctx, swarmbus.Direct{ID: "d0", MysisID: "m1", Content: "hello m1"}); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	natstest.StartDirPort(t, dir, port)

	// Published while the client may still be reconnecting: the publish waits and retries with the same id.
	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "b3", Content: "mission 3"}); err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("OnReconnect callback not called after the restart")
	}
	c := newCollector()
	consume(t, b, swarmbus.ConsumerOptions{}, c.handle)
	got := c.wait(t, 5, 15*time.Second)
	c.nothingBefore(t, b) // nothing was stored twice across the restart
	want := []string{"b0", "b1", "b2", "direct d0", "b3"}
	for i, d := range got {
		id := ""
		switch {
		case d.Broadcast != nil:
			id = d.Broadcast.ID
		case d.Direct != nil:
			id = "direct " + d.Direct.ID
			if d.Direct.MysisID != "m1" || d.Direct.Content != "hello m1" || d.Direct.IdempotencyKey() != "direct:d0" {
				t.Fatalf("direct = %+v", d.Direct)
			}
		}
		if id != want[i] {
			t.Fatalf("delivery %d = %s, want %s (order kept across the restart)", i, id, want[i])
		}
	}
}

// A failing handler is retried with backoff and holds back the messages behind it; a permanent failure terminates
// the message and lets the rest through.
func TestConsumeRetriesInOrderAndTerminatesPermanentFailures(t *testing.T) {
	srv := natstest.Start(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx := testCtx(t)
	for _, id := range []string{"flaky", "poison", "after"} {
		if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: id, Content: id}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []string
	attempts := map[string]int{}
	done := make(chan struct{})
	consume(t, b, swarmbus.ConsumerOptions{RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond}, func(_ context.Context, d swarmbus.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		id := d.Broadcast.ID
		attempts[id]++
		order = append(order, fmt.Sprintf("%s#%d", id, d.Attempt))
		switch {
		case id == "flaky" && d.Attempt < 3:
			return errors.New("memory unavailable")
		case id == "poison":
			return swarmbus.Permanent(errors.New("invalid content"))
		case id == "sentinel":
			close(done)
		}
		return nil
	})
	// The consumer handles one message at a time in stream order: once a sentinel published last is handled, no
	// retry of an earlier message can still be pending.
	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "sentinel", Content: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the sentinel never delivered")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"flaky#1", "flaky#2", "flaky#3", "poison#1", "after#1", "sentinel#1"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("handling order %v, want %v", order, want)
	}
}

// Several bus replicas share the durable consumer: every message is handled once overall, in order.
func TestReplicasShareTheConsumer(t *testing.T) {
	srv := natstest.Start(t)
	pub := connect(t, srv.ClientURL(), swarmbus.Options{})
	var mu sync.Mutex
	var handled []string
	sentinel := make(chan struct{})
	const n = 30
	h := func(_ context.Context, d swarmbus.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, d.Broadcast.ID)
		if d.Broadcast.ID == "sentinel" {
			close(sentinel)
		}
		return nil
	}
	for range 3 {
		consume(t, connect(t, srv.ClientURL(), swarmbus.Options{}), swarmbus.ConsumerOptions{}, h)
	}
	ctx := testCtx(t)
	for i := range n {
		if _, err := pub.PublishBroadcast(ctx, swarmbus.Broadcast{ID: fmt.Sprintf("b%02d", i), Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// A sentinel published last is handled last (MaxAckPending 1 across replicas): after it, nothing is pending.
	if _, err := pub.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "sentinel", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sentinel:
	case <-time.After(15 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("handled %d of %d and no sentinel", len(handled), n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != n+1 {
		t.Fatalf("handled %d messages, want %d and the sentinel (no duplicates)", len(handled), n)
	}
	handled = handled[:n]
	for i, id := range handled {
		if id != fmt.Sprintf("b%02d", i) {
			t.Fatalf("handled[%d] = %s: order not kept across replicas (%v)", i, id, handled)
		}
	}
}

// A consumer stopped while its handler runs lets the handler finish and acknowledges; a new consumer does not see
// the message again.
func TestShutdownFinishesTheRunningHandler(t *testing.T) {
	srv := natstest.Start(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx := testCtx(t)
	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "slow", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	// The handler runs until the consumer is told to stop (its context ends: the shutdown has begun), then checks
	// that its own context was not cut, and finishes; stop must wait for it.
	consumerCtx, cancel := context.WithCancel(context.Background())
	started, done := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	var cutErr atomic.Value
	go func() {
		defer close(done)
		if err := b.ConsumeMessages(consumerCtx, swarmbus.ConsumerOptions{FetchWait: 200 * time.Millisecond}, func(hctx context.Context, _ swarmbus.Delivery) error {
			close(started)
			<-consumerCtx.Done()
			if err := hctx.Err(); err != nil {
				cutErr.Store(err)
				return err
			}
			finished.Store(true)
			return nil
		}); err != nil {
			t.Errorf("ConsumeMessages: %v", err)
		}
	}()
	<-started
	cancel()
	<-done
	if err := cutErr.Load(); err != nil {
		t.Fatalf("shutdown cut the running handler's context: %v", err)
	}
	if !finished.Load() {
		t.Fatal("ConsumeMessages returned before the running handler finished")
	}
	c := newCollector()
	consume(t, b, swarmbus.ConsumerOptions{}, c.handle)
	c.nothingBefore(t, b) // the finished handler's message was acknowledged: it is not delivered again
}

func TestWakesFanOutToEverySubscriber(t *testing.T) {
	srv := natstest.Start(t)
	pub := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx := testCtx(t)
	type rec struct {
		replica int
		wake    swarmbus.Wake
	}
	got := make(chan rec, 100)
	for r := range 2 {
		sb := connect(t, srv.ClientURL(), swarmbus.Options{})
		if _, err := sb.SubscribeWakes(ctx, func(_ context.Context, w swarmbus.Wake) { got <- rec{r, w} }); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.PublishWake(ctx, "m1", swarmbus.WakeDirect); err != nil {
		t.Fatal(err)
	}
	if err := pub.PublishWakes(ctx, []string{"m2", "m3"}, swarmbus.WakeBroadcast); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 6 {
		select {
		case r := <-got:
			if r.wake.At.IsZero() {
				t.Errorf("wake without time: %+v", r.wake)
			}
			seen[fmt.Sprintf("%d/%s/%s", r.replica, r.wake.MysisID, r.wake.Reason)]++
		case <-time.After(5 * time.Second):
			t.Fatalf("wakes seen: %v", seen)
		}
	}
	for _, k := range []string{"0/m1/direct", "1/m1/direct", "0/m2/broadcast", "1/m2/broadcast", "0/m3/broadcast", "1/m3/broadcast"} {
		if seen[k] != 1 {
			t.Errorf("wake %s seen %d times, want 1 (all: %v)", k, seen[k], seen)
		}
	}
}

func TestEventsAreFilteredAndCarryTraceContext(t *testing.T) {
	srv := natstest.Start(t)
	prop := propagation.TraceContext{}
	pub := connect(t, srv.ClientURL(), swarmbus.Options{Propagator: prop})
	sub := connect(t, srv.ClientURL(), swarmbus.Options{Propagator: prop})
	ctx := testCtx(t)

	type got struct {
		ev *busv1.Event
		sc trace.SpanContext
	}
	filtered := make(chan got, 100)
	everything := make(chan got, 100)
	if _, err := sub.SubscribeEvents(ctx, swarmbus.EventFilter{
		MysisIDs: []string{"a", "c"},
		Kinds:    []busv1.EventKind{busv1.EventKind_EVENT_KIND_STATE_CHANGED, busv1.EventKind_EVENT_KIND_BROADCAST},
	}, func(hctx context.Context, ev *busv1.Event) {
		filtered <- got{ev, trace.SpanContextFromContext(hctx)}
	}); err != nil {
		t.Fatal(err)
	}
	// More ids than per-subject subscriptions: one wildcard subscription filtered locally.
	many := []string{"a"}
	for i := range 100 {
		many = append(many, fmt.Sprintf("x%d", i))
	}
	manyCh := make(chan *busv1.Event, 100)
	if _, err := sub.SubscribeEvents(ctx, swarmbus.EventFilter{MysisIDs: many}, func(_ context.Context, ev *busv1.Event) { manyCh <- ev }); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.SubscribeEvents(ctx, swarmbus.EventFilter{Kinds: []busv1.EventKind{busv1.EventKind_EVENT_KIND_UNSPECIFIED}}, func(hctx context.Context, ev *busv1.Event) {
		everything <- got{ev, trace.SpanContextFromContext(hctx)}
	}); err != nil {
		t.Fatal(err)
	}

	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	spanCtx, span := tp.Tracer("test").Start(ctx, "runner turn")
	defer span.End()

	stateChanged := func(mysis string) *busv1.Event {
		return &busv1.Event{MysisId: mysis, Kind: busv1.EventKind_EVENT_KIND_STATE_CHANGED, Payload: &busv1.Event_StateChanged{StateChanged: &busv1.StateChanged{Reason: "wake"}}}
	}
	events := []*busv1.Event{
		stateChanged("a"),
		{MysisId: "a", Kind: busv1.EventKind_EVENT_KIND_TOOL_CALLED, Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: "mine"}}},
		stateChanged("b"),
		{Kind: busv1.EventKind_EVENT_KIND_ERROR, Payload: &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: "swarm-wide"}}},
		{MysisId: "c", Kind: busv1.EventKind_EVENT_KIND_BROADCAST, Payload: &busv1.Event_Broadcast{Broadcast: &busv1.BroadcastDelivered{BroadcastId: "b1"}}},
	}
	for _, ev := range events {
		if err := pub.PublishEvent(spanCtx, ev); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(ch chan got, n int) []got {
		var out []got
		for range n {
			select {
			case g := <-ch:
				out = append(out, g)
			case <-time.After(5 * time.Second):
				t.Fatalf("received %d events, want %d", len(out), n)
			}
		}
		return out
	}
	f := recv(filtered, 2)
	if f[0].ev.GetMysisId() != "a" || f[0].ev.GetKind() != busv1.EventKind_EVENT_KIND_STATE_CHANGED || f[0].ev.GetStateChanged().GetReason() != "wake" {
		t.Errorf("first filtered event = %v", f[0].ev)
	}
	if f[1].ev.GetMysisId() != "c" || f[1].ev.GetBroadcast().GetBroadcastId() != "b1" {
		t.Errorf("second filtered event = %v", f[1].ev)
	}
	for _, g := range f {
		if g.ev.GetId() == "" || g.ev.GetAt() == nil {
			t.Errorf("event id/at not filled in: %v", g.ev)
		}
		if !g.sc.IsRemote() || g.sc.TraceID() != span.SpanContext().TraceID() || g.sc.SpanID() != span.SpanContext().SpanID() {
			t.Errorf("trace context lost: got %v, want trace %s span %s", g.sc, span.SpanContext().TraceID(), span.SpanContext().SpanID())
		}
	}
	all := recv(everything, len(events))
	if all[3].ev.GetMysisId() != "" || all[3].ev.GetError().GetMessage() != "swarm-wide" {
		t.Errorf("swarm-wide event = %v", all[3].ev)
	}
	for range 2 {
		select {
		case ev := <-manyCh:
			if ev.GetMysisId() != "a" {
				t.Errorf("wildcard-filtered subscription got mysis %q", ev.GetMysisId())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("wildcard-filtered subscription missed events of a")
		}
	}
	// Events reach a subscription in publish order: a marker that passes both filters, published last, must be the
	// next event each receives; anything before it is an event the filters let through.
	marker := &busv1.Event{MysisId: "a", Kind: busv1.EventKind_EVENT_KIND_STATE_CHANGED, Payload: &busv1.Event_StateChanged{StateChanged: &busv1.StateChanged{Reason: "marker"}}}
	if err := pub.PublishEvent(spanCtx, marker); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-filtered:
		if g.ev.GetStateChanged().GetReason() != "marker" {
			t.Fatalf("filter let through %v", g.ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the filtered subscription never received the marker")
	}
	select {
	case ev := <-manyCh:
		if ev.GetStateChanged().GetReason() != "marker" {
			t.Fatalf("wildcard filter let through %v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wildcard-filtered subscription never received the marker")
	}
}

func TestSubscriptionEndsWithItsContext(t *testing.T) {
	srv := natstest.Start(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	sub, err := b.SubscribeEvents(ctx, swarmbus.EventFilter{}, func(context.Context, *busv1.Event) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-sub.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("subscription did not end with its context")
	}
	sub.Stop() // idempotent
	// A live subscription on the same connection sees the event; by then the ended one would have seen it too.
	seen := make(chan struct{}, 1)
	live, err := b.SubscribeEvents(testCtx(t), swarmbus.EventFilter{}, func(context.Context, *busv1.Event) {
		select {
		case seen <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()
	if err := b.PublishEvent(context.Background(), &busv1.Event{MysisId: "a", Kind: busv1.EventKind_EVENT_KIND_ERROR}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the live subscription never saw the event")
	}
	if n.Load() != 0 {
		t.Fatal("handler called after the subscription ended")
	}
}

func TestLeasesSingleHolderRenewExpiryAndTakeover(t *testing.T) {
	srv := natstest.Start(t)
	const ttl = 2 * time.Second
	ba := connect(t, srv.ClientURL(), swarmbus.Options{LeaseTTL: ttl})
	bb := connect(t, srv.ClientURL(), swarmbus.Options{})
	if bb.LeaseTTL() != ttl {
		t.Fatalf("second process sees TTL %v, want the bucket's %v", bb.LeaseTTL(), ttl)
	}
	a, _ := ba.Leases("replica-a")
	b, _ := bb.Leases("replica-b")
	ctx := testCtx(t)

	ok, err := a.Acquire(ctx, "m1")
	if err != nil || !ok {
		t.Fatalf("a acquire: %v %v", ok, err)
	}
	if ok, err := a.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("a re-acquire of its own lease: %v %v", ok, err)
	}
	if ok, err := b.Acquire(ctx, "m1"); err != nil || ok {
		t.Fatalf("b acquired a held lease: %v %v", ok, err)
	}
	if owner, _ := b.Owner(ctx, "m1"); owner != "replica-a" {
		t.Fatalf("owner = %q", owner)
	}
	if owner, _ := b.Owner(ctx, "nobody"); owner != "" {
		t.Fatalf("owner of a free lease = %q", owner)
	}

	// b watches for free leases and grabs them.
	acquired := make(chan time.Time, 10)
	var takingOver atomic.Bool
	takingOver.Store(true)
	go func() {
		_ = b.Watch(ctx, func(ev swarmbus.LeaseEvent) {
			if ev.Owner == "" && takingOver.Load() {
				if ok, err := b.Acquire(ctx, ev.MysisID); err == nil && ok {
					acquired <- time.Now()
				}
			}
		})
	}()

	// While a renews, the lease outlives several TTLs. This is a real wall-clock wait, on purpose: the NATS server
	// enforces the TTL with its own clock, so only real time passing shows that renewals keep the entry alive. a
	// renews every TTL/3, as a runner does.
	renew := time.NewTicker(ttl / 3)
	for range 6 {
		<-renew.C
		if err := a.Renew(ctx, "m1"); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	renew.Stop()
	if !a.Valid("m1") {
		t.Fatal("freshly renewed lease not valid")
	}
	select {
	case <-acquired:
		t.Fatal("b took over a lease that was being renewed")
	default:
	}

	// a stops renewing (crashed): b takes over within TTL + ε.
	lastRenew := time.Now()
	var took time.Time
	select {
	case took = <-acquired:
	case <-time.After(ttl + 3*time.Second):
		t.Fatal("b never took over the expired lease")
	}
	if d := took.Sub(lastRenew); d > ttl+2*time.Second || d < ttl-200*time.Millisecond {
		t.Fatalf("takeover after %v, want about TTL %v", d, ttl)
	}
	t.Logf("takeover %v after the last renewal (TTL %v)", took.Sub(lastRenew), ttl)
	takingOver.Store(false)
	if a.Valid("m1") {
		t.Fatal("a still believes its expired lease valid")
	}
	if err := a.Renew(ctx, "m1"); !errors.Is(err, swarmbus.ErrLeaseLost) {
		t.Fatalf("renew of a lost lease: %v, want ErrLeaseLost", err)
	}
	if len(a.Held()) != 0 {
		t.Fatalf("a still lists %v", a.Held())
	}
	if owner, _ := a.Owner(ctx, "m1"); owner != "replica-b" {
		t.Fatalf("owner after takeover = %q", owner)
	}
	owners, err := a.Owners(ctx)
	if err != nil || len(owners) != 1 || owners["m1"] != "replica-b" {
		t.Fatalf("owners = %v %v", owners, err)
	}

	// A release frees it at once (no TTL wait), and only the holder's release counts.
	if err := a.Release(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if owner, _ := a.Owner(ctx, "m1"); owner != "replica-b" {
		t.Fatalf("a non-holder's release freed the lease (owner %q)", owner)
	}
	if err := b.Release(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Acquire(ctx, "m1"); err != nil || !ok {
		t.Fatalf("acquire right after release: %v %v", ok, err)
	}
}

func TestOnlyOneConcurrentAcquirerWins(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		l, _ := connect(t, srv.ClientURL(), swarmbus.Options{}).Leases(fmt.Sprintf("r%d", i))
		wg.Go(func() {
			ok, err := l.Acquire(ctx, "contested")
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d holders acquired the same lease", wins.Load())
	}
}

func TestRenewAllRenewsManyLeasesWithinTheTTL(t *testing.T) {
	srv := natstest.Start(t)
	bus := connect(t, srv.ClientURL(), swarmbus.Options{LeaseTTL: 5 * time.Second})
	a, _ := bus.Leases("a")
	ctx := testCtx(t)
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if ok, err := a.Acquire(ctx, fmt.Sprintf("m%03d", i)); err != nil || !ok {
				t.Error(ok, err)
			}
		})
	}
	wg.Wait()
	start := time.Now()
	lost, err := a.RenewAll(ctx)
	if err != nil || len(lost) != 0 {
		t.Fatalf("RenewAll = %v, %v", lost, err)
	}
	t.Logf("renewed %d leases in %v", n, time.Since(start))
	for i := range n {
		if !a.Valid(fmt.Sprintf("m%03d", i)) {
			t.Fatalf("m%03d not valid after RenewAll", i)
		}
	}
}

func TestRenewAllReportsLostLeases(t *testing.T) {
	srv := natstest.Start(t)
	bus := connect(t, srv.ClientURL(), swarmbus.Options{LeaseTTL: time.Second})
	a, _ := bus.Leases("a")
	ctx := testCtx(t)
	for _, id := range []string{"m1", "m2"} {
		if ok, err := a.Acquire(ctx, id); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	// Someone force-frees m2 behind a's back (an operator, or a's lease expiring and being taken).
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, swarmbus.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "mysis.m2", []byte("intruder")); err != nil {
		t.Fatal(err)
	}
	lost, err := a.RenewAll(ctx)
	if err != nil || len(lost) != 1 || lost[0] != "m2" {
		t.Fatalf("RenewAll = %v, %v; want [m2]", lost, err)
	}
	if held := a.Held(); len(held) != 1 || held[0] != "m1" {
		t.Fatalf("held = %v", held)
	}
	if err := a.ReleaseAll(ctx); err != nil || len(a.Held()) != 0 {
		t.Fatalf("ReleaseAll: %v, still held %v", err, a.Held())
	}
	if owner, _ := a.Owner(ctx, "m1"); owner != "" {
		t.Fatalf("m1 still owned by %q after ReleaseAll", owner)
	}
	if owner, _ := a.Owner(ctx, "m2"); owner != "intruder" {
		t.Fatalf("ReleaseAll released a lease it did not hold (owner %q)", owner)
	}
}

func TestDeliveryReadyFollowsTheConsumer(t *testing.T) {
	srv := natstest.Start(t)
	b := connect(t, srv.ClientURL(), swarmbus.Options{})
	ctx := testCtx(t)
	if err := b.DeliveryReady(ctx); err == nil {
		t.Fatal("ready before any consumer ran")
	}
	c := newCollector()
	stop := consume(t, b, swarmbus.ConsumerOptions{}, c.handle)
	// A handler runs only on a working consumer: once one message is handled, the consumer is ready.
	if _, err := b.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "ready", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 1, 10*time.Second)
	if err := b.DeliveryReady(ctx); err != nil {
		t.Fatalf("not ready while consuming: %v", err)
	}
	stop()
	if err := b.DeliveryReady(ctx); err == nil {
		t.Fatal("still ready after the consumer stopped")
	}
}
