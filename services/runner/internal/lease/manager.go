// Package lease decides which myses this runner replica runs. Each mysis is leased to one replica (a KV entry with
// a TTL, renewed at TTL/3); a replica runs one actor per lease it holds, stops an actor the moment its lease is
// lost, takes over myses whose lease is free (a crashed replica's expire after the TTL; a stopping replica's are
// released at once) and finds new myses by listing them from the memory service and by "start" wakes.
package lease

import (
	"context"
	"log/slog"
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
	// Watch reports every lease and each change (owner "" = free) until ctx ends.
	Watch(ctx context.Context, handler func(mysisID, owner string)) error
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
	Status() mysis.Status
}

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
	// dropped is set when the manager itself ended the actor (lease lost, shutdown): no release on exit.
	dropped bool
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
	gone     map[string]bool
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
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		leases: leases, lister: lister, newActor: newActor, cfg: cfg, log: cfg.Logger,
		actors: map[string]*handle{}, owners: map[string]seenOwner{}, gone: map[string]bool{}, acquireQ: make(chan string, 8192),
	}
}

// Run manages leases until ctx ends, then stops every actor at a safe point and releases the leases.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.runCtx = ctx
	m.mu.Unlock()
	var bg sync.WaitGroup
	bg.Add(3)
	go func() {
		defer bg.Done()
		// The watch retries on its own until ctx ends; any other end is a bug worth an error log, and take-overs
		// then rest on the periodic scan alone.
		if err := m.leases.Watch(ctx, m.onLease); err != nil && ctx.Err() == nil {
			m.log.Error("lease watch ended; free leases are now found by the periodic scan only", "err", err)
		}
	}()
	go func() {
		defer bg.Done()
		m.acquirer(ctx)
	}()
	go func() {
		defer bg.Done()
		m.renewer(ctx)
	}()

	m.scan(ctx)
	t := time.NewTicker(m.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			bg.Wait()
			m.shutdown()
			return nil
		case <-t.C:
			m.scan(ctx)
		}
	}
}

// onLease tracks owners and queues free leases for acquisition (take-over of a dead or stopping replica's myses).
func (m *Manager) onLease(id, owner string) {
	m.mu.Lock()
	if owner == "" {
		delete(m.owners, id)
	} else {
		m.owners[id] = seenOwner{owner, time.Now()}
	}
	_, mine := m.actors[id]
	m.mu.Unlock()
	if owner == "" && !mine {
		m.enqueue(id)
	}
	if owner != "" && owner != m.leases.Holder() && mine {
		// Someone else holds it now: our lease is gone; stop at once.
		m.drop(id, "lease taken by "+owner)
	}
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
	for ctx.Err() == nil {
		ids, next, err := m.lister.ListMysisIDs(ctx, token, m.cfg.PageSize)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("list myses failed", "err", err)
			}
			return
		}
		for _, id := range ids {
			m.mu.Lock()
			_, mine := m.actors[id]
			owner := m.holderLocked(id)
			delete(m.gone, id)
			m.mu.Unlock()
			if !mine && owner == "" {
				m.tryAcquire(ctx, id)
			}
		}
		if next == "" {
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
	m.mu.Unlock()
	if mine || ctx.Err() != nil {
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
	m.mu.Unlock()
	m.log.Info("lease acquired; actor started", "mysis_id", id)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(h.done)
		_ = h.actor.Run(actx)
		m.mu.Lock()
		dropped := h.dropped
		if m.actors[id] == h {
			delete(m.actors, id)
		}
		if !dropped {
			m.gone[id] = true
		}
		m.mu.Unlock()
		cancel()
		if !dropped {
			// The actor ended by itself (mysis deleted): give the lease back.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = m.leases.Release(rctx, id)
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

func (m *Manager) renewer(ctx context.Context) {
	t := time.NewTicker(max(m.leases.TTL()/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lost, err := m.renewAll(ctx)
		for _, id := range lost {
			m.drop(id, "renew failed")
		}
		if err != nil && ctx.Err() == nil {
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
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			_ = m.leases.Release(rctx, id)
			cancel()
		}
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

// shutdown asks every actor to stop at a safe point, waits up to StopGrace, cancels the rest and releases every
// lease so other replicas take over at once.
func (m *Manager) shutdown() {
	m.mu.Lock()
	hs := make(map[string]*handle, len(m.actors))
	for id, h := range m.actors {
		h.dropped = true
		hs[id] = h
		h.actor.Stop()
	}
	m.mu.Unlock()
	deadline := time.After(m.cfg.StopGrace)
	for _, h := range hs {
		select {
		case <-h.done:
		case <-deadline:
			for _, h := range hs {
				h.cancel()
			}
		}
	}
	m.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id := range hs {
		if err := m.leases.Release(ctx, id); err != nil {
			m.log.Warn("release lease failed", "mysis_id", id, "err", err)
		}
	}
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
