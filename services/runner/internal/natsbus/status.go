package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// StatusBucket is the KV bucket of live statuses: key "mysis.<id>", value the JSON mysis.Status. Statuses are
// observations (the memory service holds the truth), so the bucket is in memory and keeps one revision.
const StatusBucket = "zoea_status"

const statusPrefix = "mysis."

// Statuses writes this replica's actor statuses and mirrors everyone's into memory through a KV watch, so the admin
// API answers List/Get for a whole swarm without a round trip per mysis.
type Statuses struct {
	kv  jetstream.KeyValue
	log *slog.Logger

	mu    sync.RWMutex
	cache map[string]mysis.Status
	ready chan struct{}
}

// OpenStatuses connects the status bucket on an existing NATS connection (creating it when missing).
func OpenStatuses(ctx context.Context, nc *nats.Conn, log *slog.Logger) (*Statuses, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var kv jetstream.KeyValue
	for attempt := 0; ; attempt++ {
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: StatusBucket, Description: "Zoea runner live mysis statuses", History: 1, Storage: jetstream.MemoryStorage,
		})
		if err == nil {
			break
		}
		if attempt >= 20 || ctx.Err() != nil {
			return nil, fmt.Errorf("status bucket: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Statuses{kv: kv, log: log, cache: map[string]mysis.Status{}, ready: make(chan struct{})}, nil
}

// PutStatus implements mysis.StatusSink (best effort).
func (s *Statuses) PutStatus(ctx context.Context, st mysis.Status) {
	b, err := json.Marshal(st)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.cache[st.MysisID] = st
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := s.kv.Put(ctx, statusPrefix+st.MysisID, b); err != nil {
		s.log.Debug("put status failed", "mysis_id", st.MysisID, "err", err)
	}
}

// Delete forgets a deleted mysis's status.
func (s *Statuses) Delete(ctx context.Context, id string) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
	_ = s.kv.Delete(ctx, statusPrefix+id)
}

// Get returns the last status any replica wrote for the mysis.
func (s *Statuses) Get(id string) (mysis.Status, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.cache[id]
	return st, ok
}

// Watch mirrors the bucket into memory until ctx ends.
func (s *Statuses) Watch(ctx context.Context) error {
	once := sync.Once{}
	defer once.Do(func() { close(s.ready) })
	for ctx.Err() == nil {
		w, err := s.kv.WatchAll(ctx)
		if err != nil {
			s.log.Warn("status watch failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for e := range w.Updates() {
			if e == nil {
				once.Do(func() { close(s.ready) })
				continue
			}
			id := strings.TrimPrefix(e.Key(), statusPrefix)
			if e.Operation() != jetstream.KeyValuePut {
				s.mu.Lock()
				delete(s.cache, id)
				s.mu.Unlock()
				continue
			}
			var st mysis.Status
			if json.Unmarshal(e.Value(), &st) == nil {
				s.mu.Lock()
				if old, ok := s.cache[id]; !ok || !old.UpdatedAt.After(st.UpdatedAt) {
					s.cache[id] = st
				}
				s.mu.Unlock()
			}
		}
		_ = w.Stop()
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}
