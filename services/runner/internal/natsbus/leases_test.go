package natsbus_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
	"github.com/zoeaswarm/zoea/services/runner/internal/lease"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/natsbus"
)

// idLister lists a fixed set of mysis ids.
type idLister []string

func (l idLister) ListMysisIDs(context.Context, string, int) ([]string, string, error) {
	return l, "", nil
}

// startedActor reports on started when it runs and runs until its context ends or it is stopped.
type startedActor struct {
	id      string
	started chan<- string
	stop    chan struct{}
	once    *sync.Once
}

func newStartedActor(id string, started chan<- string) startedActor {
	return startedActor{id: id, started: started, stop: make(chan struct{}), once: &sync.Once{}}
}

func (a startedActor) Run(ctx context.Context) error {
	a.started <- a.id
	select {
	case <-ctx.Done():
	case <-a.stop:
	}
	return nil
}
func (startedActor) Wake(mysis.WakeReason)  {}
func (a startedActor) Stop()                { a.once.Do(func() { close(a.stop) }) }
func (a startedActor) Yield()               { a.Stop() }
func (a startedActor) Status() mysis.Status { return mysis.Status{MysisID: a.id} }

// A replica that crashed holding leases, on a lease bucket without limit markers (what a NATS server before 2.11,
// such as Debian 12's 2.9, gets): the server drops the entries a TTL after their last renewal and tells no watcher.
// Another replica's lease manager, which heard the crashed holder when it started watching, must take every mysis
// over once the leases have expired, and not before.
func TestCrashedHoldersLeasesMoveWithoutExpiryMarkers(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	const ttl = time.Second
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The bucket as swarmbus creates it when the server refuses limit markers.
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: swarmbus.LeaseBucket, TTL: ttl, History: 1, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	bus, err := swarmbus.Connect(ctx, srv.ClientURL(), swarmbus.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)

	ids := idLister{"0193b5a0-0000-7000-8000-000000000001", "0193b5a0-0000-7000-8000-000000000002"}
	crashed, err := bus.Leases("crashed-replica")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if ok, err := crashed.Acquire(ctx, id); err != nil || !ok {
			t.Fatalf("crashed replica acquires %s: %v %v", id, ok, err)
		}
	}
	heldAt := time.Now() // never renewed, never released from here on: the holder is gone

	survivor, err := bus.Leases("survivor")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, len(ids))
	m := lease.New(natsbus.Leases{L: survivor}, ids, func(id string) lease.Actor { return newStartedActor(id, started) },
		lease.Config{ScanInterval: 100 * time.Millisecond})
	mctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(mctx) })
	defer func() { stop(); wg.Wait() }()

	for range ids {
		select {
		case <-started:
		case <-time.After(10 * ttl):
			t.Fatalf("the survivor did not take the crashed replica's myses over within %s (owner of the first: %q)", 10*ttl, m.Owner(ids[0]))
		}
	}
	took := time.Since(heldAt)
	if took < ttl {
		t.Fatalf("taken over %s after the crash, before the leases could expire (TTL %s)", took, ttl)
	}
	t.Logf("taken over %s after the crashed replica's last write (TTL %s)", took.Round(10*time.Millisecond), ttl)
	for _, id := range ids {
		if o, err := survivor.Owner(ctx, id); err != nil || o != "survivor" {
			t.Errorf("lease %s held by %q (%v), want the survivor", id, o, err)
		}
	}
}
