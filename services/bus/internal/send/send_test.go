package send_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/bus/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
	"github.com/zoeaswarm/zoea/services/bus/internal/send"
)

type fakeBus struct {
	mu         sync.Mutex
	published  []message.Broadcast
	publishErr error
}

func (b *fakeBus) PublishBroadcast(_ context.Context, bc message.Broadcast) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.publishErr != nil {
		return b.publishErr
	}
	b.published = append(b.published, bc)
	return nil
}

// startMemory serves the shared in-memory memory service (libs/testsupport/memfake, held to libs/testsupport/memorycontract like the
// real one) and returns it with the real memoryclient adapter over a gRPC client of it: the Directory in production.
func startMemory(t *testing.T) (*memfake.Fake, send.Directory) {
	t.Helper()
	f := memfake.Start(t)
	return f, memoryclient.New(f.Client(t))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The count is the swarm at the moment of the broadcast, not a cached size: the issue was a broadcast right after
// creating a mysis reporting the previous count (3 of 4, 6 of 30).
func TestBroadcastCountsTheSwarmOfThisBroadcast(t *testing.T) {
	bus := &fakeBus{}
	fake, mem := startMemory(t)
	ids := fake.AddMyses("m", 3)
	api := send.New(bus, mem, nil, send.Options{AllowMysisBroadcast: true, Logger: quiet()})
	ctx := context.Background()
	count := func(sender string) int32 {
		t.Helper()
		_, n, err := api.Broadcast(ctx, message.Broadcast{Content: "go", SenderID: sender})
		if err != nil {
			t.Fatal(err)
		}
		return n
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
	closed := send.New(bus, mem, nil, send.Options{Logger: quiet()})
	_, _, err := closed.Broadcast(context.Background(), message.Broadcast{Content: "x", SenderID: "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11"})
	if !errs.Is(err, errs.PermissionDenied) || errs.FieldOf(err) != "sender_id" {
		t.Fatalf("mysis broadcast while disabled: %v, want a PermissionDenied errs error naming sender_id (libs/server maps it)", err)
	}
	open := send.New(bus, mem, nil, send.Options{AllowMysisBroadcast: true, Logger: quiet()})
	_, _, err = open.Broadcast(context.Background(), message.Broadcast{Content: "x", SenderID: "not-a-uuid"})
	if errs.FieldOf(err) != "sender_id" {
		t.Fatalf("malformed sender: %v", err)
	}
	bus.publishErr = errors.New("nats: timeout")
	_, _, err = open.Broadcast(context.Background(), message.Broadcast{Content: "x", ID: "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11"})
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
	api := send.New(&fakeBus{}, mem, nil, send.Options{Logger: quiet()})
	for _, name := range []string{"a\x00b", " spaced", "\u200b", "evil\u202Etxt"} {
		_, err := api.SendDirect(context.Background(), name, message.Direct{Content: "hello"})
		if errs.FieldOf(err) != "mysis" || !errs.Is(err, errs.Invalid) {
			t.Errorf("mysis %q: %v (field %q), want InvalidArgument on field mysis", name, err, errs.FieldOf(err))
		}
		if strings.Count(err.Error(), "mysis:") != 1 || strings.Contains(err.Error(), "rpc error") {
			t.Errorf("mysis %q: error text %q is nested", name, err.Error())
		}
	}
}
