package natsbus_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
	"github.com/zoeaswarm/zoea/services/runner/internal/lease"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/natsbus"
)

// swarmProbe watches the fake actors of every replica: who runs which mysis, every write checked against the
// lease as the server holds it, and turns cut before their end.
type swarmProbe struct {
	mu         sync.Mutex
	active     map[string]string          // mysis → replica whose actor runs it now
	held       map[string]map[string]bool // replica → myses it runs
	violations []string
	turns      int
	cut        int // turns ended in the middle other than by a graceful stop
	writes     int
	changed    chan struct{} // a token after every actor start or end
}

func newSwarmProbe() *swarmProbe {
	return &swarmProbe{active: map[string]string{}, held: map[string]map[string]bool{}, changed: make(chan struct{}, 1)}
}

func (p *swarmProbe) poke() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *swarmProbe) enter(id, replica string) {
	p.mu.Lock()
	if o := p.active[id]; o != "" {
		p.violations = append(p.violations, fmt.Sprintf("%s started on %s while %s still runs it", id, replica, o))
	}
	p.active[id] = replica
	if p.held[replica] == nil {
		p.held[replica] = map[string]bool{}
	}
	p.held[replica][id] = true
	p.mu.Unlock()
	p.poke()
}

func (p *swarmProbe) exit(id, replica string) {
	p.mu.Lock()
	if p.active[id] == replica {
		delete(p.active, id)
	}
	delete(p.held[replica], id)
	p.mu.Unlock()
	p.poke()
}

func (p *swarmProbe) count(replica string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held[replica])
}

func (p *swarmProbe) fail(format string, args ...any) {
	p.mu.Lock()
	p.violations = append(p.violations, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// waitUntil waits for probe changes until cond holds, failing after limit.
func (p *swarmProbe) waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-p.changed:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, limit)
		}
	}
	return time.Since(began)
}

// turnActor plays turns of three steps (a model reply and two tool calls, each a few milliseconds of simulated
// latency). Before every write it checks that its replica still holds the mysis's lease on the server. Yield ends
// it after a whole turn, Stop after the current step; a cancelled context cuts the turn (counted as lost).
type turnActor struct {
	id, replica string
	leases      *swarmbus.Leases
	p           *swarmProbe
	stopping    atomic.Bool
	yielding    atomic.Bool
	stops       *atomic.Int64
	// hold, when set, blocks every step until closed (a long tool call).
	hold <-chan struct{}
}

const stepLatency = 20 * time.Millisecond

func (a *turnActor) Run(ctx context.Context) error {
	a.p.enter(a.id, a.replica)
	defer a.p.exit(a.id, a.replica)
	for !a.yielding.Load() && !a.stopping.Load() {
		for step := range 3 {
			if a.hold != nil {
				select {
				case <-a.hold:
				case <-ctx.Done():
				}
			} else {
				t := time.NewTimer(stepLatency) // simulated model or game latency, not synchronisation
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
			}
			if ctx.Err() != nil {
				a.p.mu.Lock()
				a.p.cut++
				a.p.mu.Unlock()
				return nil
			}
			owner, err := a.leases.Owner(ctx, a.id)
			if err != nil || owner != a.replica || !a.leases.Valid(a.id) {
				a.p.fail("%s wrote step %d of a turn on %s while the lease is held by %q (err %v, valid %v)", a.id, step, a.replica, owner, err, a.leases.Valid(a.id))
			}
			a.p.mu.Lock()
			a.p.writes++
			a.p.mu.Unlock()
			if a.stopping.Load() && step < 2 {
				return nil // graceful stop at a safe point inside the turn (shutdown)
			}
		}
		a.p.mu.Lock()
		a.p.turns++
		a.p.mu.Unlock()
	}
	return nil
}
func (a *turnActor) Wake(mysis.WakeReason) {}
func (a *turnActor) Stop() {
	a.stops.Add(1)
	a.stopping.Store(true)
}
func (a *turnActor) Yield()               { a.yielding.Store(true) }
func (a *turnActor) Status() mysis.Status { return mysis.Status{MysisID: a.id} }

// replicaUnderTest is one runner replica: its own NATS connection, lease holder and manager.
type replicaUnderTest struct {
	name   string
	mgr    *lease.Manager
	leases *swarmbus.Leases
	stops  atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

func startReplica(t *testing.T, ctx context.Context, url, name string, ttl time.Duration, ids idLister, p *swarmProbe, holds map[string]<-chan struct{}) *replicaUnderTest {
	t.Helper()
	bus, err := swarmbus.Connect(ctx, url, swarmbus.Options{Name: name, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LeaseTTL: ttl, Role: swarmbus.RoleRunner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	l, err := bus.Leases(name)
	if err != nil {
		t.Fatal(err)
	}
	r := &replicaUnderTest{name: name, leases: l, done: make(chan struct{})}
	r.mgr = lease.New(natsbus.Leases{L: l}, ids, func(id string) lease.Actor {
		return &turnActor{id: id, replica: name, leases: l, p: p, stops: &r.stops, hold: holds[id]}
	}, lease.Config{ScanInterval: ttl, StopGrace: time.Minute})
	mctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() { defer close(r.done); _ = r.mgr.Run(mctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func mysisIDs(n int) idLister {
	ids := make(idLister, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("0193b5a0-0000-7000-8000-%012d", i)
	}
	return ids
}

func within(held, fair int) bool {
	return float64(held) >= float64(fair)*(1-lease.Tolerance) && float64(held) <= float64(fair)*(1+lease.Tolerance)
}

// A replica that joins while another holds every lease gets its fair share within a few rebalance intervals: the
// loaded replica's actors yield at a turn boundary and their leases move one by one. No mysis ever runs on two
// replicas, every write happens under a lease the server says the writer holds, no turn is cut, and the loaded
// replica gives up only its surplus (no thrash).
func TestJoiningReplicaGetsFairShare(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	const ttl = 3 * time.Second // rebalance every second; expiry plays no part
	ids := mysisIDs(20)
	p := newSwarmProbe()

	a := startReplica(t, ctx, srv.ClientURL(), "replica-a", ttl, ids, p, nil)
	p.waitUntil(t, 10*time.Second, "replica-a runs every mysis", func() bool { return p.count("replica-a") == len(ids) })

	b := startReplica(t, ctx, srv.ClientURL(), "replica-b", ttl, ids, p, nil)
	took := p.waitUntil(t, 20*time.Second, "both replicas within 10% of 10 myses", func() bool {
		return within(p.count("replica-a"), 10) && within(p.count("replica-b"), 10) && p.count("replica-a")+p.count("replica-b") == len(ids)
	})
	t.Logf("split %d/%d %s after the second replica started (lease TTL %s)", p.count("replica-a"), p.count("replica-b"), took.Round(time.Millisecond), ttl)
	// Every lease is held by one of them once the hand-over in flight, if any, has landed (a lease released by a and
	// not yet taken by b is between the two for a moment; the taker's actor starting says it has landed).
	p.waitUntil(t, 10*time.Second, "every lease held by one replica", func() bool {
		return len(a.leases.Held())+len(b.leases.Held()) == len(ids)
	})

	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range p.violations {
		t.Error(v)
	}
	if p.cut != 0 {
		t.Errorf("%d turns cut in the middle, want 0", p.cut)
	}
	if n := a.stops.Load() + b.stops.Load(); n != 0 {
		t.Errorf("rebalancing stopped %d actors inside a turn, want 0 (they yield at a turn boundary)", n)
	}
	if p.writes == 0 || p.turns == 0 {
		t.Errorf("%d writes, %d turns: the actors did not play", p.writes, p.turns)
	}
}

// A replica asked to stop hands each mysis over the moment that actor has stopped, long before the lease TTL and
// without waiting for its slowest actor: here one actor is inside a long tool call and keeps its lease until the
// call ends, while the others move to the surviving replica at once.
func TestStoppingReplicaHandsOverAtOnce(t *testing.T) {
	srv := natstest.Start(t)
	ctx := testCtx(t)
	const ttl = time.Minute // any take-over within the test is a hand-over, not an expiry
	ids := mysisIDs(12)
	p := newSwarmProbe()
	slowCall := make(chan struct{})

	a := startReplica(t, ctx, srv.ClientURL(), "replica-a", ttl, ids, p, map[string]<-chan struct{}{ids[0]: slowCall})
	p.waitUntil(t, 10*time.Second, "replica-a runs every mysis", func() bool { return p.count("replica-a") == len(ids) })
	startReplica(t, ctx, srv.ClientURL(), "replica-b", ttl, ids, p, nil)

	began := time.Now()
	a.cancel() // SIGTERM
	took := p.waitUntil(t, 10*time.Second, "replica-b runs every mysis but the one inside a long call", func() bool {
		return p.count("replica-b") == len(ids)-1
	})
	if p.count("replica-a") != 1 {
		t.Fatalf("replica-a runs %d myses, want the one inside a long call", p.count("replica-a"))
	}
	t.Logf("%d myses handed over %s after the stop (lease TTL %s)", len(ids)-1, took.Round(time.Millisecond), ttl)
	close(slowCall)
	p.waitUntil(t, 10*time.Second, "replica-b runs every mysis", func() bool { return p.count("replica-b") == len(ids) })
	<-a.done
	if took := time.Since(began); took > ttl/4 {
		t.Errorf("hand-over took %s, want well within the lease TTL %s", took, ttl)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range p.violations {
		t.Error(v)
	}
	if p.cut != 0 {
		t.Errorf("%d turns cut by a cancelled context, want 0", p.cut)
	}
}
