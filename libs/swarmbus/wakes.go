package swarmbus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// WakeReason says why a mysis is poked. Whatever the reason, the owning runner re-reads the mysis from the memory
// service and acts on what it finds there; the reason is a hint for logs and fast paths.
type WakeReason string

// Wake reasons.
const (
	WakeBroadcast WakeReason = "broadcast" // a broadcast was stored in its memory
	WakeDirect    WakeReason = "direct"    // a direct message was stored in its memory
	WakeStart     WakeReason = "start"     // the commander started it
	WakeStop      WakeReason = "stop"      // the commander stopped it
	WakeConfigure WakeReason = "configure" // its configuration changed
	WakeDelete    WakeReason = "delete"    // it was deleted
)

// Valid reports whether r is one of the defined reasons.
func (r WakeReason) Valid() bool {
	switch r {
	case WakeBroadcast, WakeDirect, WakeStart, WakeStop, WakeConfigure, WakeDelete:
		return true
	}
	return false
}

const (
	headerWakeReason = "Zoea-Wake-Reason"
	headerWakeAt     = "Zoea-Wake-At"
)

// Wake is one poke received by SubscribeWakes.
type Wake struct {
	MysisID string
	Reason  WakeReason
	// At is when it was sent (sender's clock).
	At time.Time
}

// PublishWake pokes the runner replica that owns mysisID. It is fire-and-forget over core NATS: see the package
// comment for why a lost wake is safe (the runner reconciles from memory on lease acquisition and reconnect).
func (b *Bus) PublishWake(ctx context.Context, mysisID string, reason WakeReason) error {
	h, err := b.wakeHeader(ctx, reason)
	if err != nil {
		return err
	}
	return b.publishWake(mysisID, h)
}

// PublishWakes pokes many myses (a broadcast's targets) and returns once NATS has received them all, so a caller
// that acknowledges work afterwards knows the wakes left this process.
func (b *Bus) PublishWakes(ctx context.Context, mysisIDs []string, reason WakeReason) error {
	h, err := b.wakeHeader(ctx, reason)
	if err != nil {
		return err
	}
	for _, id := range mysisIDs {
		if err := b.publishWake(id, h); err != nil {
			return err
		}
	}
	if err := b.flush(ctx); err != nil {
		return fmt.Errorf("swarmbus: flush wakes: %w", err)
	}
	return nil
}

// wakeHeader builds the headers shared by a batch of wakes (reason, time, trace context), once per batch: a
// broadcast wakes thousands of myses and the headers are identical.
func (b *Bus) wakeHeader(ctx context.Context, reason WakeReason) (nats.Header, error) {
	if !reason.Valid() {
		return nil, fmt.Errorf("swarmbus: invalid wake reason %q", reason)
	}
	h := nats.Header{}
	h.Set(headerWakeReason, string(reason))
	h.Set(headerWakeAt, time.Now().UTC().Format(time.RFC3339Nano))
	b.opts.Propagator.Inject(ctx, headerCarrier(h))
	return h, nil
}

func (b *Bus) publishWake(mysisID string, h nats.Header) error {
	if err := ValidateID(mysisID); err != nil {
		return fmt.Errorf("wake mysis id: %w", err)
	}
	if err := b.nc.PublishMsg(&nats.Msg{Subject: b.names.wake(mysisID), Header: h}); err != nil {
		return fmt.Errorf("swarmbus: publish wake for %s: %w", mysisID, err)
	}
	return nil
}

// flush waits until the server has processed everything sent so far (bounded by PublishTimeout).
func (b *Bus) flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.opts.PublishTimeout)
	defer cancel()
	return b.nc.FlushWithContext(ctx)
}

// Subscription is a live subscription; it ends when its context is done or Stop is called.
type Subscription struct {
	subs []*nats.Subscription
	stop func() bool
	done chan struct{}
}

// Stop unsubscribes. It is idempotent.
func (s *Subscription) Stop() {
	if s.stop() {
		s.unsubscribe()
	}
}

func (s *Subscription) unsubscribe() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	close(s.done)
}

// Done is closed once the subscription has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

func newSubscription(ctx context.Context, subs []*nats.Subscription) *Subscription {
	s := &Subscription{subs: subs, done: make(chan struct{})}
	s.stop = context.AfterFunc(ctx, s.unsubscribe)
	return s
}

// SubscribeWakes calls handler for every wake of every mysis, in arrival order, until ctx is done. Every runner
// replica subscribes (no queue group) and ignores the myses whose lease it does not hold. handler runs on the
// subscription's goroutine: it must not block (hand the wake to the mysis's actor and return). Subscriptions
// survive reconnects, but wakes sent while disconnected are lost: reconcile in OnReconnect.
func (b *Bus) SubscribeWakes(ctx context.Context, handler func(context.Context, Wake)) (*Subscription, error) {
	sub, err := b.nc.Subscribe(b.names.WakePrefix+"*", func(m *nats.Msg) {
		w := Wake{MysisID: lastToken(m.Subject, b.names.WakePrefix), Reason: WakeReason(m.Header.Get(headerWakeReason))}
		if at, err := time.Parse(time.RFC3339Nano, m.Header.Get(headerWakeAt)); err == nil {
			w.At = at
		}
		hctx := b.opts.Propagator.Extract(context.WithoutCancel(ctx), headerCarrier(m.Header))
		handler(hctx, w)
	})
	if err != nil {
		return nil, fmt.Errorf("swarmbus: subscribe wakes: %w", err)
	}
	// A broadcast pokes every mysis at once; give a busy runner room before NATS drops wakes as a slow consumer.
	_ = sub.SetPendingLimits(1<<20, 256<<20)
	if err := b.flush(ctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("swarmbus: subscribe wakes: %w", err)
	}
	return newSubscription(ctx, []*nats.Subscription{sub}), nil
}
