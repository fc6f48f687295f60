// Package delivery puts broadcasts and direct messages into the memory service and then tells the swarm. The order
// is the point: memory first (the truth a runner reconciles from), then wake-ups (hints that make the owning runner
// look now), then events (observations for UIs), and only then is a JetStream message acknowledged. Every step is
// idempotent — RecordBroadcast never writes a second row for a broadcast, a direct message carries the idempotency
// key "direct:<id>", a duplicate wake just makes a runner re-read — so a redelivery after a crash at any point
// converges to exactly one memory row per mysis.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// Memory is what delivery writes to: the memory service, through an adapter (memoryclient). Errors are libs/errs
// errors, so delivery can tell input the memory service refuses from an outage.
type Memory interface {
	// MysisIDs lists every mysis.
	MysisIDs(ctx context.Context) ([]string, error)
	// RecordBroadcast stores b once and delivers it into every mysis's memory but its sender's; written counts the
	// rows this call wrote, already the myses that had it.
	RecordBroadcast(ctx context.Context, b message.Broadcast) (written, already int, err error)
	// AppendDirect appends d to its mysis's memory under d.IdempotencyKey() and returns the row stored for that key.
	AppendDirect(ctx context.Context, d message.Direct) (message.Stored, error)
}

// WakeReason says why a mysis is woken.
type WakeReason string

// Wake reasons of a delivery.
const (
	WakeBroadcast WakeReason = "broadcast" // a broadcast was stored in its memory
	WakeDirect    WakeReason = "direct"    // a direct message was stored in its memory
)

// Notifier sends wake-ups and events (natsbus.Notifier implements it over libs/swarmbus).
type Notifier interface {
	PublishWake(ctx context.Context, mysisID string, reason WakeReason) error
	PublishWakes(ctx context.Context, mysisIDs []string, reason WakeReason) error
	// BroadcastDelivered announces b in mysisID's memory.
	BroadcastDelivered(ctx context.Context, mysisID string, b message.Broadcast, excerpt string) error
	// DirectStored announces a direct message in its mysis's memory.
	DirectStored(ctx context.Context, m message.Stored, excerpt string) error
	// Dropped reports a message that can never be delivered (mysisID is empty for a broadcast).
	Dropped(ctx context.Context, mysisID, reason string) error
}

// Message is one message taken from the durable stream (natsbus converts the stream's deliveries into it): a
// broadcast or a direct message.
type Message struct {
	Broadcast *message.Broadcast
	Direct    *message.Direct
	// Attempt is 1 on first delivery and counts redeliveries.
	Attempt int
	// Stored is when the stream stored the message (zero when unknown).
	Stored time.Time
}

// ErrUndeliverable marks a Handle error that retrying cannot fix: the message is to be dropped, not redelivered.
var ErrUndeliverable = errors.New("undeliverable")

const excerptBytes = 280

// Service delivers messages. It is safe for concurrent use.
type Service struct {
	mem     Memory
	notify  Notifier
	log     *slog.Logger
	latency metric.Float64Histogram
}

// New returns a Service writing to mem and announcing through notify.
func New(mem Memory, notify Notifier, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	h, _ := otel.Meter("github.com/zoeaswarm/zoea/services/bus/internal/delivery").Float64Histogram("zoea.bus.delivery.latency",
		metric.WithUnit("s"), metric.WithDescription("time from a message being stored in JetStream to its delivery into memory"))
	return &Service{mem: mem, notify: notify, log: log.With("component", "delivery"), latency: h}
}

// BroadcastResult says what a broadcast delivery did.
type BroadcastResult struct {
	// Targets is how many myses the broadcast was delivered to (this time or before).
	Targets int
	// Delivered counts rows written by this call, Already the myses that had the broadcast already.
	Delivered, Already int
}

// Broadcast records b in the memory service for every mysis except its sender, wakes them and publishes one
// EVENT_KIND_BROADCAST event per mysis. It is idempotent.
//
// The memory service picks the targets itself, in the statement that writes the rows (every mysis but the
// sender), so the write does not wait for a listing; the list of myses to wake is read alongside. A mysis created
// at that very moment may end up with the row but no wake (or a wake but no row): harmless, because a runner
// reconciles a mysis from memory when it takes its lease, and a new mysis inherits the latest broadcast as its
// mission anyway.
func (s *Service) Broadcast(ctx context.Context, b message.Broadcast) (BroadcastResult, error) {
	type listing struct {
		ids []string
		err error
	}
	listed := make(chan listing, 1)
	go func() {
		ids, err := s.targets(ctx, b.SenderID)
		listed <- listing{ids, err}
	}()
	written, already, err := s.mem.RecordBroadcast(ctx, b)
	l := <-listed
	if err != nil {
		return BroadcastResult{}, fmt.Errorf("record broadcast %s: %w", b.ID, err)
	}
	if l.err != nil {
		// Recorded, but the wakes cannot go out without the list: retry (the record is idempotent).
		return BroadcastResult{}, l.err
	}
	targets := l.ids
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("zoea.broadcast_id", b.ID), attribute.Int("zoea.targets", len(targets)))
	res := BroadcastResult{Targets: len(targets), Delivered: written, Already: already}

	if err := s.notify.PublishWakes(ctx, targets, WakeBroadcast); err != nil {
		return res, fmt.Errorf("wake the targets of broadcast %s: %w", b.ID, err)
	}
	excerpt := message.Excerpt(b.Content, excerptBytes)
	var evErr error
	for _, id := range targets {
		err := s.notify.BroadcastDelivered(ctx, id, b, excerpt)
		if err != nil && evErr == nil {
			evErr = err
		}
	}
	if evErr != nil {
		// Events are observations: a watcher missing one is not worth delivering the broadcast again.
		s.log.WarnContext(ctx, "publishing broadcast events failed", "broadcast_id", b.ID, "err", evErr)
	}
	return res, nil
}

// targets lists every mysis except the sender.
func (s *Service) targets(ctx context.Context, sender string) ([]string, error) {
	all, err := s.mem.MysisIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list myses: %w", err)
	}
	ids := all[:0:0]
	for _, id := range all {
		if id != sender {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ErrNotAnnounced reports a direct message that is stored but whose wake-up could not be sent.
var ErrNotAnnounced = errors.New("stored, but the wake-up could not be sent")

// Direct appends d to its mysis's memory (role user, source direct, idempotency key "direct:<id>"), wakes the mysis
// and publishes an EVENT_KIND_MEMORY_APPENDED event. It returns the stored memory — the first one stored for that
// key when d is a retry. A stored row with an error (ErrNotAnnounced) means stored but not announced.
func (s *Service) Direct(ctx context.Context, d message.Direct) (message.Stored, error) {
	m, err := s.mem.AppendDirect(ctx, d)
	if err != nil {
		return message.Stored{}, fmt.Errorf("append direct message %s: %w", d.ID, err)
	}
	if m.MysisID == "" {
		m.MysisID = d.MysisID
	}
	if err := s.notify.PublishWake(ctx, d.MysisID, WakeDirect); err != nil {
		return m, fmt.Errorf("direct message %s: %w: %w", d.ID, ErrNotAnnounced, err)
	}
	if err := s.notify.DirectStored(ctx, m, message.Excerpt(m.Content, excerptBytes)); err != nil {
		s.log.WarnContext(ctx, "publishing direct message event failed", "mysis_id", d.MysisID, "err", err)
	}
	return m, nil
}

// Handle delivers one message of the durable stream. Input the memory service refuses, direct messages to myses
// that no longer exist, and an id used before for a different message (a broadcast_id or message_id reused with
// other content, errs.ReasonIdempotencyKeyReused: the first message stands) can never succeed: they are reported as
// an EVENT_KIND_ERROR event and returned marked ErrUndeliverable (the consumer terminates them instead of blocking
// the queue). Everything else is retried; a redelivery carries the same content, so it stays a retry.
func (s *Service) Handle(ctx context.Context, d Message) error {
	var err error
	kind, mysisID := "broadcast", ""
	switch {
	case d.Broadcast != nil:
		var res BroadcastResult
		res, err = s.Broadcast(ctx, *d.Broadcast)
		if err == nil {
			s.log.InfoContext(ctx, "broadcast delivered", "broadcast_id", d.Broadcast.ID, "targets", res.Targets,
				"written", res.Delivered, "already", res.Already, "attempt", d.Attempt)
		}
	case d.Direct != nil:
		kind, mysisID = "direct", d.Direct.MysisID
		_, err = s.Direct(ctx, *d.Direct)
	default:
		return fmt.Errorf("%w: empty delivery", ErrUndeliverable)
	}
	if err == nil {
		if !d.Stored.IsZero() {
			s.latency.Record(ctx, time.Since(d.Stored).Seconds(), metric.WithAttributes(attribute.String("kind", kind)))
		}
		return nil
	}
	if errs.Is(err, errs.Invalid) || errs.IsKeyReused(err) || (kind == "direct" && errs.Is(err, errs.NotFound)) {
		_ = s.notify.Dropped(ctx, mysisID, fmt.Sprintf("%s dropped: %v", kind, err))
		return fmt.Errorf("%w: %w", ErrUndeliverable, err)
	}
	return err
}
