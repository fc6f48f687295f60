package natsbus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Statuses writes this replica's actor statuses to the shared status store (swarmbus.Statuses, KV bucket
// zoea_status) and mirrors everyone's into memory through a watch, so the admin API answers List/Get for a whole
// swarm without a round trip per mysis.
type Statuses struct {
	store *swarmbus.Statuses
	log   *slog.Logger

	mu      sync.RWMutex
	cache   map[string]mysis.Status
	changed chan struct{} // closed (and replaced) each time the watch mirrors a write
}

// NewStatuses adapts store (bus.Statuses(), on the replica's shared NATS connection).
func NewStatuses(store *swarmbus.Statuses, log *slog.Logger) *Statuses {
	if log == nil {
		log = slog.Default()
	}
	return &Statuses{store: store, log: log, cache: map[string]mysis.Status{}, changed: make(chan struct{})}
}

// Changed returns a channel that is closed the next time the watch mirrors a write (a put, newer or not, or a
// delete) from any replica. Take it before looking at Get, so no write can slip in between.
func (s *Statuses) Changed() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changed
}

// PutStatus implements mysis.StatusSink (best effort: a status is an observation, memory holds the truth).
func (s *Statuses) PutStatus(ctx context.Context, st mysis.Status) {
	s.mu.Lock()
	s.cache[st.MysisID] = st
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := s.store.Put(ctx, ToBusStatus(st)); err != nil {
		s.log.Debug("put status failed", "mysis_id", st.MysisID, "err", err)
	}
}

// Delete forgets a deleted mysis's status.
func (s *Statuses) Delete(ctx context.Context, id string) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
	if err := s.store.Delete(ctx, id); err != nil {
		s.log.Debug("delete status failed", "mysis_id", id, "err", err)
	}
}

// Len is how many myses' statuses are mirrored: one per mysis of the swarm (deleted myses are forgotten).
func (s *Statuses) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.cache)
}

// Get returns the last status any replica wrote for the mysis.
func (s *Statuses) Get(id string) (mysis.Status, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.cache[id]
	return st, ok
}

// Watch mirrors the store into memory until ctx ends. Of two writes for one mysis the newer (UpdatedAt) wins, so a
// replica that just lost a mysis cannot overwrite the new owner's status with an older one.
func (s *Statuses) Watch(ctx context.Context) error {
	err := s.store.Watch(ctx, func(ev swarmbus.StatusEvent) {
		s.mu.Lock()
		defer s.mu.Unlock()
		close(s.changed)
		s.changed = make(chan struct{})
		if ev.Status == nil {
			delete(s.cache, ev.MysisID)
			return
		}
		st := FromBusStatus(*ev.Status)
		if old, ok := s.cache[ev.MysisID]; !ok || !old.UpdatedAt.After(st.UpdatedAt) {
			s.cache[ev.MysisID] = st
		}
	}, nil)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// ToBusStatus converts a domain status to its wire form.
func ToBusStatus(st mysis.Status) swarmbus.Status {
	return swarmbus.Status{
		MysisID: st.MysisID, Owner: st.Owner, State: string(st.State), LastAction: st.LastAction,
		LastActionAt: st.LastActionAt, Credits: st.Credits, Turns: st.Turns, LastError: st.LastError, UpdatedAt: st.UpdatedAt,
		Ship: toBusShip(st.Ship),
	}
}

// FromBusStatus converts a wire status to the domain form.
func FromBusStatus(st swarmbus.Status) mysis.Status {
	return mysis.Status{
		MysisID: st.MysisID, Owner: st.Owner, State: mysis.State(st.State), LastAction: st.LastAction,
		LastActionAt: st.LastActionAt, Credits: st.Credits, Turns: st.Turns, LastError: st.LastError, UpdatedAt: st.UpdatedAt,
		Ship: fromBusShip(st.Ship),
	}
}

func toBusShip(sh *mysis.Ship) *swarmbus.Ship {
	if sh == nil {
		return nil
	}
	out := &swarmbus.Ship{
		System: sh.System, POI: sh.POI, DockedAt: sh.DockedAt, Class: sh.Class, Hull: sh.Hull, MaxHull: sh.MaxHull,
		Shield: sh.Shield, MaxShield: sh.MaxShield, Fuel: sh.Fuel, MaxFuel: sh.MaxFuel, CargoUsed: sh.CargoUsed,
		CargoCapacity: sh.CargoCapacity, CreditsEarned: sh.CreditsEarned, At: sh.At,
	}
	for _, c := range sh.Cargo {
		out.Cargo = append(out.Cargo, swarmbus.CargoItem{ItemID: c.ItemID, Quantity: c.Quantity})
	}
	return out
}

func fromBusShip(sh *swarmbus.Ship) *mysis.Ship {
	if sh == nil {
		return nil
	}
	out := &mysis.Ship{
		System: sh.System, POI: sh.POI, DockedAt: sh.DockedAt, Class: sh.Class, Hull: sh.Hull, MaxHull: sh.MaxHull,
		Shield: sh.Shield, MaxShield: sh.MaxShield, Fuel: sh.Fuel, MaxFuel: sh.MaxFuel, CargoUsed: sh.CargoUsed,
		CargoCapacity: sh.CargoCapacity, CreditsEarned: sh.CreditsEarned, At: sh.At,
	}
	for _, c := range sh.Cargo {
		out.Cargo = append(out.Cargo, mysis.CargoItem{ItemID: c.ItemID, Quantity: c.Quantity})
	}
	return out
}
