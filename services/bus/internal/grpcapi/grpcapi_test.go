package grpcapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testkit/memfake"
	"github.com/zoeaswarm/zoea/services/bus/internal/grpcapi"
)

type fakeBus struct {
	mu         sync.Mutex
	published  []swarmbus.Broadcast
	publishErr error
}

func (b *fakeBus) PublishBroadcast(_ context.Context, bc swarmbus.Broadcast) (swarmbus.PubAck, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.publishErr != nil {
		return swarmbus.PubAck{}, b.publishErr
	}
	b.published = append(b.published, bc)
	return swarmbus.PubAck{Seq: uint64(len(b.published))}, nil
}

func (b *fakeBus) SubscribeEvents(context.Context, swarmbus.EventFilter, func(context.Context, *busv1.Event)) (*swarmbus.Subscription, error) {
	return nil, errors.New("not used")
}

// startMemory serves the shared in-memory memory service (libs/testkit/memfake, held to libs/memorycontract like the
// real one) and returns it with a real gRPC client of it, which is what the API's Memory port takes in production.
func startMemory(t *testing.T) (*memfake.Fake, memoryv1.MemoryServiceClient) {
	t.Helper()
	f := memfake.Start(t)
	return f, f.Client(t)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The count is the swarm at the moment of the broadcast, not a cached size: the issue was a broadcast right after
// creating a mysis reporting the previous count (3 of 4, 6 of 30).
func TestBroadcastCountsTheSwarmOfThisBroadcast(t *testing.T) {
	bus := &fakeBus{}
	fake, mem := startMemory(t)
	ids := fake.AddMyses("m", 3)
	api := grpcapi.New(bus, mem, nil, grpcapi.Options{AllowMysisBroadcast: true, Logger: quiet()})
	ctx := context.Background()
	count := func(sender string) int32 {
		t.Helper()
		resp, err := api.Broadcast(ctx, &busv1.BroadcastRequest{Content: "go", SenderId: sender})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetTargetCount()
	}
	if n := count(""); n != 3 {
		t.Fatalf("first count %d, want 3", n)
	}
	ids = append(ids, fake.AddMyses("n", 1)...)
	if n := count(""); n != 4 {
		t.Fatalf("after a fourth mysis: count %d, want 4", n)
	}
	ids = append(ids, fake.AddMyses("o", 26)...)
	if n := count(ids[7]); n != 29 {
		t.Fatalf("from a mysis of 30: count %d, want 29 (everyone but the sender)", n)
	}
	if got := len(bus.published); got != 3 {
		t.Fatalf("%d broadcasts published, want 3", got)
	}
}

func TestBroadcastRejections(t *testing.T) {
	bus := &fakeBus{}
	_, mem := startMemory(t)
	closed := grpcapi.New(bus, mem, nil, grpcapi.Options{Logger: quiet()})
	_, err := closed.Broadcast(context.Background(), &busv1.BroadcastRequest{Content: "x", SenderId: "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11"})
	if !errs.Is(err, errs.PermissionDenied) || errs.FieldOf(err) != "sender_id" {
		t.Fatalf("mysis broadcast while disabled: %v, want a PermissionDenied errs error naming sender_id (libs/server maps it)", err)
	}
	open := grpcapi.New(bus, mem, nil, grpcapi.Options{AllowMysisBroadcast: true, Logger: quiet()})
	_, err = open.Broadcast(context.Background(), &busv1.BroadcastRequest{Content: "x", SenderId: "not-a-uuid"})
	if errs.FieldOf(err) != "sender_id" {
		t.Fatalf("malformed sender: %v", err)
	}
	bus.publishErr = errors.New("nats: timeout")
	_, err = open.Broadcast(context.Background(), &busv1.BroadcastRequest{Content: "x", BroadcastId: "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11"})
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11") {
		t.Fatalf("publish failure: %v", err)
	}
	if len(bus.published) != 0 {
		t.Fatal("rejected broadcasts were published")
	}
}

// A bad mysis name is reported once, on the request's own field, whatever the memory service would have said.
func TestSendDirectBadMysisNamesTheField(t *testing.T) {
	_, mem := startMemory(t)
	api := grpcapi.New(&fakeBus{}, mem, nil, grpcapi.Options{Logger: quiet()})
	for _, name := range []string{"a\x00b", " spaced", "\u200b", "evil\u202Etxt"} {
		_, err := api.SendDirect(context.Background(), &busv1.SendDirectRequest{Mysis: name, Content: "hello"})
		if errs.FieldOf(err) != "mysis" || !errs.Is(err, errs.Invalid) {
			t.Errorf("mysis %q: %v (field %q), want InvalidArgument on field mysis", name, err, errs.FieldOf(err))
		}
		if strings.Count(err.Error(), "mysis:") != 1 || strings.Contains(err.Error(), "rpc error") {
			t.Errorf("mysis %q: error text %q is nested", name, err.Error())
		}
	}
}
