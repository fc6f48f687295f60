package swarmbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Replica presence lives in the lease bucket, next to the leases, under "replica.<holder>": the bucket's MaxAge
// (the lease TTL) makes a heartbeat that stops being written disappear by itself, and the runner's NATS user may
// already use every key of that bucket, so presence needs no bucket, permission or configuration of its own.
const replicaKeyPrefix = "replica."

// replicaKey is holder's presence key. Holder ids may hold characters a key token cannot (a host name's dots), so
// those become '_'; ids stay distinct in practice (NewHolderID and ZOEA_REPLICA_ID end in a random part or a pid).
func replicaKey(holder string) string {
	b := []byte(holder)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return replicaKeyPrefix + string(b)
}

// ReplicaEvent is a change of one runner replica's presence seen by WatchReplicas.
type ReplicaEvent struct {
	// Holder is the replica's holder id as its key spells it (see replicaKey).
	Holder string
	// Live is false when the replica left (Leave). A replica that died stops heartbeating; on a server with limit
	// markers (2.11+) its entry's expiry arrives as Live false, on older ones nothing arrives and the watcher must
	// age it out itself (a live replica beats every TTL/3).
	Live bool
}

// Heartbeat announces that this holder is a live runner replica for the next TTL. Call it every TTL/3.
func (l *Leases) Heartbeat(ctx context.Context) error {
	if _, err := l.b.bucket().Put(ctx, replicaKey(l.holder), []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return fmt.Errorf("swarmbus: replica heartbeat: %w", err)
	}
	return nil
}

// Leave withdraws this holder's heartbeat at once, so other replicas stop counting it (graceful shutdown).
func (l *Leases) Leave(ctx context.Context) error {
	err := l.b.bucket().Delete(ctx, replicaKey(l.holder))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("swarmbus: replica leave: %w", err)
	}
	return nil
}

// WatchSwarm is Watch for the leases and the replicas' presence together, through one watcher, so a departure and
// the releases that follow it arrive in the order they were written: onLease gets every lease and each change,
// onReplica every other replica's heartbeat and departure (never this holder's own). It runs until ctx is done and restarts the watcher if it breaks; the
// handlers run on its goroutine and must not block for long.
func (l *Leases) WatchSwarm(ctx context.Context, onLease func(LeaseEvent), onReplica func(ReplicaEvent)) error {
	self := replicaKey(l.holder)
	for attempt := 1; ctx.Err() == nil; attempt++ {
		w, err := l.b.bucket().WatchAll(ctx)
		if err != nil {
			l.b.log.Warn("lease watch failed; retrying", "err", err, "attempt", attempt)
			sleep(ctx, backoff(attempt, 200*time.Millisecond, 5*time.Second))
			continue
		}
		for e := range w.Updates() {
			switch {
			case e == nil:
			case strings.HasPrefix(e.Key(), leaseKeyPrefix):
				onLease(toLeaseEvent(e))
			case strings.HasPrefix(e.Key(), replicaKeyPrefix) && e.Key() != self:
				op := e.Operation()
				onReplica(ReplicaEvent{Holder: lastToken(e.Key(), replicaKeyPrefix), Live: op != jetstream.KeyValueDelete && op != jetstream.KeyValuePurge})
			}
		}
		_ = w.Stop()
	}
	return ctx.Err()
}
