package swarmbus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseLost is returned by Renew when this holder no longer holds the lease: it expired and someone else took
// it, or it was never held. The runner must stop acting for that mysis at once.
var ErrLeaseLost = errors.New("swarmbus: lease lost")

const leaseKeyPrefix = "mysis."

func leaseKey(mysisID string) string { return leaseKeyPrefix + mysisID }

// Leases gives one runner replica (the holder) exclusive ownership of myses. Rules for the runner:
//
//   - Holder ids must be unique per process (NewHolderID).
//   - Acquire before acting for a mysis, then reconcile it from the memory service: wakes sent while nobody held
//     the lease were lost, but everything they announced is in memory.
//   - Renew every held lease well within the TTL (every TTL/3: RenewAll does all of them). On ErrLeaseLost stop
//     the mysis's actor immediately: another replica may already own it.
//   - Act only while Valid reports true. If renewals fail for another reason (NATS unreachable), Valid turns false
//     once a TTL has passed since the last successful write — the moment another replica may acquire it.
//   - Release on graceful shutdown (and when a mysis is deleted), so others need not wait for the TTL.
//   - Learn about free leases with Watch (releases and expiries) and try to Acquire them, so a dead replica's myses
//     are taken over within TTL + the watch latency. New myses arrive by a "start" wake or a memory listing.
//
// Leases is safe for concurrent use.
type Leases struct {
	b      *Bus
	holder string

	mu   sync.Mutex
	held map[string]heldLease
}

type heldLease struct {
	rev uint64
	// sent is when the last successful write was sent. The server stamps the entry no earlier, so the entry cannot
	// expire (and nobody else can acquire it) before sent + TTL.
	sent time.Time
}

// NewHolderID returns a holder id unique to this process: the host name and a random suffix.
func NewHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "runner"
	}
	return host + "-" + uuid.NewString()[:8]
}

// Leases returns the lease API for holder (see NewHolderID).
func (b *Bus) Leases(holder string) (*Leases, error) {
	if holder == "" {
		return nil, errors.New("swarmbus: empty lease holder id")
	}
	if b.opts.Role == RoleBus {
		return nil, errNoBuckets
	}
	return &Leases{b: b, holder: holder, held: map[string]heldLease{}}, nil
}

// Holder is this holder's id, the value stored in its leases.
func (l *Leases) Holder() string { return l.holder }

// TTL is the lease time-to-live (the bucket's MaxAge).
func (l *Leases) TTL() time.Duration { return l.b.LeaseTTL() }

// Acquire tries to take the lease of mysisID. It returns true when this holder now holds it (also when it already
// did), false when another holder does. Only one of any number of concurrent callers wins.
func (l *Leases) Acquire(ctx context.Context, mysisID string) (bool, error) {
	if err := ValidateID(mysisID); err != nil {
		return false, fmt.Errorf("lease mysis id: %w", err)
	}
	kv := l.b.bucket()
	key := leaseKey(mysisID)
	for range 3 {
		sent := time.Now()
		rev, err := kv.Create(ctx, key, []byte(l.holder))
		if err == nil {
			l.set(mysisID, rev, sent)
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return false, fmt.Errorf("swarmbus: acquire lease %s: %w", mysisID, err)
		}
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // it expired or was released in between: try again
		}
		if err != nil {
			return false, fmt.Errorf("swarmbus: acquire lease %s: %w", mysisID, err)
		}
		if string(e.Value()) != l.holder {
			l.forget(mysisID)
			return false, nil
		}
		// Ours already (this holder lost track of it): adopt it with a compare-and-set.
		sent = time.Now()
		rev, err = kv.Update(ctx, key, []byte(l.holder), e.Revision())
		if err == nil {
			l.set(mysisID, rev, sent)
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, fmt.Errorf("swarmbus: acquire lease %s: %w", mysisID, err)
		}
	}
	return false, nil
}

// Renew extends the lease of mysisID by a TTL. It fails with ErrLeaseLost when this holder does not hold it any
// more; other errors (NATS unreachable) leave the lease as it was — keep acting only while Valid.
func (l *Leases) Renew(ctx context.Context, mysisID string) error {
	l.mu.Lock()
	h, ok := l.held[mysisID]
	l.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: mysis %s is not held by %s", ErrLeaseLost, mysisID, l.holder)
	}
	sent := time.Now()
	rev, err := l.b.bucket().Update(ctx, leaseKey(mysisID), []byte(l.holder), h.rev)
	if err == nil {
		l.set(mysisID, rev, sent)
		return nil
	}
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) {
		l.forget(mysisID)
		return fmt.Errorf("%w: mysis %s: %w", ErrLeaseLost, mysisID, err)
	}
	return fmt.Errorf("swarmbus: renew lease %s: %w", mysisID, err)
}

// renewConcurrency bounds RenewAll's KV round trips in flight: one after another, a thousand renewals on a busy
// machine can outlast the TTL they are meant to extend.
const renewConcurrency = 64

// RenewAll renews every held lease, up to 64 at a time. It returns the myses whose lease was lost (stop them),
// sorted, and the first other error, if any; a lease that failed for another reason stays held until it renews or
// stops being Valid.
func (l *Leases) RenewAll(ctx context.Context) (lost []string, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, renewConcurrency)
	for _, id := range l.Held() {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rerr := l.Renew(ctx, id)
			if rerr == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(rerr, ErrLeaseLost) {
				lost = append(lost, id)
			} else if err == nil {
				err = rerr
			}
		})
	}
	wg.Wait()
	slices.Sort(lost)
	return lost, err
}

// Release gives the lease of mysisID up if this holder holds it, so another replica can take it at once.
// Releasing a lease that is not held (or no longer held) is not an error.
func (l *Leases) Release(ctx context.Context, mysisID string) error {
	l.mu.Lock()
	h, ok := l.held[mysisID]
	delete(l.held, mysisID)
	l.mu.Unlock()
	if !ok {
		return nil
	}
	kv, key, rev := l.b.bucket(), leaseKey(mysisID), h.rev
	for range 3 {
		err := kv.Delete(ctx, key, jetstream.LastRevision(rev))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("swarmbus: release lease %s: %w", mysisID, err)
		}
		// A renewal that was in flight may have moved the revision on: if the entry is still ours, delete that one
		// (otherwise the lease would stay held, unrenewed, until its TTL). Someone else's entry is left alone.
		e, gerr := kv.Get(ctx, key)
		if gerr != nil || string(e.Value()) != l.holder {
			return nil
		}
		rev = e.Revision()
	}
	l.forget(mysisID)
	return nil
}

// ReleaseAll releases every lease this holder holds (graceful shutdown), returning the first error.
func (l *Leases) ReleaseAll(ctx context.Context) error {
	var first error
	for _, id := range l.Held() {
		if err := l.Release(ctx, id); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Owner returns the holder of mysisID's lease, or "" when it is free.
func (l *Leases) Owner(ctx context.Context, mysisID string) (string, error) {
	if err := ValidateID(mysisID); err != nil {
		return "", fmt.Errorf("lease mysis id: %w", err)
	}
	e, err := l.b.bucket().Get(ctx, leaseKey(mysisID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("swarmbus: lease owner %s: %w", mysisID, err)
	}
	return string(e.Value()), nil
}

// Owners returns every current lease: mysis id → holder.
func (l *Leases) Owners(ctx context.Context) (map[string]string, error) {
	w, err := l.b.bucket().Watch(ctx, leaseKeyPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("swarmbus: list leases: %w", err)
	}
	defer func() { _ = w.Stop() }()
	out := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("swarmbus: list leases: watcher closed")
			}
			if e == nil {
				return out, nil
			}
			if ev := toLeaseEvent(e); ev.Owner != "" {
				out[ev.MysisID] = ev.Owner
			}
		}
	}
}

// Held lists the myses this holder holds, sorted.
func (l *Leases) Held() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.held))
	for id := range l.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Valid reports whether this holder holds mysisID's lease and less than a TTL has passed since its last successful
// acquire or renew, i.e. whether no other holder can have taken it yet.
func (l *Leases) Valid(mysisID string) bool {
	l.mu.Lock()
	h, ok := l.held[mysisID]
	l.mu.Unlock()
	return ok && time.Since(h.sent) < l.TTL()
}

func (l *Leases) set(id string, rev uint64, sent time.Time) {
	l.mu.Lock()
	l.held[id] = heldLease{rev: rev, sent: sent}
	l.mu.Unlock()
}

func (l *Leases) forget(id string) {
	l.mu.Lock()
	delete(l.held, id)
	l.mu.Unlock()
}

// LeaseEvent is a change of one lease seen by Watch.
type LeaseEvent struct {
	MysisID string
	// Owner is the new holder; "" means the lease is free (released, or expired because its holder stopped
	// renewing) and may be acquired.
	Owner string
	// Revision is the KV revision of the change.
	Revision uint64
}

func toLeaseEvent(e jetstream.KeyValueEntry) LeaseEvent {
	ev := LeaseEvent{MysisID: lastToken(e.Key(), leaseKeyPrefix), Revision: e.Revision()}
	if op := e.Operation(); op != jetstream.KeyValueDelete && op != jetstream.KeyValuePurge {
		ev.Owner = string(e.Value())
	}
	return ev
}

// Watch calls handler with every current lease, then with every change (acquisitions, releases, expiries), until
// ctx is done; it restarts the underlying watcher if it breaks. handler runs on Watch's goroutine and must not
// block for long. A dead replica's leases show up as free events about a TTL after its last renewal.
func (l *Leases) Watch(ctx context.Context, handler func(LeaseEvent)) error {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		w, err := l.b.bucket().Watch(ctx, leaseKeyPrefix+"*")
		if err != nil {
			l.b.log.Warn("lease watch failed; retrying", "err", err, "attempt", attempt)
			sleep(ctx, backoff(attempt, 200*time.Millisecond, 5*time.Second))
			continue
		}
		for e := range w.Updates() {
			if e != nil {
				handler(toLeaseEvent(e))
			}
		}
		_ = w.Stop()
	}
	return ctx.Err()
}
