package delivery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// fakeMemory answers with canned results or errors (libs/errs errors, as the memoryclient adapter returns them).
type fakeMemory struct {
	myses     []string
	listErr   error
	recordErr error
	appendErr error
	records   int
}

func (f *fakeMemory) MysisIDs(context.Context) ([]string, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	return f.myses, nil
}

func (f *fakeMemory) RecordBroadcast(context.Context, swarmbus.Broadcast) (int, int, error) {
	f.records++
	if f.recordErr != nil {
		return 0, 0, f.recordErr
	}
	return len(f.myses) - 1, 0, nil
}

func (f *fakeMemory) AppendDirect(_ context.Context, d swarmbus.Direct) (message.Stored, error) {
	if f.appendErr != nil {
		return message.Stored{}, f.appendErr
	}
	return message.Stored{ID: 7, Seq: 3, MysisID: d.MysisID, SenderID: d.SenderID, Content: d.Content, IdempotencyKey: d.IdempotencyKey()}, nil
}

// event is one announcement the fake notifier saw.
type event struct {
	kind, mysisID, detail string
}

// fakeNotifier records wakes and events.
type fakeNotifier struct {
	mu      sync.Mutex
	wakeErr error
	wakes   map[string]swarmbus.WakeReason
	events  []event
}

func (n *fakeNotifier) PublishWake(_ context.Context, id string, r swarmbus.WakeReason) error {
	return n.PublishWakes(context.Background(), []string{id}, r)
}

func (n *fakeNotifier) PublishWakes(_ context.Context, ids []string, r swarmbus.WakeReason) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wakeErr != nil {
		return n.wakeErr
	}
	if n.wakes == nil {
		n.wakes = map[string]swarmbus.WakeReason{}
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

func (n *fakeNotifier) BroadcastDelivered(_ context.Context, id string, b swarmbus.Broadcast, _ string) error {
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
	mem := &fakeMemory{myses: []string{"a", "b", "c", "d"}}
	n := &fakeNotifier{}
	res, err := delivery.New(mem, n, quiet()).Broadcast(context.Background(), swarmbus.Broadcast{ID: "b1", SenderID: "c", Content: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Targets != 3 || res.Delivered != 3 {
		t.Fatalf("result = %+v", res)
	}
	if len(n.wakes) != 3 || n.wakes["c"] != "" || n.wakes["a"] != swarmbus.WakeBroadcast {
		t.Fatalf("wakes = %v", n.wakes)
	}
	if len(n.events) != 3 || n.events[0] != (event{"broadcast", "a", "b1 from c"}) {
		t.Fatalf("events = %v", n.events)
	}
}

func TestHandleClassifiesFailures(t *testing.T) {
	unavailable := errs.Unavailablef(errors.New("connection refused"), "memory")
	cases := []struct {
		name      string
		mem       *fakeMemory
		wakeErr   error
		d         swarmbus.Delivery
		wantErr   bool
		permanent bool
		errEvent  bool
	}{
		{"broadcast ok", &fakeMemory{myses: []string{"a", "b"}}, nil, swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, false, false, false},
		{"memory down", &fakeMemory{recordErr: unavailable}, nil, swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"memory refuses the broadcast", &fakeMemory{recordErr: errs.InvalidField("broadcast_id", "not a UUID")}, nil,
			swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, true, true},
		{"unknown broadcast target is retried", &fakeMemory{recordErr: errs.NotFoundf("x")}, nil,
			swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"listing fails after recording", &fakeMemory{listErr: unavailable}, nil, swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"wakes fail", &fakeMemory{myses: []string{"a", "b"}}, errors.New("nats: connection closed"), swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"direct to a deleted mysis", &fakeMemory{appendErr: errs.NotFoundf("mysis not found")}, nil,
			swarmbus.Delivery{Direct: &swarmbus.Direct{ID: "d", MysisID: "gone"}}, true, true, true},
		{"direct while memory is down", &fakeMemory{appendErr: unavailable}, nil, swarmbus.Delivery{Direct: &swarmbus.Direct{ID: "d", MysisID: "m"}}, true, false, false},
		{"direct stored but not announced", &fakeMemory{}, errors.New("nats down"), swarmbus.Delivery{Direct: &swarmbus.Direct{ID: "d", MysisID: "m"}}, true, false, false},
		{"empty delivery", &fakeMemory{}, nil, swarmbus.Delivery{}, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &fakeNotifier{wakeErr: c.wakeErr}
			err := delivery.New(c.mem, n, quiet()).Handle(context.Background(), c.d)
			if (err != nil) != c.wantErr || swarmbus.IsPermanent(err) != c.permanent {
				t.Fatalf("Handle = %v (permanent %v), want error %v permanent %v", err, swarmbus.IsPermanent(err), c.wantErr, c.permanent)
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
	n := &fakeNotifier{wakeErr: errors.New("nats down")}
	m, err := delivery.New(&fakeMemory{}, n, quiet()).Direct(context.Background(), swarmbus.Direct{ID: "x1", MysisID: "m", Content: "hi"})
	if m.ID == 0 || m.IdempotencyKey != "direct:x1" || m.MysisID != "m" {
		t.Fatalf("memory = %v", m)
	}
	if !errors.Is(err, delivery.ErrNotAnnounced) {
		t.Fatalf("err = %v, want ErrNotAnnounced", err)
	}
}
