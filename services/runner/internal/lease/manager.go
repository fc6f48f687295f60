// Package lease decides which myses this runner replica runs. Each mysis is leased to one replica (a KV entry with
// a TTL, renewed at TTL/3); a replica runs one actor per lease it holds, stops an actor the moment its lease is
// lost, takes over myses whose lease is free (a crashed replica's expire after the TTL; a stopping replica's are
// released at once) and finds new myses by listing them from the memory service and by "start" wakes.
//
// Replicas share the swarm. Each heartbeats its presence every TTL/3, so every replica knows how many are live
// (N) and how many myses there are (T). A replica takes free myses only while it holds fewer than ⌈T/N⌉ (a lease
// free for a whole rebalance interval is taken by anyone, so no mysis is left behind by a stale count), and one
// holding more than ⌈T/N × 1.1⌉ asks the surplus actors to yield at the end of their current turn, then releases
// each lease as its actor ends: a mysis never has two holders (the next one acquires only a released lease) and
// never moves inside a tool loop. A replica that is asked to stop withdraws its presence, then releases each lease
// as soon as that actor has stopped, so the others take over at once instead of after the TTL.
package lease

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Leases is the lease store (libs/swarmbus Leases behind a small adapter).
type Leases interface {
	Holder() string
	TTL() time.Duration
	// Acquire takes the lease when it is free; false when another holder has it.
	Acquire(ctx context.Context, mysisID string) (bool, error)
	// Renew extends one held lease; lost reports that it is gone (someone else may hold it).
	Renew(ctx context.Context, mysisID string) (lost bool, err error)
	// Valid reports whether the lease is held and not possibly expired.
	Valid(mysisID string) bool
	Release(ctx context.Context, mysisID string) error
	// Heartbeat announces this replica as live for a TTL; Leave withdraws that at once.
	Heartbeat(ctx context.Context) error
	Leave(ctx context.Context) error
	// Watch reports every lease and each change (owner "" = free) and every replica heartbeat and departure
	// (live false), in the order they were written, until ctx ends.
	Watch(ctx context.Context, onLease func(mysisID, owner string), onReplica func(holder string, live bool)) error
}

// Lister pages through every mysis id.
type Lister interface {
	ListMysisIDs(ctx context.Context, pageToken string, pageSize int) ([]string, string, error)
}

// Actor is what the manager runs per held lease (*mysis.Actor).
type Actor interface {
	Run(ctx context.Context) error
	Wake(r mysis.WakeReason)
	Stop()
	// Yield asks the actor to end at the end of its current turn (rebalancing hands the mysis over).
	Yield()
	Status() mysis.Status
}

// Tolerance is how far above its fair share a replica may hold before it gives myses up (hysteresis: ±10%).
const Tolerance = 0.10

// Config tunes the manager.
type Config struct {
	// ScanInterval is how often every mysis is listed to find unowned ones (default the lease TTL).
	ScanInterval time.Duration
	// PageSize of the listing (default 500).
	PageSize int
	// StopGrace bounds how long a graceful shutdown waits for actors to reach a safe point (default 10s).
	StopGrace time.Duration
	Logger    *slog.Logger
	// OnScan, when set, is called after each scan has tried every listed mysis (tests wait for the first).
	OnScan func()
}

// seenOwner is a lease's holder as the watch last reported it, and when.
type seenOwner struct {
	holder string
	at     time.Time
}

type handle struct {
	actor  Actor
	cancel context.CancelFunc
	done   chan struct{}
	// dropped is set when the manager itself ended the actor because the lease is lost: no release on exit.
	dropped bool
	// handover is set when the actor was asked to end so that another replica takes the mysis (rebalancing,
	// shutdown): its lease is released the moment it ends.
	handover bool
}

// Manager runs the actors of the myses this replica holds.
type Manager struct {
	leases   Leases
	lister   Lister
	newActor func(id string) Actor
	cfg      Config
	log      *slog.Logger

	mu     sync.Mutex
	actors map[string]*handle
	// owners is what the lease watch last said of each mysis: its holder and when that was heard (see holderLocked).
	owners map[string]seenOwner
	// gone holds myses whose actor ended by itself (deleted): their free lease must not be re-acquired from a
	// watch event or a wake, or a deleted mysis would bounce between acquire and release. A listing that still
	// shows the mysis clears the mark.
	gone map[string]bool
	// free holds myses whose lease was seen free and not yet taken, with when that was first seen: one free for a
	// whole rebalance interval is taken whatever the fair share says.
	free map[string]time.Time
	// replicas are the other live replicas, with when each last heartbeat was heard.
	replicas map[string]time.Time
	// listed is how many myses the last complete listing found.
	listed   int
	runCtx   context.Context
	acquireQ chan string
	wg       sync.WaitGroup
}

// New builds a manager.
func New(leases Leases, lister Lister, newActor func(id string) Actor, cfg Config) *Manager {
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = leases.TTL()
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 500
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{
		leases: leases, lister: lister, newActor: newActor, cfg: cfg, log: cfg.Logger,
		actors: map[string]*handle{}, owners: map[string]seenOwner{}, gone: map[string]bool{}, free: map[string]time.Time{},
		replicas: map[string]time.Time{}, acquireQ: make(chan string, 8192),
	}
}

// Run manages leases until ctx ends, then stops every actor at a safe point and releases the leases.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.runCtx = ctx
	m.mu.Unlock()
	if err := m.leases.Heartbeat(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("replica heartbeat failed", "err", err)
	}
	// Renewals outlive ctx: during a graceful shutdown actors keep their leases until they have ended, however long
	// ZOEA_STOP_GRACE is next to the TTL, or another replica could take a mysis that is still running here.
	rctx, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		m.renewer(ctx, rctx)
	}()
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		// The watch retries on its own until ctx ends; any other end is a bug worth an error log, and take-overs
		// then rest on the periodic scan alone.
		if err := m.leases.Watch(ctx, m.onLease, m.onReplica); err != nil && ctx.Err() == nil {
			m.log.Error("lease watch ended; free leases are now found by the periodic scan only", "err", err)
		}
	}()
	go func() {
		defer bg.Done()
		m.acquirer(ctx)
	}()

	m.scan(ctx)
	t := time.NewTicker(m.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			bg.Wait()
			m.shutdown()
			stopRenewing()
			<-renewed
			return nil
		case <-t.C:
			m.scan(ctx)
		}
	}
}

// onLease tracks owners and queues free leases for acquisition (take-over of a dead or stopping replica's myses).
func (m *Manager) onLease(id, owner string) {
	m.mu.Lock()
	_, mine := m.actors[id]
	if owner == "" {
		delete(m.owners, id)
		if _, seen := m.free[id]; !seen && !mine {
			m.free[id] = time.Now()
		}
	} else {
		m.owners[id] = seenOwner{owner, time.Now()}
		delete(m.free, id)
	}
	m.mu.Unlock()
	if owner == "" && !mine {
		m.enqueue(id)
	}
	if owner != "" && owner != m.leases.Holder() && mine {
		// Someone else holds it now: our lease is gone; stop at once.
		m.drop(id, "lease taken by "+owner)
	}
}

// onReplica tracks the other live replicas (this one always counts itself).
func (m *Manager) onReplica(holder string, live bool) {
	if holder == m.leases.Holder() {
		return
	}
	m.mu.Lock()
	if live {
		m.replicas[holder] = time.Now()
	} else {
		delete(m.replicas, holder)
	}
	m.mu.Unlock()
}

func (m *Manager) enqueue(id string) {
	select {
	case m.acquireQ <- id:
	default: // the next scan finds it
	}
}

func (m *Manager) acquirer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-m.acquireQ:
			m.mu.Lock()
			gone := m.gone[id]
			m.mu.Unlock()
			if !gone {
				m.tryAcquire(ctx, id)
			}
		}
	}
}

// scan lists every mysis and tries to acquire the ones nobody holds.
func (m *Manager) scan(ctx context.Context) {
	token := ""
	listed := map[string]bool{}
	for ctx.Err() == nil {
		ids, next, err := m.lister.ListMysisIDs(ctx, token, m.cfg.PageSize)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("list myses failed", "err", err)
			}
			return
		}
		for _, id := range ids {
			listed[id] = true
			m.mu.Lock()
			_, mine := m.actors[id]
			owner := m.holderLocked(id)
			delete(m.gone, id)
			if _, seen := m.free[id]; !seen && !mine && owner == "" {
				m.free[id] = time.Now()
			}
			m.mu.Unlock()
			if !mine && owner == "" {
				m.tryAcquire(ctx, id)
			}
		}
		if next == "" {
			m.mu.Lock()
			m.listed = len(listed)
			for id := range m.free {
				if !listed[id] {
					delete(m.free, id) // deleted since: not a mysis to count or take
				}
			}
			m.mu.Unlock()
			if m.cfg.OnScan != nil {
				m.cfg.OnScan()
			}
			return
		}
		token = next
	}
}

func (m *Manager) tryAcquire(ctx context.Context, id string) {
	m.mu.Lock()
	_, mine := m.actors[id]
	room := m.roomLocked(id)
	m.mu.Unlock()
	if mine || !room || ctx.Err() != nil {
		return
	}
	ok, err := m.leases.Acquire(ctx, id)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("acquire lease failed", "mysis_id", id, "err", err)
		}
		return
	}
	if !ok {
		return
	}
	m.start(ctx, id)
}

// start runs an actor for a freshly acquired lease. The actor reconciles from memory by itself (it reads the
// stored state and memories first), which is what makes lost wakes harmless.
func (m *Manager) start(ctx context.Context, id string) {
	// Not a child of ctx: on shutdown actors get StopGrace to reach a safe point before they are cancelled.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &handle{actor: m.newActor(id), cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	if _, dup := m.actors[id]; dup || ctx.Err() != nil {
		m.mu.Unlock()
		cancel()
		return
	}
	m.actors[id] = h
	m.owners[id] = seenOwner{m.leases.Holder(), time.Now()}
	delete(m.free, id)
	m.mu.Unlock()
	m.log.Info("lease acquired; actor started", "mysis_id", id)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(h.done)
		_ = h.actor.Run(actx)
		m.mu.Lock()
		dropped, handover := h.dropped, h.handover
		if m.actors[id] == h {
			delete(m.actors, id)
		}
		if !dropped && !handover {
			m.gone[id] = true
		}
		m.mu.Unlock()
		cancel()
		if !dropped {
			// Handed over (the actor ended at a turn boundary or a safe point) or ended by itself (mysis deleted):
			// give the lease back now, so another replica takes it at once.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := m.leases.Release(rctx, id); err != nil {
				m.log.Warn("release lease failed", "mysis_id", id, "err", err)
			} else if handover {
				m.log.Info("lease released; mysis handed over", "mysis_id", id)
			}
			rcancel()
		}
	}()
}

// drop stops an actor at once because its lease is gone.
func (m *Manager) drop(id, why string) {
	m.mu.Lock()
	h, ok := m.actors[id]
	if ok {
		h.dropped = true
		delete(m.actors, id)
	}
	m.mu.Unlock()
	if ok {
		m.log.Warn("lease lost; actor stopped", "mysis_id", id, "why", why)
		h.cancel()
	}
}

// renewer renews the held leases every TTL/3 until rctx ends (after the shutdown), and heartbeats and rebalances
// only until ctx (the run) ends.
func (m *Manager) renewer(ctx, rctx context.Context) {
	t := time.NewTicker(max(m.leases.TTL()/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-rctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() == nil {
			if err := m.leases.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("replica heartbeat failed", "err", err)
			}
		}
		lost, err := m.renewAll(rctx)
		for _, id := range lost {
			m.drop(id, "renew failed")
		}
		if err != nil && rctx.Err() == nil {
			m.log.Warn("lease renewal failed", "err", err)
		}
		// A lease that could not be renewed for a whole TTL may belong to someone else by now.
		m.mu.Lock()
		var stale []string
		for id := range m.actors {
			if !m.leases.Valid(id) {
				stale = append(stale, id)
			}
		}
		m.mu.Unlock()
		for _, id := range stale {
			m.drop(id, "lease not renewed within its TTL")
			cctx, cancel := context.WithTimeout(rctx, time.Second)
			_ = m.leases.Release(cctx, id)
			cancel()
		}
		m.rebalance()
	}
}

// liveLocked counts the live replicas, this one included: the others heard within a TTL (a live replica beats
// every TTL/3; a dead one's heartbeat expires without an event on a NATS server before 2.11). m.mu must be held.
func (m *Manager) liveLocked() int {
	n := 1
	for _, at := range m.replicas {
		if time.Since(at) <= m.leases.TTL() {
			n++
		}
	}
	return n
}

// keptLocked counts the actors this replica keeps (not handing over). m.mu must be held.
func (m *Manager) keptLocked() int {
	n := 0
	for _, h := range m.actors {
		if !h.handover {
			n++
		}
	}
	return n
}

// totalLocked is how many myses there are, as far as this replica knows: the larger of the last listing and the
// leases held by anybody plus the myses seen free (a new mysis's start wake counts before the next listing).
// m.mu must be held.
func (m *Manager) totalLocked() int {
	owned := 0
	for id := range m.owners {
		if m.holderLocked(id) != "" {
			owned++
		}
	}
	return max(m.listed, owned+len(m.free))
}

// roomLocked reports whether this replica may take id's free lease: it holds fewer than its fair share, or the
// lease has been free for a whole rebalance interval (nobody else took it: the counts disagree). m.mu must be held.
func (m *Manager) roomLocked(id string) bool {
	if since, ok := m.free[id]; ok && time.Since(since) >= m.rebalanceEvery() {
		return true
	}
	fair := int(math.Ceil(float64(max(m.totalLocked(), 1)) / float64(m.liveLocked())))
	return m.keptLocked() < fair
}

func (m *Manager) rebalanceEvery() time.Duration { return max(m.leases.TTL()/3, 10*time.Millisecond) }

// rebalance asks surplus actors to yield when this replica holds more than its fair share plus the tolerance, and
// retries free leases that were refused for want of room. Which actors yield is deterministic: the highest ids.
func (m *Manager) rebalance() {
	m.mu.Lock()
	if m.runCtx == nil || m.runCtx.Err() != nil {
		m.mu.Unlock()
		return
	}
	n, total := m.liveLocked(), m.totalLocked()
	fair := float64(total) / float64(n)
	kept := m.keptLocked()
	var yield []*handle
	var ids []string
	if kept > int(math.Ceil(fair*(1+Tolerance))) {
		for id, h := range m.actors {
			if !h.handover {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		ids = ids[int(math.Ceil(fair)):]
		for _, id := range ids {
			h := m.actors[id]
			h.handover = true
			yield = append(yield, h)
		}
	}
	var retry []string
	for id := range m.free {
		retry = append(retry, id)
	}
	m.mu.Unlock()
	if len(yield) > 0 {
		m.log.Info("rebalancing: handing myses over at their next turn boundary", "replicas", n, "myses", total, "held", kept, "yielding", len(yield))
	}
	for _, h := range yield {
		h.actor.Yield()
	}
	for _, id := range retry {
		m.enqueue(id)
	}
}

// renewAll renews every lease this replica runs, many at once: one by one, a thousand KV round trips on a busy
// machine can take longer than the TTL, and the leases would expire while being renewed.
func (m *Manager) renewAll(ctx context.Context) (lost []string, firstErr error) {
	var mu sync.Mutex
	var g errgroup.Group // no shared context: one failed renewal must not cancel the others
	g.SetLimit(64)
	for _, id := range m.Held() {
		g.Go(func() error {
			gone, err := m.leases.Renew(ctx, id)
			if gone {
				mu.Lock()
				lost = append(lost, id)
				mu.Unlock()
				return nil
			}
			return err
		})
	}
	return lost, g.Wait()
}

// shutdown withdraws this replica's presence and asks every actor to yield at the end of its turn; after half of
// StopGrace those still in a turn are asked to stop at the next safe point (after the current model call or tool),
// and after StopGrace the rest are cancelled. Each lease is released the moment its actor has ended, so other
// replicas take over at once.
func (m *Manager) shutdown() {
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := m.leases.Leave(lctx); err != nil {
		m.log.Warn("replica leave failed", "err", err)
	}
	lcancel()
	m.mu.Lock()
	hs := make(map[string]*handle, len(m.actors))
	for id, h := range m.actors {
		if !h.dropped {
			h.handover = true
		}
		hs[id] = h
		h.actor.Yield()
	}
	m.mu.Unlock()
	stop := time.NewTimer(m.cfg.StopGrace / 2)
	defer stop.Stop()
	deadline := time.NewTimer(m.cfg.StopGrace)
	defer deadline.Stop()
	for _, h := range hs {
	wait:
		for {
			select {
			case <-h.done:
				break wait
			case <-stop.C:
				for _, h := range hs {
					h.actor.Stop()
				}
			case <-deadline.C:
				for _, h := range hs {
					h.cancel()
				}
			}
		}
	}
	m.wg.Wait()
	m.mu.Lock()
	m.actors = map[string]*handle{}
	m.mu.Unlock()
	m.log.Info("actors stopped and leases released", "count", len(hs))
}

// Wake routes a wake to the mysis's actor when this replica holds it. A start/direct/broadcast wake for a mysis
// nobody holds (a new one) makes this replica try to take it right away instead of waiting for the next scan.
func (m *Manager) Wake(id string, r mysis.WakeReason) {
	m.mu.Lock()
	h, mine := m.actors[id]
	owner := m.holderLocked(id)
	m.mu.Unlock()
	if mine {
		h.actor.Wake(r)
		return
	}
	if owner == "" && r != mysis.WakeDelete && r != mysis.WakeStop {
		m.mu.Lock()
		if _, seen := m.free[id]; !seen {
			m.free[id] = time.Now()
		}
		m.mu.Unlock()
		m.enqueue(id)
	}
}

// WakeAll wakes every owned actor (after a NATS reconnect: wakes may have been lost).
func (m *Manager) WakeAll(r mysis.WakeReason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range m.actors {
		h.actor.Wake(r)
	}
}

// Owner returns the holder of a mysis's lease as last seen ("" when free, expired or unknown).
func (m *Manager) Owner(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holderLocked(id)
}

// holderLocked is the holder of id's lease as the watch reported it, or "" when it is free, unknown, or has not
// been heard of for a whole TTL. A holder renews every TTL/3 and each renewal reaches the watch, so a lease that
// went a TTL without one has expired on the server (MaxAge counts from the last write, which came before it was
// heard). A NATS server without limit markers (before 2.11, Debian 12's 2.9) never reports that expiry, and the
// scan would otherwise skip a crashed replica's myses for ever. m.mu must be held.
func (m *Manager) holderLocked(id string) string {
	o, ok := m.owners[id]
	if !ok || time.Since(o.at) > m.leases.TTL() {
		return ""
	}
	return o.holder
}

// Silent reports a mysis whose lease holder (another replica) has not been heard renewing it for over half a TTL,
// though it renews every third of one: that replica has most likely stopped, and the mysis's play is paused until
// the lease expires, at the latest at the returned time, when a live replica takes it over.
func (m *Manager) Silent(id string) (expires time.Time, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, known := m.owners[id]
	if !known || o.holder == m.leases.Holder() {
		return time.Time{}, false
	}
	return silentUntil(o.at, m.leases.TTL(), time.Now())
}

// silentUntil is Silent's rule for a holder last heard at heard: silent after half a TTL, until heard+TTL.
func silentUntil(heard time.Time, ttl time.Duration, now time.Time) (time.Time, bool) {
	expires := heard.Add(ttl)
	if now.Sub(heard) <= ttl/2 || !now.Before(expires) {
		return time.Time{}, false
	}
	return expires, true
}

// Local returns the live status of a mysis run by this replica.
func (m *Manager) Local(id string) (mysis.Status, bool) {
	m.mu.Lock()
	h, ok := m.actors[id]
	m.mu.Unlock()
	if !ok {
		return mysis.Status{}, false
	}
	return h.actor.Status(), true
}

// Held lists the myses this replica runs.
func (m *Manager) Held() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.actors))
	for id := range m.actors {
		out = append(out, id)
	}
	return out
}
