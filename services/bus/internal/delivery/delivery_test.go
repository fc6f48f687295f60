package delivery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
)

// fakeMemory answers with canned results or errors.
type fakeMemory struct {
	myses     []string
	listErr   error
	recordErr error
	appendErr error
	records   int
}

func (f *fakeMemory) ListMyses(_ context.Context, in *memoryv1.ListMysesRequest, _ ...grpc.CallOption) (*memoryv1.ListMysesResponse, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	// Two pages, to exercise paging.
	half := len(f.myses) / 2
	page, next := f.myses[:half], "2"
	if in.GetPageToken() == "2" {
		page, next = f.myses[half:], ""
	}
	resp := &memoryv1.ListMysesResponse{NextPageToken: next}
	for _, id := range page {
		resp.Myses = append(resp.Myses, &memoryv1.Mysis{Id: id})
	}
	return resp, nil
}

func (f *fakeMemory) RecordBroadcast(_ context.Context, in *memoryv1.RecordBroadcastRequest, _ ...grpc.CallOption) (*memoryv1.RecordBroadcastResponse, error) {
	f.records++
	if f.recordErr != nil {
		return nil, f.recordErr
	}
	return &memoryv1.RecordBroadcastResponse{Broadcast: &memoryv1.Broadcast{Id: in.GetBroadcastId()}, DeliveredCount: int32(len(f.myses) - 1)}, nil
}

func (f *fakeMemory) AppendMemories(_ context.Context, in *memoryv1.AppendMemoriesRequest, _ ...grpc.CallOption) (*memoryv1.AppendMemoriesResponse, error) {
	if f.appendErr != nil {
		return nil, f.appendErr
	}
	nm := in.GetMemories()[0]
	return &memoryv1.AppendMemoriesResponse{Memories: []*memoryv1.Memory{{Id: 7, Seq: 3, MysisId: in.GetMysisId(), Role: nm.GetRole(),
		Source: nm.GetSource(), Content: nm.GetContent(), IdempotencyKey: nm.GetIdempotencyKey()}}}, nil
}

// fakeNotifier records wakes and events.
type fakeNotifier struct {
	mu      sync.Mutex
	wakeErr error
	wakes   map[string]swarmbus.WakeReason
	events  []*busv1.Event
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

func (n *fakeNotifier) PublishEvent(_ context.Context, ev *busv1.Event) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
	return nil
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
	if len(n.events) != 3 || n.events[0].GetBroadcast().GetBroadcastId() != "b1" || n.events[0].GetBroadcast().GetSenderId() != "c" {
		t.Fatalf("events = %v", n.events)
	}
}

func TestHandleClassifiesFailures(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection refused")
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
		{"memory refuses the broadcast", &fakeMemory{recordErr: status.Error(codes.InvalidArgument, "broadcast_id: not a UUID")}, nil,
			swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, true, true},
		{"unknown broadcast target is retried", &fakeMemory{recordErr: status.Error(codes.NotFound, "x")}, nil,
			swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"listing fails after recording", &fakeMemory{listErr: unavailable}, nil, swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"wakes fail", &fakeMemory{myses: []string{"a", "b"}}, errors.New("nats: connection closed"), swarmbus.Delivery{Broadcast: &swarmbus.Broadcast{ID: "b"}}, true, false, false},
		{"direct to a deleted mysis", &fakeMemory{appendErr: status.Error(codes.NotFound, "mysis not found")}, nil,
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
				if ev.GetKind() == busv1.EventKind_EVENT_KIND_ERROR {
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
	if m == nil || m.GetIdempotencyKey() != "direct:x1" || m.GetSource() != memoryv1.Source_SOURCE_DIRECT || m.GetRole() != memoryv1.Role_ROLE_USER {
		t.Fatalf("memory = %v", m)
	}
	if !errors.Is(err, delivery.ErrNotAnnounced) {
		t.Fatalf("err = %v, want ErrNotAnnounced", err)
	}
}
