// Package natsbus is the bus's adapter to the swarm's NATS subjects: it implements delivery.Notifier over
// libs/swarmbus, turning what delivery did into wake-ups and zoea.bus.v1 events.
package natsbus

import (
	"context"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// Publisher sends wake-ups and events (*swarmbus.Bus satisfies it).
type Publisher interface {
	PublishWake(ctx context.Context, mysisID string, reason swarmbus.WakeReason) error
	PublishWakes(ctx context.Context, mysisIDs []string, reason swarmbus.WakeReason) error
	PublishEvent(ctx context.Context, ev *busv1.Event) error
}

// Notifier announces deliveries on a Publisher.
type Notifier struct {
	Publisher
}

// New wraps p.
func New(p Publisher) *Notifier { return &Notifier{Publisher: p} }

// BroadcastDelivered publishes an EVENT_KIND_BROADCAST event for one target of b.
func (n *Notifier) BroadcastDelivered(ctx context.Context, mysisID string, b swarmbus.Broadcast, excerpt string) error {
	return n.PublishEvent(ctx, &busv1.Event{MysisId: mysisID, Kind: busv1.EventKind_EVENT_KIND_BROADCAST,
		Payload: &busv1.Event_Broadcast{Broadcast: &busv1.BroadcastDelivered{BroadcastId: b.ID, SenderId: b.SenderID, Excerpt: excerpt}}})
}

// DirectStored publishes an EVENT_KIND_MEMORY_APPENDED event for a stored direct message.
func (n *Notifier) DirectStored(ctx context.Context, m message.Stored, excerpt string) error {
	return n.PublishEvent(ctx, &busv1.Event{MysisId: m.MysisID, Kind: busv1.EventKind_EVENT_KIND_MEMORY_APPENDED,
		Payload: &busv1.Event_MemoryAppended{MemoryAppended: &busv1.MemoryAppended{
			MemoryIds: []int64{m.ID}, Seqs: []int64{m.Seq}, Role: memoryv1.Role_ROLE_USER, Excerpt: excerpt,
		}}})
}

// Dropped publishes an EVENT_KIND_ERROR event for a message that can never be delivered (mysisID is empty for a
// broadcast).
func (n *Notifier) Dropped(ctx context.Context, mysisID, reason string) error {
	return n.PublishEvent(ctx, &busv1.Event{MysisId: mysisID, Kind: busv1.EventKind_EVENT_KIND_ERROR,
		Payload: &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: reason}}})
}
