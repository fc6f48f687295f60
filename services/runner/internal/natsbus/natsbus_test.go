package natsbus_test

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/natsbus"
)

// Real NATS (libs/testsupport/natstest), real swarmbus on both sides: what a runner replica publishes is what the bus service
// and the CLI receive.

func connect(t *testing.T, url string) *swarmbus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	b, err := swarmbus.Connect(ctx, url, swarmbus.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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

type received struct {
	ev  *busv1.Event
	ctx context.Context
}

// The actor's events leave the runner as protobuf bus events on the mysis's subject, with the kind, mysis id and
// payload converted, and with the turn's trace context and baggage in the NATS headers.
func TestEventsReachSubscribersWithTraceContext(t *testing.T) {
	srv := natstest.Start(t)
	runnerBus := connect(t, srv.ClientURL())
	watcherBus := connect(t, srv.ClientURL())
	ctx := testCtx(t)

	got := make(chan received, 10)
	if _, err := watcherBus.SubscribeEvents(ctx, swarmbus.EventFilter{MysisIDs: []string{"m1"}}, func(hctx context.Context, ev *busv1.Event) {
		got <- received{ev, hctx}
	}); err != nil {
		t.Fatal(err)
	}

	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	member, err := baggage.NewMember("mysis", "m1")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	turnCtx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(ctx, sc), bag)

	events := natsbus.Events{Bus: runnerBus}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	events.Publish(turnCtx, mysis.Event{MysisID: "other", Kind: mysis.EventError, At: at, Message: "not for this watcher"})
	events.Publish(turnCtx, mysis.Event{MysisID: "m1", Kind: mysis.EventToolCalled, At: at,
		Tool: "mine", CallID: "call_7", IsError: true, Duration: 1500 * time.Millisecond, Excerpt: "Error: cargo_full: hold is full"})
	events.Publish(turnCtx, mysis.Event{MysisID: "m1", Kind: mysis.EventStateChanged, At: at,
		From: mysis.StateRunning, To: mysis.StateIdle, Reason: mysis.IdleReason})
	events.Publish(turnCtx, mysis.Event{MysisID: "m1", Kind: mysis.EventMemoryAppended, At: at,
		MemoryIDs: []int64{41}, Seqs: []int64{12}, Role: chat.RoleAssistant, Excerpt: "calls mine"})

	recv := func() received {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("event not received within 5s")
			return received{}
		}
	}
	check := func(r received, kind busv1.EventKind) {
		t.Helper()
		if r.ev.GetMysisId() != "m1" || r.ev.GetKind() != kind {
			t.Fatalf("event = %v, want mysis m1 kind %s", r.ev, kind)
		}
		if r.ev.GetId() == "" || !r.ev.GetAt().AsTime().Equal(at) {
			t.Errorf("event id %q at %v, want an id and %v", r.ev.GetId(), r.ev.GetAt().AsTime(), at)
		}
		rsc := trace.SpanContextFromContext(r.ctx)
		if !rsc.IsRemote() || rsc.TraceID() != sc.TraceID() || rsc.SpanID() != sc.SpanID() || !rsc.IsSampled() {
			t.Errorf("trace context = %v, want remote trace %s span %s sampled", rsc, sc.TraceID(), sc.SpanID())
		}
		if v := baggage.FromContext(r.ctx).Member("mysis").Value(); v != "m1" {
			t.Errorf("baggage mysis = %q, want m1", v)
		}
	}

	r := recv()
	check(r, busv1.EventKind_EVENT_KIND_TOOL_CALLED)
	tc := r.ev.GetToolCalled()
	if tc.GetTool() != "mine" || tc.GetCallId() != "call_7" || !tc.GetIsError() || tc.GetDurationMs() != 1500 || tc.GetExcerpt() != "Error: cargo_full: hold is full" {
		t.Errorf("tool called payload = %v", tc)
	}
	r = recv()
	check(r, busv1.EventKind_EVENT_KIND_STATE_CHANGED)
	st := r.ev.GetStateChanged()
	if st.GetFrom() != memoryv1.MysisState_MYSIS_STATE_RUNNING || st.GetTo() != memoryv1.MysisState_MYSIS_STATE_IDLE || st.GetReason() != mysis.IdleReason {
		t.Errorf("state changed payload = %v", st)
	}
	r = recv()
	check(r, busv1.EventKind_EVENT_KIND_MEMORY_APPENDED)
	ma := r.ev.GetMemoryAppended()
	if len(ma.GetMemoryIds()) != 1 || ma.GetMemoryIds()[0] != 41 || ma.GetSeqs()[0] != 12 || ma.GetRole() != memoryv1.Role_ROLE_ASSISTANT || ma.GetExcerpt() != "calls mine" {
		t.Errorf("memory appended payload = %v", ma)
	}
	// Nothing else comes through: one connection publishes in order and the subscriber receives in order, so an
	// event of another mysis let through would arrive before this sentinel, published after it.
	events.Publish(turnCtx, mysis.Event{MysisID: "other", Kind: mysis.EventError, At: at, Message: "not for this watcher either"})
	events.Publish(turnCtx, mysis.Event{MysisID: "m1", Kind: mysis.EventError, At: at, Message: "sentinel"})
	if r := recv(); r.ev.GetMysisId() != "m1" || r.ev.GetError().GetMessage() != "sentinel" {
		t.Fatalf("the filter let through %v", r.ev)
	}
}

// A status written by the replica that runs a mysis is answered by every replica's mirror; an older write (a
// replica that just lost the mysis) does not overwrite a newer one; a delete is mirrored.
func TestStatusesAreSharedBetweenReplicas(t *testing.T) {
	srv := natstest.Start(t)
	r1 := natsbus.NewStatuses(connect(t, srv.ClientURL()).Statuses(), nil)
	r2 := natsbus.NewStatuses(connect(t, srv.ClientURL()).Statuses(), nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- r2.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})

	// eventually re-checks cond each time r2's watch mirrors a write, until ctx (testCtx: 30 s) ends.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for {
			changed := r2.Changed()
			if cond() {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("no mirrored write made %s true: %v", what, ctx.Err())
			}
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	want := mysis.Status{MysisID: "m1", Owner: "r1", State: mysis.StateRunning, LastAction: "mine", LastActionAt: now,
		Credits: 250, Turns: 7, UpdatedAt: now, Ship: &mysis.Ship{System: "sol", POI: "main_belt", Class: "starter_miner",
			Hull: 90, MaxHull: 100, Fuel: 40, MaxFuel: 50, CargoUsed: 12, CargoCapacity: 50, CreditsEarned: 300, At: now,
			Cargo: []mysis.CargoItem{{ItemID: "ore_iron", Quantity: 12}}}}
	r1.PutStatus(ctx, want)
	if got, ok := r1.Get("m1"); !ok || got != want {
		t.Fatalf("writer's own view = %+v, %v", got, ok)
	}
	eventually("the other replica to mirror the status", func() bool {
		got, ok := r2.Get("m1")
		return ok && got.Owner == want.Owner && got.Turns == want.Turns && got.Credits == want.Credits &&
			got.State == want.State && got.LastAction == want.LastAction && got.UpdatedAt.Equal(want.UpdatedAt) &&
			got.Ship != nil && got.Ship.At.Equal(want.Ship.At) && reflect.DeepEqual(withoutAt(*got.Ship), withoutAt(*want.Ship))
	})

	newer := want
	newer.Turns, newer.UpdatedAt = 8, now.Add(time.Second)
	r1.PutStatus(ctx, newer)
	eventually("the newer status", func() bool { got, _ := r2.Get("m1"); return got.Turns == 8 })
	stale := want
	stale.Owner, stale.Turns, stale.UpdatedAt = "r0", 6, now.Add(-time.Second)
	r1.PutStatus(ctx, stale)
	// The watch delivers in write order: once the sentinel is mirrored, the stale write has been seen.
	r1.PutStatus(ctx, mysis.Status{MysisID: "sentinel", UpdatedAt: now})
	eventually("the sentinel", func() bool { _, ok := r2.Get("sentinel"); return ok })
	if got, _ := r2.Get("m1"); got.Turns != 8 || got.Owner != "r1" {
		t.Errorf("a stale status replaced a newer one: %+v", got)
	}

	r1.Delete(ctx, "m1")
	eventually("the deletion", func() bool { _, ok := r2.Get("m1"); return !ok })
}

// withoutAt is a ship view without its time, which a round trip through JSON re-creates with another location.
func withoutAt(sh mysis.Ship) mysis.Ship {
	sh.At = time.Time{}
	return sh
}
