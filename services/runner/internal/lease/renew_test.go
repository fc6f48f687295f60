package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// renewLeases is a Leases whose renewals block until released, fail or report loss by id, and whose Watch ends
// with watchErr.
type renewLeases struct {
	mu       sync.Mutex
	inFlight int
	maxSeen  int
	renewed  []string
	lost     map[string]bool
	failing  map[string]bool
	release  chan struct{}
	watchErr error
}

func (r *renewLeases) Holder() string                                { return "me" }
func (r *renewLeases) TTL() time.Duration                            { return time.Minute }
func (r *renewLeases) Acquire(context.Context, string) (bool, error) { return false, nil }
func (r *renewLeases) Valid(string) bool                             { return true }
func (r *renewLeases) Release(context.Context, string) error         { return nil }
func (r *renewLeases) Heartbeat(context.Context) error               { return nil }
func (r *renewLeases) Leave(context.Context) error                   { return nil }
func (r *renewLeases) Watch(context.Context, func(string, string), func(string, bool)) error {
	return r.watchErr
}
func (r *renewLeases) Renew(_ context.Context, id string) (bool, error) {
	r.mu.Lock()
	r.inFlight++
	r.maxSeen = max(r.maxSeen, r.inFlight)
	r.mu.Unlock()
	if r.release != nil {
		<-r.release
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	r.renewed = append(r.renewed, id)
	switch {
	case r.lost[id]:
		return true, nil
	case r.failing[id]:
		return false, fmt.Errorf("renew %s: kv timeout", id)
	}
	return false, nil
}

func holding(l Leases, n int) *Manager {
	m := New(l, fakeLister{}, nil, Config{})
	for i := range n {
		m.actors[fmt.Sprintf("m%03d", i)] = &handle{}
	}
	return m
}

// Renewals run at most 64 at once, a failed one does not stop the others, lost leases are reported and the
// failure is returned.
func TestRenewAllBoundedAndKeepsGoingPastAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &renewLeases{release: make(chan struct{}), lost: map[string]bool{"m007": true, "m150": true},
			failing: map[string]bool{"m042": true}}
		m := holding(l, 200)
		type result struct {
			lost []string
			err  error
		}
		done := make(chan result, 1)
		go func() {
			lost, err := m.renewAll(t.Context())
			done <- result{lost, err}
		}()
		synctest.Wait()
		l.mu.Lock()
		if l.inFlight != 64 {
			t.Errorf("renewals in flight = %d, want the limit 64", l.inFlight)
		}
		l.mu.Unlock()
		close(l.release)
		res := <-done
		if len(l.renewed) != 200 || l.maxSeen != 64 {
			t.Errorf("renewed %d leases with at most %d at once, want 200 and 64", len(l.renewed), l.maxSeen)
		}
		slices.Sort(res.lost)
		if !slices.Equal(res.lost, []string{"m007", "m150"}) {
			t.Errorf("lost = %v", res.lost)
		}
		if res.err == nil || res.err.Error() != "renew m042: kv timeout" {
			t.Errorf("err = %v, want the failed renewal", res.err)
		}
	})
}

// signalHandler forwards error-level log records.
type signalHandler struct {
	slog.Handler
	errs chan string
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		var err string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				err = a.Value.String()
			}
			return true
		})
		h.errs <- r.Message + ": " + err
	}
	return nil
}

// A lease watch that ends with an error while the manager runs is logged, not dropped.
func TestWatchErrorIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := signalHandler{Handler: slog.DiscardHandler, errs: make(chan string, 4)}
		l := &renewLeases{watchErr: errors.New("kv bucket deleted")}
		m := New(l, fakeLister{}, nil, Config{Logger: slog.New(h)})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		synctest.Wait()
		select {
		case msg := <-h.errs:
			if want := "lease watch ended; free leases are now found by the periodic scan only: kv bucket deleted"; msg != want {
				t.Errorf("logged %q, want %q", msg, want)
			}
		default:
			t.Error("the watch error was not logged")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(h.errs) != 0 {
			t.Errorf("unexpected error logs after shutdown: %q", <-h.errs)
		}
	})
}
