// Package natsbus is the bus's adapter to the swarm's NATS subjects over libs/swarmbus: it implements
// delivery.Notifier (wake-ups and zoea.bus.v1 events for what delivery did), send.Publisher (a broadcast into the
// durable stream), the event watch grpcapi streams, and Consume, which feeds the durable stream's messages to
// delivery as delivery.Message values.
package natsbus

import (
	"context"
	"errors"
	"fmt"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// Publisher sends wake-ups and events (*swarmbus.Bus satisfies it).
type Publisher interface {
	PublishWake(ctx context.Context, mysisID string, reason swarmbus.WakeReason) error
	PublishWakes(ctx context.Context, mysisIDs []string, reason swarmbus.WakeReason) error
	PublishEvent(ctx context.Context, ev *busv1.Event) error
}

// Notifier announces deliveries on a Publisher; it implements delivery.Notifier.
type Notifier struct {
	p Publisher
}

var _ delivery.Notifier = (*Notifier)(nil)

// New wraps p.
func New(p Publisher) *Notifier { return &Notifier{p: p} }

// wakeReason is swarmbus's reason for delivery's.
func wakeReason(r delivery.WakeReason) (swarmbus.WakeReason, error) {
	switch r {
	case delivery.WakeBroadcast:
		return swarmbus.WakeBroadcast, nil
	case delivery.WakeDirect:
		return swarmbus.WakeDirect, nil
	}
	return "", fmt.Errorf("natsbus: unknown wake reason %q", r)
}

// PublishWake wakes one mysis.
func (n *Notifier) PublishWake(ctx context.Context, mysisID string, reason delivery.WakeReason) error {
	r, err := wakeReason(reason)
	if err != nil {
		return err
	}
	return n.p.PublishWake(ctx, mysisID, r)
}

// PublishWakes wakes several myses.
func (n *Notifier) PublishWakes(ctx context.Context, mysisIDs []string, reason delivery.WakeReason) error {
	r, err := wakeReason(reason)
	if err != nil {
		return err
	}
	return n.p.PublishWakes(ctx, mysisIDs, r)
}

// BroadcastDelivered publishes an EVENT_KIND_BROADCAST event for one target of b.
func (n *Notifier) BroadcastDelivered(ctx context.Context, mysisID string, b message.Broadcast, excerpt string) error {
	return n.p.PublishEvent(ctx, &busv1.Event{MysisId: mysisID, Kind: busv1.EventKind_EVENT_KIND_BROADCAST,
		Payload: &busv1.Event_Broadcast{Broadcast: &busv1.BroadcastDelivered{BroadcastId: b.ID, SenderId: b.SenderID, Excerpt: excerpt}}})
}

// DirectStored publishes an EVENT_KIND_MEMORY_APPENDED event for a stored direct message.
func (n *Notifier) DirectStored(ctx context.Context, m message.Stored, excerpt string) error {
	return n.p.PublishEvent(ctx, &busv1.Event{MysisId: m.MysisID, Kind: busv1.EventKind_EVENT_KIND_MEMORY_APPENDED,
		Payload: &busv1.Event_MemoryAppended{MemoryAppended: &busv1.MemoryAppended{
			MemoryIds: []int64{m.ID}, Seqs: []int64{m.Seq}, Role: memoryv1.Role_ROLE_USER, Excerpt: excerpt,
		}}})
}

// Dropped publishes an EVENT_KIND_ERROR event for a message that can never be delivered (mysisID is empty for a
// broadcast).
func (n *Notifier) Dropped(ctx context.Context, mysisID, reason string) error {
	return n.p.PublishEvent(ctx, &busv1.Event{MysisId: mysisID, Kind: busv1.EventKind_EVENT_KIND_ERROR,
		Payload: &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: reason}}})
}

// Stream is the durable message stream and the event subjects (*swarmbus.Bus satisfies it).
type Stream interface {
	PublishBroadcast(ctx context.Context, b swarmbus.Broadcast) (swarmbus.PubAck, error)
	ConsumeMessages(ctx context.Context, opts swarmbus.ConsumerOptions, handler func(context.Context, swarmbus.Delivery) error) error
	SubscribeEvents(ctx context.Context, f swarmbus.EventFilter, handler func(context.Context, *busv1.Event)) (*swarmbus.Subscription, error)
}

// Broadcasts publishes into and consumes the durable stream, and watches events, over a Stream.
type Broadcasts struct {
	s Stream
}

// NewBroadcasts wraps s.
func NewBroadcasts(s Stream) *Broadcasts { return &Broadcasts{s: s} }

// PublishBroadcast puts b into the durable stream; it returns once JetStream acknowledged it (a retry with the same
// id is deduplicated there).
func (b *Broadcasts) PublishBroadcast(ctx context.Context, bc message.Broadcast) error {
	_, err := b.s.PublishBroadcast(ctx, swarmbus.Broadcast{ID: bc.ID, SenderID: bc.SenderID, Content: bc.Content, At: bc.At})
	return err
}

// Consume runs handle for every message of the durable stream until ctx ends. An error marked
// delivery.ErrUndeliverable terminates its message (swarmbus.Permanent) instead of having it redelivered.
func (b *Broadcasts) Consume(ctx context.Context, opts swarmbus.ConsumerOptions, handle func(context.Context, delivery.Message) error) error {
	return b.s.ConsumeMessages(ctx, opts, func(ctx context.Context, d swarmbus.Delivery) error {
		err := handle(ctx, FromDelivery(d))
		if errors.Is(err, delivery.ErrUndeliverable) {
			return swarmbus.Permanent(err)
		}
		return err
	})
}

// FromDelivery is delivery's message of a stream delivery.
func FromDelivery(d swarmbus.Delivery) delivery.Message {
	m := delivery.Message{Attempt: d.Attempt, Stored: d.Stored}
	if b := d.Broadcast; b != nil {
		m.Broadcast = &message.Broadcast{ID: b.ID, SenderID: b.SenderID, Content: b.Content, At: b.At}
	}
	if x := d.Direct; x != nil {
		m.Direct = &message.Direct{ID: x.ID, MysisID: x.MysisID, SenderID: x.SenderID, Content: x.Content, At: x.At}
	}
	return m
}

// Watch subscribes handler to the events of the given myses (none: all) and kinds (none: all) until stop is called
// or ctx ends.
func (b *Broadcasts) Watch(ctx context.Context, mysisIDs []string, kinds []busv1.EventKind, handler func(*busv1.Event)) (stop func(), err error) {
	sub, err := b.s.SubscribeEvents(ctx, swarmbus.EventFilter{MysisIDs: mysisIDs, Kinds: kinds}, func(_ context.Context, ev *busv1.Event) { handler(ev) })
	if err != nil {
		return nil, err
	}
	return sub.Stop, nil
}
