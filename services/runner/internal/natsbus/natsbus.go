// Package natsbus adapts libs/swarmbus (Zoea's NATS protocol) to the runner's ports: events, wakes, leases and the
// live-status store that lets every replica answer ListMyses/GetMysis for myses other replicas run. It names no
// subject or bucket itself; swarmbus does.
package natsbus

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/memorypb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Events publishes mysis events on the bus.
type Events struct {
	Bus *swarmbus.Bus
	Log *slog.Logger
}

// Publish implements mysis.Events.
func (e Events) Publish(ctx context.Context, ev mysis.Event) {
	if err := e.Bus.PublishEvent(ctx, ToProtoEvent(ev)); err != nil && e.Log != nil {
		e.Log.Debug("publish event failed", "err", err)
	}
}

// ToProtoEvent converts a domain event.
func ToProtoEvent(ev mysis.Event) *busv1.Event {
	out := &busv1.Event{MysisId: ev.MysisID, At: timestamppb.New(ev.At)}
	switch ev.Kind {
	case mysis.EventStateChanged:
		out.Kind = busv1.EventKind_EVENT_KIND_STATE_CHANGED
		out.Payload = &busv1.Event_StateChanged{StateChanged: &busv1.StateChanged{
			From: memorypb.ToProtoState(ev.From), To: memorypb.ToProtoState(ev.To), Reason: ev.Reason}}
	case mysis.EventMemoryAppended:
		out.Kind = busv1.EventKind_EVENT_KIND_MEMORY_APPENDED
		out.Payload = &busv1.Event_MemoryAppended{MemoryAppended: &busv1.MemoryAppended{
			MemoryIds: ev.MemoryIDs, Seqs: ev.Seqs, Role: chatpb.ToProtoRole(ev.Role), Excerpt: ev.Excerpt}}
	case mysis.EventToolCalled:
		out.Kind = busv1.EventKind_EVENT_KIND_TOOL_CALLED
		out.Payload = &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{
			Tool: ev.Tool, CallId: ev.CallID, IsError: ev.IsError, DurationMs: ev.Duration.Milliseconds(), Excerpt: ev.Excerpt}}
	case mysis.EventError:
		out.Kind = busv1.EventKind_EVENT_KIND_ERROR
		out.Payload = &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: ev.Message}}
	case mysis.EventSpendLimited:
		out.Kind = busv1.EventKind_EVENT_KIND_SPEND_LIMITED
		sl := &busv1.SpendLimited{Reason: ev.Reason, Scope: ev.Message}
		if !ev.Until.IsZero() {
			sl.ResetsAt = timestamppb.New(ev.Until)
		}
		out.Payload = &busv1.Event_SpendLimited{SpendLimited: sl}
	}
	return out
}

// Wakes publishes wakes for the admin API.
type Wakes struct{ Bus *swarmbus.Bus }

// Wake pokes the replica that owns the mysis.
func (w Wakes) Wake(ctx context.Context, mysisID string, r mysis.WakeReason) error {
	return w.Bus.PublishWake(ctx, mysisID, swarmbus.WakeReason(r))
}

// Leases adapts swarmbus leases to lease.Leases.
type Leases struct{ L *swarmbus.Leases }

// Holder implements lease.Leases.
func (l Leases) Holder() string { return l.L.Holder() }

// TTL implements lease.Leases.
func (l Leases) TTL() time.Duration { return l.L.TTL() }

// Acquire implements lease.Leases.
func (l Leases) Acquire(ctx context.Context, id string) (bool, error) { return l.L.Acquire(ctx, id) }

// Renew implements lease.Leases.
func (l Leases) Renew(ctx context.Context, id string) (bool, error) {
	err := l.L.Renew(ctx, id)
	if errors.Is(err, swarmbus.ErrLeaseLost) {
		return true, nil
	}
	return false, err
}

// Valid implements lease.Leases.
func (l Leases) Valid(id string) bool { return l.L.Valid(id) }

// Release implements lease.Leases.
func (l Leases) Release(ctx context.Context, id string) error { return l.L.Release(ctx, id) }

// Heartbeat implements lease.Leases.
func (l Leases) Heartbeat(ctx context.Context) error { return l.L.Heartbeat(ctx) }

// Leave implements lease.Leases.
func (l Leases) Leave(ctx context.Context) error { return l.L.Leave(ctx) }

// Watch implements lease.Leases.
func (l Leases) Watch(ctx context.Context, onLease func(id, owner string), onReplica func(holder string, live bool)) error {
	return l.L.WatchSwarm(ctx,
		func(ev swarmbus.LeaseEvent) { onLease(ev.MysisID, ev.Owner) },
		func(ev swarmbus.ReplicaEvent) { onReplica(ev.Holder, ev.Live) })
}
