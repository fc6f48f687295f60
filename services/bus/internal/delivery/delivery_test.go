package delivery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
	"github.com/zoeaswarm/zoea/services/bus/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// memory is the shared in-memory memory service (libs/testsupport/memfake, held to libs/testsupport/memorycontract like the real
// one) behind the real memoryclient adapter: what delivery writes to in production. Failures are injected into the
// fake's RPCs (FailAll), so they reach delivery as the adapter turns real statuses into libs/errs errors.
func memory(t *testing.T) (*memfake.Fake, delivery.Memory) {
	t.Helper()
	f := memfake.Start(t)
	return f, memoryclient.New(f.Client(t))
}

// event is one announcement the fake notifier saw.
type event struct {
	kind, mysisID, detail string
}

// fakeNotifier records wakes and events.
type fakeNotifier struct {
	mu      sync.Mutex
	wakeErr error
	wakes   map[string]delivery.WakeReason
	events  []event
}

func (n *fakeNotifier) PublishWake(_ context.Context, id string, r delivery.WakeReason) error {
	return n.PublishWakes(context.Background(), []string{id}, r)
}

func (n *fakeNotifier) PublishWakes(_ context.Context, ids []string, r delivery.WakeReason) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wakeErr != nil {
		return n.wakeErr
	}
	if n.wakes == nil {
		n.wakes = map[string]delivery.WakeReason{}
	}
	for _, id := range ids {
		n.wakes[id] = r
	}
	return nil
}

func (n *fakeNotifier) record(ev event) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
	return nil
}

func (n *fakeNotifier) BroadcastDelivered(_ context.Context, id string, b message.Broadcast, _ string) error {
	return n.record(event{"broadcast", id, b.ID + " from " + b.SenderID})
}

func (n *fakeNotifier) DirectStored(_ context.Context, m message.Stored, _ string) error {
	return n.record(event{"direct", m.MysisID, m.IdempotencyKey})
}

func (n *fakeNotifier) Dropped(_ context.Context, id, reason string) error {
	return n.record(event{"error", id, reason})
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestBroadcastWakesEveryoneButTheSender(t *testing.T) {
	fake, mem := memory(t)
	ids := fake.AddMyses("m", 4)
	n := &fakeNotifier{}
	b1 := uuid.NewString()
	res, err := delivery.New(mem, n, quiet()).Broadcast(context.Background(), message.Broadcast{ID: b1, SenderID: ids[2], Content: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Targets != 3 || res.Delivered != 3 {
		t.Fatalf("result = %+v", res)
	}
	if len(n.wakes) != 3 || n.wakes[ids[2]] != "" || n.wakes[ids[0]] != delivery.WakeBroadcast {
		t.Fatalf("wakes = %v", n.wakes)
	}
	if len(n.events) != 3 || n.events[0] != (event{"broadcast", ids[0], b1 + " from " + ids[2]}) {
		t.Fatalf("events = %v", n.events)
	}
	if rows := fake.BroadcastRows(b1); len(rows) != 3 || rows[ids[2]] != 0 {
		t.Fatalf("rows per mysis = %v, want one for each of the three others", rows)
	}
}

func TestHandleClassifiesFailures(t *testing.T) {
	broadcast := func(*memfake.Fake, []string) delivery.Message {
		return delivery.Message{Broadcast: &message.Broadcast{ID: uuid.NewString(), Content: "go"}}
	}
	direct := func(_ *memfake.Fake, ids []string) delivery.Message {
		return delivery.Message{Direct: &message.Direct{ID: "d", MysisID: ids[0], Content: "hi"}}
	}
	down := func(method string, d func(*memfake.Fake, []string) delivery.Message) func(*memfake.Fake, []string) delivery.Message {
		return func(f *memfake.Fake, ids []string) delivery.Message {
			f.FailAll(method, codes.Unavailable)
			return d(f, ids)
		}
	}
	cases := []struct {
		name      string
		setup     func(f *memfake.Fake, ids []string) delivery.Message // ids: two myses
		wakeErr   error
		wantErr   bool
		permanent bool
		errEvent  bool
	}{
		{"broadcast ok", broadcast, nil, false, false, false},
		{"memory down", down("RecordBroadcast", broadcast), nil, true, false, false},
		{"memory refuses the broadcast", func(*memfake.Fake, []string) delivery.Message {
			return delivery.Message{Broadcast: &message.Broadcast{ID: "b", Content: "go"}} // not a UUID
		}, nil, true, true, true},
		{"unknown broadcast sender is retried", func(*memfake.Fake, []string) delivery.Message {
			return delivery.Message{Broadcast: &message.Broadcast{ID: uuid.NewString(), SenderID: uuid.NewString(), Content: "go"}}
		}, nil, true, false, false},
		{"listing fails after recording", down("ListMyses", broadcast), nil, true, false, false},
		{"wakes fail", broadcast, errors.New("nats: connection closed"), true, false, false},
		{"direct to a deleted mysis", func(*memfake.Fake, []string) delivery.Message {
			return delivery.Message{Direct: &message.Direct{ID: "d", MysisID: uuid.NewString(), Content: "hi"}}
		}, nil, true, true, true},
		{"direct while memory is down", down("AppendMemories", direct), nil, true, false, false},
		{"direct stored but not announced", direct, errors.New("nats down"), true, false, false},
		{"empty delivery", func(*memfake.Fake, []string) delivery.Message { return delivery.Message{} }, nil, true, true, false},
		// A broadcast_id or message_id used before for other content: the first message stands, redelivering the
		// second would fail for ever (issue 41, finding 4).
		{"broadcast id reused for other content", func(f *memfake.Fake, _ []string) delivery.Message {
			id := uuid.NewString()
			if _, err := f.Client(t).RecordBroadcast(context.Background(), &memoryv1.RecordBroadcastRequest{BroadcastId: id, Content: "first"}); err != nil {
				t.Fatal(err)
			}
			return delivery.Message{Broadcast: &message.Broadcast{ID: id, Content: "second"}}
		}, nil, true, true, true},
		{"message id reused for other content", func(f *memfake.Fake, ids []string) delivery.Message {
			if _, err := f.Client(t).AppendMemories(context.Background(), &memoryv1.AppendMemoriesRequest{MysisId: ids[0], Memories: []*memoryv1.NewMemory{
				{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "first", IdempotencyKey: "direct:d"}}}); err != nil {
				t.Fatal(err)
			}
			return direct(f, ids)
		}, nil, true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, mem := memory(t)
			d := c.setup(fake, fake.AddMyses("m", 2))
			n := &fakeNotifier{wakeErr: c.wakeErr}
			err := delivery.New(mem, n, quiet()).Handle(context.Background(), d)
			if permanent := errors.Is(err, delivery.ErrUndeliverable); (err != nil) != c.wantErr || permanent != c.permanent {
				t.Fatalf("Handle = %v (undeliverable %v), want error %v undeliverable %v", err, permanent, c.wantErr, c.permanent)
			}
			gotErrEvent := false
			for _, ev := range n.events {
				if ev.kind == "error" {
					gotErrEvent = true
				}
			}
			if gotErrEvent != c.errEvent {
				t.Fatalf("error event published = %v, want %v", gotErrEvent, c.errEvent)
			}
		})
	}
}

func TestDirectReturnsTheStoredRowEvenWhenTheWakeFails(t *testing.T) {
	fake, mem := memory(t)
	id := fake.AddMyses("m", 1)[0]
	n := &fakeNotifier{wakeErr: errors.New("nats down")}
	m, err := delivery.New(mem, n, quiet()).Direct(context.Background(), message.Direct{ID: "x1", MysisID: id, Content: "hi"})
	if m.ID == 0 || m.IdempotencyKey != "direct:x1" || m.MysisID != id || m.Seq != 1 {
		t.Fatalf("memory = %v", m)
	}
	if !errors.Is(err, delivery.ErrNotAnnounced) {
		t.Fatalf("err = %v, want ErrNotAnnounced", err)
	}
}
