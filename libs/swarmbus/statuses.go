package swarmbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStatusNotFound is returned by Statuses.Get for a mysis with no stored status.
var ErrStatusNotFound = errors.New("swarmbus: no status")

const statusKeyPrefix = "mysis."

func statusKey(mysisID string) string { return statusKeyPrefix + mysisID }

// Status is what a mysis's actor is doing now, as the runner replica that runs it last reported. It is an
// observation for admin APIs and dashboards, not state: the memory service holds the truth (lifecycle state,
// turns, memories), so a lost or stale status is harmless. Stored as JSON; the field names are wire format.
type Status struct {
	MysisID string `json:"mysis_id"`
	// Owner is the runner replica that wrote it (its lease holder id).
	Owner        string    `json:"owner"`
	State        string    `json:"state"`
	LastAction   string    `json:"last_action"`
	LastActionAt time.Time `json:"last_action_at"`
	// Credits is the player's balance from the newest game result that reported it; -1 when unknown.
	Credits   int64     `json:"credits"`
	Turns     int64     `json:"turns"`
	LastError string    `json:"last_error"`
	UpdatedAt time.Time `json:"updated_at"`
	// Ship is the newest game state a result reported (location, ship condition and cargo, lifetime earnings);
	// absent until one did.
	Ship *Ship `json:"ship,omitempty"`
}

// Ship is a player's location, ship and earnings as its newest get_status reported them.
type Ship struct {
	System        string      `json:"system"`
	POI           string      `json:"poi"`
	DockedAt      string      `json:"docked_at,omitempty"`
	Class         string      `json:"class,omitempty"`
	Hull          int64       `json:"hull"`
	MaxHull       int64       `json:"max_hull"`
	Shield        int64       `json:"shield"`
	MaxShield     int64       `json:"max_shield"`
	Fuel          int64       `json:"fuel"`
	MaxFuel       int64       `json:"max_fuel"`
	CargoUsed     int64       `json:"cargo_used"`
	CargoCapacity int64       `json:"cargo_capacity"`
	Cargo         []CargoItem `json:"cargo,omitempty"`
	// CreditsEarned is the lifetime earnings, -1 when not reported.
	CreditsEarned int64     `json:"credits_earned"`
	At            time.Time `json:"at"`
}

// CargoItem is one stack of items aboard.
type CargoItem struct {
	ItemID   string `json:"item_id"`
	Quantity int64  `json:"quantity"`
}

// StatusEvent is a change seen by Statuses.Watch.
type StatusEvent struct {
	MysisID string
	// Status is the new status; nil when it was deleted.
	Status   *Status
	Revision uint64
}

// Statuses is the live-status store: the KV bucket zoea_status, key "mysis.<id>", value the JSON Status. It lives
// in memory on the NATS server and keeps one revision per key: statuses change every few seconds per mysis and
// are rebuilt by the actors after a NATS restart, so persisting them would cost a disk write per tool call for
// nothing. Every runner replica writes the statuses of the myses it runs and watches the whole bucket, so any
// replica can answer the admin API for the whole swarm without a round trip per mysis.
//
// Statuses is safe for concurrent use.
type Statuses struct{ b *Bus }

// Statuses returns the live-status store on b's connection.
func (b *Bus) Statuses() *Statuses { return &Statuses{b: b} }

// Put stores st under st.MysisID, replacing the previous status.
func (s *Statuses) Put(ctx context.Context, st Status) error {
	if err := ValidateID(st.MysisID); err != nil {
		return fmt.Errorf("status mysis id: %w", err)
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("swarmbus: encode status: %w", err)
	}
	kv, err := s.b.statusBucket()
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, statusKey(st.MysisID), data); err != nil {
		return fmt.Errorf("swarmbus: put status %s: %w", st.MysisID, err)
	}
	return nil
}

// Get returns the stored status of mysisID, or ErrStatusNotFound.
func (s *Statuses) Get(ctx context.Context, mysisID string) (Status, error) {
	if err := ValidateID(mysisID); err != nil {
		return Status{}, fmt.Errorf("status mysis id: %w", err)
	}
	kv, err := s.b.statusBucket()
	if err != nil {
		return Status{}, err
	}
	e, err := kv.Get(ctx, statusKey(mysisID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Status{}, fmt.Errorf("%w for mysis %s", ErrStatusNotFound, mysisID)
	}
	if err != nil {
		return Status{}, fmt.Errorf("swarmbus: get status %s: %w", mysisID, err)
	}
	var st Status
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return Status{}, fmt.Errorf("swarmbus: decode status %s: %w", mysisID, err)
	}
	return st, nil
}

// Delete forgets mysisID's status (a deleted mysis). Deleting a missing status is not an error.
func (s *Statuses) Delete(ctx context.Context, mysisID string) error {
	if err := ValidateID(mysisID); err != nil {
		return fmt.Errorf("status mysis id: %w", err)
	}
	kv, err := s.b.statusBucket()
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, statusKey(mysisID)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("swarmbus: delete status %s: %w", mysisID, err)
	}
	return nil
}

// List returns every stored status by mysis id. Undecodable entries are skipped.
func (s *Statuses) List(ctx context.Context) (map[string]Status, error) {
	kv, err := s.b.statusBucket()
	if err != nil {
		return nil, err
	}
	w, err := kv.Watch(ctx, statusKeyPrefix+"*", jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("swarmbus: list statuses: %w", err)
	}
	defer func() { _ = w.Stop() }()
	out := map[string]Status{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("swarmbus: list statuses: watcher closed")
			}
			if e == nil {
				return out, nil
			}
			if ev, ok := s.toEvent(e); ok && ev.Status != nil {
				out[ev.MysisID] = *ev.Status
			}
		}
	}
}

// Watch calls handler with every stored status, then synced once (nil is allowed) when they have all been
// delivered, then with every change until ctx is done. It restarts the underlying watcher when it breaks and
// after every reconnection (a restarted NATS server lost the in-memory bucket), replaying the current statuses and
// calling synced again. handler and synced run on Watch's goroutine and must
// not block for long. Undecodable entries are skipped.
func (s *Statuses) Watch(ctx context.Context, handler func(StatusEvent), synced func()) error {
	kv, err := s.b.statusBucket()
	if err != nil {
		return err
	}
	for attempt := 1; ctx.Err() == nil; attempt++ {
		reconnected := s.b.nextReconnect()
		// The bucket handle as of now: ensure replaces it after a reconnection.
		if k, err := s.b.statusBucket(); err == nil {
			kv = k
		}
		w, err := kv.Watch(ctx, statusKeyPrefix+"*")
		if err != nil {
			s.b.log.Warn("status watch failed; retrying", "err", err, "attempt", attempt)
			sleep(ctx, backoff(attempt, 200*time.Millisecond, 5*time.Second))
			continue
		}
		s.drain(ctx, w, reconnected, handler, synced)
		_ = w.Stop()
	}
	return ctx.Err()
}

// drain delivers one watcher's updates until it closes, ctx ends or the connection is re-established (the
// bucket is in memory: a restarted server lost it and the watcher would wait forever on the old one).
func (s *Statuses) drain(ctx context.Context, w jetstream.KeyWatcher, reconnected <-chan struct{}, handler func(StatusEvent), synced func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconnected:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				if synced != nil {
					synced()
				}
				continue
			}
			if ev, ok := s.toEvent(e); ok {
				handler(ev)
			}
		}
	}
}

func (s *Statuses) toEvent(e jetstream.KeyValueEntry) (StatusEvent, bool) {
	ev := StatusEvent{MysisID: lastToken(e.Key(), statusKeyPrefix), Revision: e.Revision()}
	if op := e.Operation(); op == jetstream.KeyValueDelete || op == jetstream.KeyValuePurge {
		return ev, true
	}
	var st Status
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		s.b.log.Warn("skipping undecodable status", "key", e.Key(), "err", err)
		return ev, false
	}
	ev.Status = &st
	return ev, true
}
