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
	"google.golang.org/grpc"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// Memory is the part of the memory service that delivery writes to (memoryv1.MemoryServiceClient satisfies it).
type Memory interface {
	ListMyses(ctx context.Context, in *memoryv1.ListMysesRequest, opts ...grpc.CallOption) (*memoryv1.ListMysesResponse, error)
	RecordBroadcast(ctx context.Context, in *memoryv1.RecordBroadcastRequest, opts ...grpc.CallOption) (*memoryv1.RecordBroadcastResponse, error)
	AppendMemories(ctx context.Context, in *memoryv1.AppendMemoriesRequest, opts ...grpc.CallOption) (*memoryv1.AppendMemoriesResponse, error)
}

// Notifier sends wake-ups and events (*swarmbus.Bus satisfies it).
type Notifier interface {
	PublishWake(ctx context.Context, mysisID string, reason swarmbus.WakeReason) error
	PublishWakes(ctx context.Context, mysisIDs []string, reason swarmbus.WakeReason) error
	PublishEvent(ctx context.Context, ev *busv1.Event) error
}

// Consumer runs the durable delivery consumer (*swarmbus.Bus satisfies it).
type Consumer interface {
	ConsumeMessages(ctx context.Context, opts swarmbus.ConsumerOptions, handler func(context.Context, swarmbus.Delivery) error) error
}

const (
	listPageSize = 1000 // the memory service's largest ListMyses page
	excerptBytes = 280
)

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
func (s *Service) Broadcast(ctx context.Context, b swarmbus.Broadcast) (BroadcastResult, error) {
	type listing struct {
		ids []string
		err error
	}
	listed := make(chan listing, 1)
	go func() {
		ids, err := s.targets(ctx, b.SenderID)
		listed <- listing{ids, err}
	}()
	resp, err := s.mem.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{BroadcastId: b.ID, SenderId: b.SenderID, Content: b.Content})
	l := <-listed
	if err != nil {
		return BroadcastResult{}, fmt.Errorf("record broadcast %s: %w", b.ID, server.FromStatus(err))
	}
	if l.err != nil {
		// Recorded, but the wakes cannot go out without the list: retry (the record is idempotent).
		return BroadcastResult{}, l.err
	}
	targets := l.ids
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("zoea.broadcast_id", b.ID), attribute.Int("zoea.targets", len(targets)))
	res := BroadcastResult{Targets: len(targets), Delivered: int(resp.GetDeliveredCount()), Already: int(resp.GetAlreadyDeliveredCount())}

	if err := s.notify.PublishWakes(ctx, targets, swarmbus.WakeBroadcast); err != nil {
		return res, fmt.Errorf("wake the targets of broadcast %s: %w", b.ID, err)
	}
	excerpt := message.Excerpt(b.Content, excerptBytes)
	var evErr error
	for _, id := range targets {
		err := s.notify.PublishEvent(ctx, &busv1.Event{MysisId: id, Kind: busv1.EventKind_EVENT_KIND_BROADCAST,
			Payload: &busv1.Event_Broadcast{Broadcast: &busv1.BroadcastDelivered{BroadcastId: b.ID, SenderId: b.SenderID, Excerpt: excerpt}}})
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
	var ids []string
	token := ""
	for {
		resp, err := s.mem.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: listPageSize, PageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list myses: %w", server.FromStatus(err))
		}
		for _, m := range resp.GetMyses() {
			if m.GetId() != sender {
				ids = append(ids, m.GetId())
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			return ids, nil
		}
	}
}

// ErrNotAnnounced reports a direct message that is stored but whose wake-up could not be sent.
var ErrNotAnnounced = errors.New("stored, but the wake-up could not be sent")

// Direct appends d to its mysis's memory (role user, source direct, idempotency key "direct:<id>"), wakes the mysis
// and publishes an EVENT_KIND_MEMORY_APPENDED event. It returns the stored memory — the first one stored for that
// key when d is a retry. A non-nil memory with an error (ErrNotAnnounced) means stored but not announced.
func (s *Service) Direct(ctx context.Context, d swarmbus.Direct) (*memoryv1.Memory, error) {
	resp, err := s.mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: d.MysisID, Memories: []*memoryv1.NewMemory{{
		Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, SenderId: d.SenderID,
		Content: d.Content, IdempotencyKey: d.IdempotencyKey(),
	}}})
	if err != nil {
		return nil, fmt.Errorf("append direct message %s: %w", d.ID, server.FromStatus(err))
	}
	if len(resp.GetMemories()) != 1 {
		return nil, fmt.Errorf("append direct message %s: memory service returned %d rows for 1", d.ID, len(resp.GetMemories()))
	}
	m := resp.GetMemories()[0]
	if err := s.notify.PublishWake(ctx, d.MysisID, swarmbus.WakeDirect); err != nil {
		return m, fmt.Errorf("direct message %s: %w: %w", d.ID, ErrNotAnnounced, err)
	}
	err = s.notify.PublishEvent(ctx, &busv1.Event{MysisId: d.MysisID, Kind: busv1.EventKind_EVENT_KIND_MEMORY_APPENDED,
		Payload: &busv1.Event_MemoryAppended{MemoryAppended: &busv1.MemoryAppended{
			MemoryIds: []int64{m.GetId()}, Seqs: []int64{m.GetSeq()}, Role: m.GetRole(), Excerpt: message.Excerpt(m.GetContent(), excerptBytes),
		}}})
	if err != nil {
		s.log.WarnContext(ctx, "publishing direct message event failed", "mysis_id", d.MysisID, "err", err)
	}
	return m, nil
}

// Handle delivers one JetStream message; it is the ConsumeMessages handler. Input the memory service refuses, and
// direct messages to myses that no longer exist, can never succeed: they are terminated (logged, and reported as
// an EVENT_KIND_ERROR event) instead of blocking the queue. Everything else is retried.
func (s *Service) Handle(ctx context.Context, d swarmbus.Delivery) error {
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
		return swarmbus.Permanent(errors.New("empty delivery"))
	}
	if err == nil {
		if !d.Stored.IsZero() {
			s.latency.Record(ctx, time.Since(d.Stored).Seconds(), metric.WithAttributes(attribute.String("kind", kind)))
		}
		return nil
	}
	if errs.Is(err, errs.Invalid) || (kind == "direct" && errs.Is(err, errs.NotFound)) {
		_ = s.notify.PublishEvent(ctx, &busv1.Event{MysisId: mysisID, Kind: busv1.EventKind_EVENT_KIND_ERROR,
			Payload: &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: fmt.Sprintf("%s dropped: %v", kind, err)}}})
		return swarmbus.Permanent(err)
	}
	return err
}

// Run consumes the message stream until ctx is done.
func (s *Service) Run(ctx context.Context, c Consumer, opts swarmbus.ConsumerOptions) error {
	return c.ConsumeMessages(ctx, opts, s.Handle)
}
