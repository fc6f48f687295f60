package lease

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// table is a shared lease table several fake replicas use, like the KV bucket on a NATS server without limit
// markers (Debian's 2.9): an entry not written for a TTL is gone, and nobody is told. Acquisitions, renewals and
// releases reach every watcher, and a new watcher first hears every current lease, as a KV watch does.
type table struct {
	mu      sync.Mutex
	owner   map[string]string
	written map[string]time.Time
	watch   []func(id, owner string)
	failed  map[string]bool // renewals of these ids report lost
	// replicas are the heartbeats; their watchers hear beats and departures, never expiries.
	replicas     map[string]time.Time
	replicaWatch []func(holder string, live bool)
}

func newTable() *table {
	return &table{owner: map[string]string{}, written: map[string]time.Time{}, failed: map[string]bool{}, replicas: map[string]time.Time{}}
}

func (tb *table) notifyReplica(holder string, live bool) {
	for _, w := range tb.replicaWatch {
		go w(holder, live)
	}
}

// ownerLocked is id's holder, "" once its entry expired; tb.mu must be held.
func (tb *table) ownerLocked(id string) string {
	if o := tb.owner[id]; o != "" && time.Since(tb.written[id]) <= leaseTTL {
		return o
	}
	delete(tb.owner, id)
	return ""
}

// put writes id's entry for holder and tells every watcher; tb.mu must be held.
func (tb *table) put(id, holder string) {
	tb.owner[id], tb.written[id] = holder, time.Now()
	tb.notify(id, holder)
}

const leaseTTL = 60 * time.Millisecond

func (tb *table) notify(id, owner string) {
	for _, w := range tb.watch {
		go w(id, owner)
	}
}

type fakeLeases struct {
	tb     *table
	holder string
}

func (f fakeLeases) Holder() string     { return f.holder }
func (f fakeLeases) TTL() time.Duration { return leaseTTL }
func (f fakeLeases) Acquire(_ context.Context, id string) (bool, error) {
	f.tb.mu.Lock()
	defer f.tb.mu.Unlock()
	if o := f.tb.ownerLocked(id); o != "" && o != f.holder {
		return false, nil
	}
	f.tb.put(id, f.holder)
	return true, nil
}
func (f fakeLeases) Renew(_ context.Context, id string) (bool, error) {
	f.tb.mu.Lock()
	defer f.tb.mu.Unlock()
	if f.tb.ownerLocked(id) != f.holder {
		return true, nil
	}
	if f.tb.failed[id] {
		delete(f.tb.owner, id)
		return true, nil
	}
	f.tb.put(id, f.holder)
	return false, nil
}
func (f fakeLeases) Valid(id string) bool {
	f.tb.mu.Lock()
	defer f.tb.mu.Unlock()
	return f.tb.ownerLocked(id) == f.holder
}
func (f fakeLeases) Release(_ context.Context, id string) error {
	f.tb.mu.Lock()
	defer f.tb.mu.Unlock()
	if f.tb.owner[id] == f.holder {
		delete(f.tb.owner, id)
		f.tb.notify(id, "")
	}
	return nil
}
func (f fakeLeases) Heartbeat(context.Context) error {
	f.tb.mu.Lock()
	defer f.tb.mu.Unlock()
	f.tb.replicas[f.holder] = time.Now()
	f.tb.notifyReplica(f.holder, true)
	return nil
}
func (f fakeLeases) Leave(context.Context) error {
	f.tb.mu.Lock()
	defer f.tb.mu.Unlock()
	delete(f.tb.replicas, f.holder)
	f.tb.notifyReplica(f.holder, false)
	return nil
}
func (f fakeLeases) Watch(ctx context.Context, h func(id, owner string), r func(holder string, live bool)) error {
	f.tb.mu.Lock()
	f.tb.watch = append(f.tb.watch, h)
	f.tb.replicaWatch = append(f.tb.replicaWatch, r)
	for holder, at := range f.tb.replicas {
		if time.Since(at) <= leaseTTL {
			go r(holder, true)
		}
	}
	for id := range f.tb.owner {
		if o := f.tb.ownerLocked(id); o != "" {
			go h(id, o)
		}
	}
	f.tb.mu.Unlock()
	<-ctx.Done()
	return nil
}

type fakeLister struct{ ids []string }

func (f fakeLister) ListMysisIDs(_ context.Context, token string, size int) ([]string, string, error) {
	start := 0
	if token != "" {
		start = int(token[0] - '0')
	}
	end := min(start+size, len(f.ids))
	next := ""
	if end < len(f.ids) {
		next = string(rune('0' + end))
	}
	return f.ids[start:end], next, nil
}

// fakeActor runs until its context ends, Stop is called (a graceful hand-off) or exit is closed (the mysis was
// deleted).
type fakeActor struct {
	id       string
	woken    atomic.Int64
	running  *sync.Map
	exit     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
}

func newFakeActor(id string, running *sync.Map) *fakeActor {
	return &fakeActor{id: id, running: running, exit: make(chan struct{}), stop: make(chan struct{})}
}

func (a *fakeActor) Run(ctx context.Context) error {
	a.running.Store(a.id, a)
	defer a.running.Delete(a.id)
	select {
	case <-ctx.Done():
	case <-a.exit:
	case <-a.stop:
	}
	return nil
}
func (a *fakeActor) Wake(mysis.WakeReason) { a.woken.Add(1) }
func (a *fakeActor) Stop()                 { a.stopOnce.Do(func() { close(a.stop) }) }
func (a *fakeActor) Yield()                { a.Stop() }
func (a *fakeActor) Status() mysis.Status  { return mysis.Status{MysisID: a.id} }

// waitFor waits, inside a synctest bubble, until cond holds: it checks cond once every goroutine of the bubble is
// blocked and otherwise moves the fake clock on (scans, renewals). The limit is fake time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		synctest.Wait()
		if cond() {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("still waiting for %s after a minute of fake time", what)
		}
		time.Sleep(time.Millisecond) // fake time: advances the bubble's clock once every other goroutine is blocked
	}
}

func count(m *sync.Map) int {
	n := 0
	m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Two replicas split the myses; when one stops gracefully its actors are stopped, its leases released, and the
// other replica takes every mysis over.
func TestManagersShareAndHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable()
		ids := []string{"a", "b", "c", "d", "e", "f", "g"}
		run1, run2 := &sync.Map{}, &sync.Map{}
		actors := &sync.Map{}
		mk := func(running *sync.Map) func(id string) Actor {
			return func(id string) Actor {
				a := newFakeActor(id, running)
				actors.Store(id, a)
				return a
			}
		}
		m1 := New(fakeLeases{tb, "r1"}, fakeLister{ids}, mk(run1), Config{PageSize: 3, ScanInterval: 20 * time.Millisecond})
		m2 := New(fakeLeases{tb, "r2"}, fakeLister{ids}, mk(run2), Config{PageSize: 3, ScanInterval: 20 * time.Millisecond})
		ctx1, stop1 := context.WithCancel(context.Background())
		ctx2, stop2 := context.WithCancel(context.Background())
		defer stop2()
		done1 := make(chan struct{})
		go func() { _ = m1.Run(ctx1); close(done1) }()
		go func() { _ = m2.Run(ctx2) }()

		waitFor(t, "every mysis running once", func() bool { return count(run1)+count(run2) == len(ids) })
		run1.Range(func(k, _ any) bool {
			if _, dup := run2.Load(k); dup {
				t.Errorf("mysis %v runs on both replicas", k)
			}
			return true
		})
		// Wakes reach the owning actor only.
		for _, id := range ids {
			m1.Wake(id, mysis.WakeBroadcast)
			m2.Wake(id, mysis.WakeBroadcast)
		}
		actors.Range(func(_, v any) bool {
			if n := v.(*fakeActor).woken.Load(); n != 1 {
				t.Errorf("actor %s woken %d times, want 1", v.(*fakeActor).id, n)
			}
			return true
		})

		stop1()
		<-done1
		if count(run1) != 0 {
			t.Fatalf("r1 still runs %d actors after shutdown", count(run1))
		}
		waitFor(t, "r2 runs everything", func() bool { return count(run2) == len(ids) })
		tb.mu.Lock()
		for _, id := range ids {
			if tb.owner[id] != "r2" {
				t.Errorf("lease %s held by %q", id, tb.owner[id])
			}
		}
		tb.mu.Unlock()
	})
}

// A replica that crashed (no release, no more renewals) leaves leases that expire on the server without anybody
// being told, as on a NATS server without limit markers: the survivor heard the dead holder once and never again,
// and must take every mysis over within a couple of TTLs anyway.
func TestCrashedReplicasMysesMoveWithoutExpiryEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable()
		ids := []string{"a", "b", "c"}
		tb.mu.Lock()
		for _, id := range ids {
			tb.put(id, "crashed") // written just before the crash; never renewed, never released
		}
		tb.mu.Unlock()
		running := &sync.Map{}
		m := New(fakeLeases{tb, "r2"}, fakeLister{ids}, func(id string) Actor { return newFakeActor(id, running) },
			Config{ScanInterval: 20 * time.Millisecond})
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		go func() { _ = m.Run(ctx) }()
		synctest.Wait()
		if count(running) != 0 || m.Owner("a") != "crashed" {
			t.Fatalf("before the TTL: %d actors, owner of a %q; want none and the crashed replica", count(running), m.Owner("a"))
		}
		began := time.Now()
		waitFor(t, "r2 runs the crashed replica's myses", func() bool { return count(running) == len(ids) })
		if took := time.Since(began); took > 2*leaseTTL {
			t.Errorf("take-over took %s, want within two TTLs (%s)", took, 2*leaseTTL)
		}
		if o := m.Owner("a"); o != "r2" {
			t.Errorf("owner of a %q, want r2", o)
		}
	})
}

// A lost lease stops its actor at once; a deleted mysis (actor exits by itself) gives its lease back.
func TestLostLeaseStopsActorAndDeletedMysisReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable()
		running := &sync.Map{}
		actors := &sync.Map{}
		m := New(fakeLeases{tb, "r1"}, fakeLister{[]string{"a", "b"}}, func(id string) Actor {
			a := newFakeActor(id, running)
			actors.Store(id, a)
			return a
		}, Config{ScanInterval: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = m.Run(ctx) }()
		waitFor(t, "both running", func() bool { return count(running) == 2 })

		tb.mu.Lock()
		tb.failed["a"] = true
		tb.mu.Unlock()
		waitFor(t, "a stopped", func() bool { _, ok := running.Load("a"); return !ok })

		v, _ := actors.Load("b")
		close(v.(*fakeActor).exit) // the mysis was deleted
		waitFor(t, "b released", func() bool {
			tb.mu.Lock()
			defer tb.mu.Unlock()
			return tb.owner["b"] == ""
		})
	})
}

// stubbornActor runs until its context ends or done is closed; Stop and Yield only count (a call that takes long).
type stubbornActor struct {
	fakeActor
	done chan struct{}
}

func (a *stubbornActor) Run(ctx context.Context) error {
	a.running.Store(a.id, a)
	defer a.running.Delete(a.id)
	select {
	case <-ctx.Done():
	case <-a.done:
	}
	return nil
}
func (a *stubbornActor) Stop()  {}
func (a *stubbornActor) Yield() {}

// A graceful stop that outlasts the lease TTL (StopGrace > TTL) keeps renewing the leases of the actors still
// running: nobody else may take a mysis before its actor has ended, and then it is released at once.
func TestShutdownKeepsRenewingUntilActorsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable()
		running := &sync.Map{}
		done := make(chan struct{})
		m := New(fakeLeases{tb, "r1"}, fakeLister{[]string{"a"}}, func(id string) Actor {
			return &stubbornActor{fakeActor: fakeActor{id: id, running: running}, done: done}
		}, Config{ScanInterval: time.Hour, StopGrace: 10 * leaseTTL})
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { _ = m.Run(ctx); close(stopped) }()
		waitFor(t, "a running", func() bool { return count(running) == 1 })

		cancel()
		time.Sleep(3 * leaseTTL) // fake time: three TTLs into the shutdown, the actor still runs
		synctest.Wait()
		tb.mu.Lock()
		owner := tb.ownerLocked("a")
		tb.mu.Unlock()
		if count(running) != 1 || owner != "r1" {
			t.Fatalf("three TTLs into the shutdown: %d actors running, lease held by %q; want the actor and r1", count(running), owner)
		}
		close(done)
		<-stopped
		tb.mu.Lock()
		owner = tb.ownerLocked("a")
		tb.mu.Unlock()
		if owner != "" {
			t.Errorf("after the shutdown the lease is held by %q, want it released", owner)
		}
	})
}
