// Package grpcapi implements zoea.bus.v1.BusService as a thin transport: it converts requests into the values of
// the send package, delegates to send.Service, converts the results back, and streams the events of its Events
// port. It holds no rules and calls neither NATS nor the memory service itself; errors are libs/errs errors, which
// libs/server turns into gRPC codes in one place.
package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
	"github.com/zoeaswarm/zoea/services/bus/internal/send"
)

// Events is the event subjects a watcher is streamed from (natsbus.Broadcasts implements it). The events are
// zoea.bus.v1 messages on the wire and here alike: they pass through unread.
type Events interface {
	// Watch calls handler with every event of the given myses (none: every event) and kinds (none: every kind)
	// until stop is called or ctx ends.
	Watch(ctx context.Context, mysisIDs []string, kinds []busv1.EventKind, handler func(*busv1.Event)) (stop func(), err error)
}

// Options configure the API.
type Options struct {
	// WatchBuffer is how many events a slow watcher may fall behind before events are dropped (default 1024).
	WatchBuffer int
	// Logger receives warnings; slog.Default() when nil.
	Logger *slog.Logger
}

// Server implements busv1.BusServiceServer.
type Server struct {
	busv1.UnimplementedBusServiceServer
	send   *send.Service
	events Events
	opts   Options
}

var _ busv1.BusServiceServer = (*Server)(nil)

// New returns the API over svc and events.
func New(svc *send.Service, events Events, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = 1024
	}
	return &Server{send: svc, events: events, opts: opts}
}

// Broadcast implements BusService.Broadcast: once it returns OK the broadcast is in JetStream and will reach the
// memory of every mysis exactly once, whatever restarts follow.
func (s *Server) Broadcast(ctx context.Context, req *busv1.BroadcastRequest) (*busv1.BroadcastResponse, error) {
	id, n, err := s.send.Broadcast(ctx, message.Broadcast{ID: req.GetBroadcastId(), SenderID: req.GetSenderId(), Content: req.GetContent()})
	if err != nil {
		return nil, err
	}
	return &busv1.BroadcastResponse{BroadcastId: id, TargetCount: n}, nil
}

// SendDirect implements BusService.SendDirect. The message is written to memory before the call returns, so the
// response carries the stored row; a retry with the same message_id returns that row again.
func (s *Server) SendDirect(ctx context.Context, req *busv1.SendDirectRequest) (*busv1.SendDirectResponse, error) {
	m, err := s.send.SendDirect(ctx, req.GetMysis(), message.Direct{ID: req.GetMessageId(), SenderID: req.GetSenderId(), Content: req.GetContent()})
	if err != nil {
		return nil, err
	}
	return &busv1.SendDirectResponse{Memory: toProtoDirect(m)}, nil
}

// toProtoDirect is a stored direct message as the memory service's row: role user, source direct.
func toProtoDirect(m message.Stored) *memoryv1.Memory {
	return &memoryv1.Memory{
		Id: m.ID, MysisId: m.MysisID, Seq: m.Seq, Turn: m.Turn, Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT,
		SenderId: m.SenderID, Content: m.Content, IdempotencyKey: m.IdempotencyKey, CreatedAt: timestamppb.New(m.CreatedAt),
	}
}

// WatchEvents implements BusService.WatchEvents. Response headers are sent once the subscription is live, so a
// client that waits for them misses no later event. A watcher that falls more than WatchBuffer events behind loses
// the excess and is told so by an EVENT_KIND_ERROR event.
func (s *Server) WatchEvents(req *busv1.WatchEventsRequest, stream grpc.ServerStreamingServer[busv1.WatchEventsResponse]) error {
	ctx := stream.Context()
	var ids []string
	for i, ref := range req.GetMysisIds() {
		// Each entry is resolved (an id or a name) before the stream starts: a filter on a mysis that does not
		// exist would stream nothing, silently, forever.
		id, err := s.send.Resolve(ctx, "mysis_ids["+strconv.Itoa(i)+"]", ref)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	var kinds []busv1.EventKind
	for i, k := range req.GetKinds() {
		if _, ok := busv1.EventKind_name[int32(k)]; !ok {
			return errs.InvalidField("kinds["+strconv.Itoa(i)+"]", "unknown event kind %d", int32(k))
		}
		kinds = append(kinds, k)
	}
	events := make(chan *busv1.Event, s.opts.WatchBuffer)
	var dropped atomic.Int64
	stop, err := s.events.Watch(ctx, ids, kinds, func(ev *busv1.Event) {
		select {
		case events <- ev:
		default:
			dropped.Add(1)
		}
	})
	if err != nil {
		return errs.Unavailablef(err, "cannot watch events (NATS unavailable)")
	}
	defer stop()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			if n := dropped.Swap(0); n > 0 {
				warn := &busv1.Event{Id: uuid.NewString(), Kind: busv1.EventKind_EVENT_KIND_ERROR, At: timestamppb.Now(),
					Payload: &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: fmt.Sprintf("watcher too slow: %d events dropped", n)}}}
				if err := stream.Send(&busv1.WatchEventsResponse{Event: warn}); err != nil {
					return err
				}
			}
			if err := stream.Send(&busv1.WatchEventsResponse{Event: ev}); err != nil {
				return err
			}
		}
	}
}
