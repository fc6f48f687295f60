// Package grpcapi implements zoea.bus.v1.BusService: it validates requests, turns them into swarmbus messages and
// delivery calls, and streams events. Domain errors (libs/errs) become gRPC codes in libs/server, in one place.
package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/names"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// Bus is the NATS side the API needs (*swarmbus.Bus satisfies it).
type Bus interface {
	PublishBroadcast(ctx context.Context, b swarmbus.Broadcast) (swarmbus.PubAck, error)
	SubscribeEvents(ctx context.Context, f swarmbus.EventFilter, handler func(context.Context, *busv1.Event)) (*swarmbus.Subscription, error)
}

// Memory is the part of the memory service the API reads (memoryv1.MemoryServiceClient satisfies it).
type Memory interface {
	GetMysis(ctx context.Context, in *memoryv1.GetMysisRequest, opts ...grpc.CallOption) (*memoryv1.GetMysisResponse, error)
	GetMysisByName(ctx context.Context, in *memoryv1.GetMysisByNameRequest, opts ...grpc.CallOption) (*memoryv1.GetMysisByNameResponse, error)
	ListMyses(ctx context.Context, in *memoryv1.ListMysesRequest, opts ...grpc.CallOption) (*memoryv1.ListMysesResponse, error)
}

// Directs writes direct messages synchronously (*delivery.Service satisfies it).
type Directs interface {
	Direct(ctx context.Context, d swarmbus.Direct) (message.Stored, error)
}

// Options configure the API.
type Options struct {
	// AllowMysisBroadcast lets a mysis (sender_id set) broadcast to the swarm; otherwise only the commander may.
	AllowMysisBroadcast bool
	// WatchBuffer is how many events a slow watcher may fall behind before events are dropped (default 1024).
	WatchBuffer int
	// PublishBudget bounds how long Broadcast waits for JetStream's acknowledgement before answering Unavailable
	// (default 10s).
	PublishBudget time.Duration
	// Logger receives warnings; slog.Default() when nil.
	Logger *slog.Logger
}

// Server implements busv1.BusServiceServer.
type Server struct {
	busv1.UnimplementedBusServiceServer
	bus     Bus
	mem     Memory
	directs Directs
	opts    Options
	log     *slog.Logger
}

var _ busv1.BusServiceServer = (*Server)(nil)

// New returns the API.
func New(bus Bus, mem Memory, directs Directs, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = 1024
	}
	if opts.PublishBudget <= 0 {
		opts.PublishBudget = 10 * time.Second
	}
	return &Server{bus: bus, mem: mem, directs: directs, opts: opts, log: opts.Logger.With("component", "grpcapi")}
}

// Broadcast implements BusService.Broadcast: once it returns OK the broadcast is in JetStream and will reach the
// memory of every mysis exactly once, whatever restarts follow.
func (s *Server) Broadcast(ctx context.Context, req *busv1.BroadcastRequest) (*busv1.BroadcastResponse, error) {
	if err := message.ValidateContent("content", req.GetContent()); err != nil {
		return nil, err
	}
	id := uuid.NewString()
	if req.GetBroadcastId() != "" {
		var err error
		if id, err = message.ParseUUID("broadcast_id", req.GetBroadcastId()); err != nil {
			return nil, err
		}
	}
	sender := req.GetSenderId()
	if sender != "" {
		if !s.opts.AllowMysisBroadcast {
			return nil, errs.Deniedf("sender_id", "myses may not broadcast (only the commander may, with sender_id empty); set ZOEA_ALLOW_MYSIS_BROADCAST=true to allow it")
		}
		var err error
		if sender, err = s.knownSender(ctx, sender); err != nil {
			return nil, err
		}
	}

	// Counting the audience is informational and must not delay or block the broadcast: it runs alongside the
	// publish, and a memory service that is down makes the count 0, not the broadcast fail.
	count := make(chan int32, 1)
	countCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	go func() { count <- s.countTargets(countCtx, sender) }()

	// PublishBroadcast retries until JetStream acknowledges; bound that so a caller without a deadline hears back.
	pctx, pcancel := context.WithTimeout(ctx, s.opts.PublishBudget)
	defer pcancel()
	if _, err := s.bus.PublishBroadcast(pctx, swarmbus.Broadcast{ID: id, SenderID: sender, Content: req.GetContent(), At: time.Now().UTC()}); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the caller gave up first
		}
		// Our own budget ran out: that is JetStream being unavailable, not the caller's deadline. The cause is kept
		// as text so it is logged without turning the status into DeadlineExceeded.
		return nil, errs.Unavailablef(errors.New(err.Error()), "the broadcast was not accepted (NATS JetStream unavailable); retry with broadcast_id %s", id)
	}
	return &busv1.BroadcastResponse{BroadcastId: id, TargetCount: <-count}, nil
}

// countTargets returns the number of myses a broadcast from sender reaches: every mysis except the sender, the
// same set the memory service writes the rows for. It lists the swarm afresh for every broadcast: a cached size
// lagged behind (a broadcast right after creating a mysis reported the previous count), and the listing runs
// alongside the JetStream publish, so it adds no latency unless the memory service is slower than the publish.
func (s *Server) countTargets(ctx context.Context, sender string) int32 {
	var n int32
	token := ""
	for {
		resp, err := s.mem.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			s.log.WarnContext(ctx, "cannot count broadcast targets", "err", err)
			return 0
		}
		for _, m := range resp.GetMyses() {
			if sender == "" || m.GetId() != sender {
				n++
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			return n
		}
	}
}

// knownSender checks that sender_id names an existing mysis and returns its canonical id.
func (s *Server) knownSender(ctx context.Context, sender string) (string, error) {
	id, err := message.ParseUUID("sender_id", sender)
	if err != nil {
		return "", err
	}
	if _, err := s.mem.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: id}); err != nil {
		if err = server.FromStatus(err); errs.Is(err, errs.NotFound) {
			return "", errs.InvalidField("sender_id", "unknown mysis %s", id)
		}
		return "", memoryErr(err)
	}
	return id, nil
}

// SendDirect implements BusService.SendDirect. The message is written to memory before the call returns, so the
// response carries the stored row; a retry with the same message_id returns that row again.
func (s *Server) SendDirect(ctx context.Context, req *busv1.SendDirectRequest) (*busv1.SendDirectResponse, error) {
	if req.GetMysis() == "" {
		return nil, errs.InvalidField("mysis", "required: a mysis id or name")
	}
	if err := message.ValidateContent("content", req.GetContent()); err != nil {
		return nil, err
	}
	id := req.GetMessageId()
	if id == "" {
		id = uuid.NewString()
	} else if err := message.ValidateMessageID("message_id", id); err != nil {
		return nil, err
	}
	sender := req.GetSenderId()
	if sender != "" {
		var err error
		if sender, err = s.knownSender(ctx, sender); err != nil {
			return nil, err
		}
	}
	target, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	m, err := s.directs.Direct(ctx, swarmbus.Direct{ID: id, MysisID: target.GetId(), SenderID: sender, Content: req.GetContent(), At: time.Now().UTC()})
	if m.ID == 0 {
		return nil, memoryErr(err)
	}
	if err != nil {
		// Stored: the mysis sees it at its next turn or reconciliation even without the wake. Failing the call would
		// invite a retry that, without a message_id, would store the message twice.
		s.log.WarnContext(ctx, "direct message stored but not announced", "mysis_id", target.GetId(), "err", err)
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

// resolve finds a mysis by id, or by name when the argument is not an id of an existing mysis.
func (s *Server) resolve(ctx context.Context, idOrName string) (*memoryv1.Mysis, error) {
	if message.IsUUID(idOrName) {
		resp, err := s.mem.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: idOrName})
		if err == nil {
			return resp.GetMysis(), nil
		}
		if err = server.FromStatus(err); !errs.Is(err, errs.NotFound) {
			return nil, memoryErr(err)
		}
		// No name is a UUID (libs/names), so there is no name to fall back to.
		return nil, errs.NotFoundf("mysis %q not found", idOrName)
	}
	// Checked here, so a bad name is reported on this request's field ("mysis"), not the memory service's ("name").
	if err := names.Check("mysis", idOrName); err != nil {
		return nil, err
	}
	resp, err := s.mem.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: idOrName})
	if err != nil {
		if err = server.FromStatus(err); errs.Is(err, errs.NotFound) {
			return nil, errs.NotFoundf("mysis %q not found (by id or name)", idOrName)
		}
		return nil, memoryErr(err)
	}
	return resp.GetMysis(), nil
}

// memoryErr keeps the caller-relevant kinds of a memory service failure and hides the rest.
func memoryErr(err error) error {
	err = server.FromStatus(err)
	switch errs.KindOf(err) {
	case errs.Invalid, errs.NotFound, errs.Conflict, errs.Timeout:
		return err
	case errs.Unavailable:
		return errs.Unavailablef(err, "memory service unavailable")
	}
	return fmt.Errorf("memory service: %w", err)
}

// WatchEvents implements BusService.WatchEvents. Response headers are sent once the subscription is live, so a
// client that waits for them misses no later event. A watcher that falls more than WatchBuffer events behind loses
// the excess and is told so by an EVENT_KIND_ERROR event.
func (s *Server) WatchEvents(req *busv1.WatchEventsRequest, stream grpc.ServerStreamingServer[busv1.WatchEventsResponse]) error {
	filter := swarmbus.EventFilter{}
	for i, ref := range req.GetMysisIds() {
		// Each entry is resolved (an id or a name) before the stream starts: a filter on a mysis that does not
		// exist would stream nothing, silently, forever.
		field := "mysis_ids[" + strconv.Itoa(i) + "]"
		if !message.IsUUID(ref) {
			if err := names.Check(field, ref); err != nil {
				return err
			}
		}
		m, err := s.resolve(stream.Context(), ref)
		if errs.Is(err, errs.NotFound) {
			return &errs.Error{Kind: errs.NotFound, Field: field, Msg: fmt.Sprintf("no mysis has the id or name %q", ref)}
		}
		if err != nil {
			return err
		}
		id := m.GetId()
		if err := swarmbus.ValidateID(id); err != nil {
			return errs.InvalidField(field, "not a mysis id: %q", id)
		}
		filter.MysisIDs = append(filter.MysisIDs, id)
	}
	for i, k := range req.GetKinds() {
		if _, ok := busv1.EventKind_name[int32(k)]; !ok {
			return errs.InvalidField("kinds["+strconv.Itoa(i)+"]", "unknown event kind %d", int32(k))
		}
		filter.Kinds = append(filter.Kinds, k)
	}
	ctx := stream.Context()
	events := make(chan *busv1.Event, s.opts.WatchBuffer)
	var dropped atomic.Int64
	sub, err := s.bus.SubscribeEvents(ctx, filter, func(_ context.Context, ev *busv1.Event) {
		select {
		case events <- ev:
		default:
			dropped.Add(1)
		}
	})
	if err != nil {
		return errs.Unavailablef(err, "cannot watch events (NATS unavailable)")
	}
	defer sub.Stop()
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
