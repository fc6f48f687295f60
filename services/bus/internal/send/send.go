// Package send is what the bus's API does: it accepts a broadcast into the durable stream (after checking who may
// send it, and counting its audience alongside), writes a direct message to its mysis's memory through delivery,
// and resolves the myses a watcher names. It declares its ports — Publisher (natsbus), Directory (memoryclient),
// Directs (delivery.Service) — and imports no gRPC, protobuf or NATS: grpcapi converts the wire messages and
// delegates here, and every error is a libs/errs error that libs/server maps to a status in one place.
package send

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/names"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// Mysis is what the bus needs of a mysis: its id and name.
type Mysis struct {
	ID, Name string
}

// Directory reads myses from the memory service (memoryclient implements it). Errors are libs/errs errors:
// errs.NotFound for a mysis that does not exist.
type Directory interface {
	Mysis(ctx context.Context, id string) (Mysis, error)
	MysisByName(ctx context.Context, name string) (Mysis, error)
	// MysisIDs lists every mysis.
	MysisIDs(ctx context.Context) ([]string, error)
}

// Publisher puts a broadcast into the durable stream and returns once the stream acknowledged it (natsbus).
type Publisher interface {
	PublishBroadcast(ctx context.Context, b message.Broadcast) error
}

// Directs writes a direct message to memory and announces it (delivery.Service implements it). A stored row with an
// error means stored but not announced.
type Directs interface {
	Direct(ctx context.Context, d message.Direct) (message.Stored, error)
}

// Options configure the Service.
type Options struct {
	// AllowMysisBroadcast lets a mysis (a sender id) broadcast to the swarm; otherwise only the commander may.
	AllowMysisBroadcast bool
	// PublishBudget bounds how long Broadcast waits for the stream's acknowledgement before answering Unavailable
	// (default 10s).
	PublishBudget time.Duration
	// Logger receives warnings; slog.Default() when nil.
	Logger *slog.Logger
}

// Service runs the API's operations.
type Service struct {
	pub     Publisher
	dir     Directory
	directs Directs
	opts    Options
	log     *slog.Logger
}

// New returns a Service.
func New(pub Publisher, dir Directory, directs Directs, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PublishBudget <= 0 {
		opts.PublishBudget = 10 * time.Second
	}
	return &Service{pub: pub, dir: dir, directs: directs, opts: opts, log: opts.Logger.With("component", "send")}
}

// Broadcast accepts b (b.ID empty: a fresh id) into the durable stream: once it returns without error the broadcast
// will reach the memory of every mysis but its sender exactly once, whatever restarts follow. It returns the id
// and the number of myses it reaches.
func (s *Service) Broadcast(ctx context.Context, b message.Broadcast) (string, int32, error) {
	if err := message.ValidateContent("content", b.Content); err != nil {
		return "", 0, err
	}
	if b.ID == "" {
		b.ID = uuid.NewString()
	} else {
		var err error
		if b.ID, err = message.ParseUUID("broadcast_id", b.ID); err != nil {
			return "", 0, err
		}
	}
	if b.SenderID != "" {
		if !s.opts.AllowMysisBroadcast {
			return "", 0, errs.Deniedf("sender_id", "myses may not broadcast (only the commander may, with sender_id empty); set ZOEA_ALLOW_MYSIS_BROADCAST=true to allow it")
		}
		var err error
		if b.SenderID, err = s.knownSender(ctx, b.SenderID); err != nil {
			return "", 0, err
		}
	}
	if b.At.IsZero() {
		b.At = time.Now().UTC()
	}

	// Counting the audience is informational and must not delay or block the broadcast: it runs alongside the
	// publish, and a memory service that is down makes the count 0, not the broadcast fail.
	count := make(chan int32, 1)
	countCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	go func() { count <- s.countTargets(countCtx, b.SenderID) }()

	// Publishing retries until the stream acknowledges; bound that so a caller without a deadline hears back.
	pctx, pcancel := context.WithTimeout(ctx, s.opts.PublishBudget)
	defer pcancel()
	if err := s.pub.PublishBroadcast(pctx, b); err != nil {
		if ctx.Err() != nil {
			return "", 0, ctx.Err() // the caller gave up first
		}
		// Our own budget ran out: that is JetStream being unavailable, not the caller's deadline. The cause is kept
		// as text so it is logged without turning the status into DeadlineExceeded.
		return "", 0, errs.Unavailablef(errors.New(err.Error()), "the broadcast was not accepted (NATS JetStream unavailable); retry with broadcast_id %s", b.ID)
	}
	return b.ID, <-count, nil
}

// countTargets returns the number of myses a broadcast from sender reaches: every mysis except the sender, the
// same set the memory service writes the rows for. It lists the swarm afresh for every broadcast: a cached size
// lagged behind (a broadcast right after creating a mysis reported the previous count), and the listing runs
// alongside the publish, so it adds no latency unless the memory service is slower than the publish.
func (s *Service) countTargets(ctx context.Context, sender string) int32 {
	ids, err := s.dir.MysisIDs(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "cannot count broadcast targets", "err", err)
		return 0
	}
	var n int32
	for _, id := range ids {
		if sender == "" || id != sender {
			n++
		}
	}
	return n
}

// knownSender checks that sender names an existing mysis and returns its canonical id.
func (s *Service) knownSender(ctx context.Context, sender string) (string, error) {
	id, err := message.ParseUUID("sender_id", sender)
	if err != nil {
		return "", err
	}
	if _, err := s.dir.Mysis(ctx, id); err != nil {
		if errs.Is(err, errs.NotFound) {
			return "", errs.InvalidField("sender_id", "unknown mysis %s", id)
		}
		return "", memoryErr(err)
	}
	return id, nil
}

// SendDirect writes d to the memory of the mysis named by mysis (an id or a name) before it returns, and returns
// the stored row; d.ID empty gets a fresh id, and a retry with the same id returns the row stored first. The same
// id with another content or sender is refused (AlreadyExists naming message_id) and stores nothing.
func (s *Service) SendDirect(ctx context.Context, mysis string, d message.Direct) (message.Stored, error) {
	if mysis == "" {
		return message.Stored{}, errs.InvalidField("mysis", "required: a mysis id or name")
	}
	if err := message.ValidateContent("content", d.Content); err != nil {
		return message.Stored{}, err
	}
	if d.ID == "" {
		d.ID = uuid.NewString()
	} else if err := message.ValidateMessageID("message_id", d.ID); err != nil {
		return message.Stored{}, err
	}
	if d.SenderID != "" {
		var err error
		if d.SenderID, err = s.knownSender(ctx, d.SenderID); err != nil {
			return message.Stored{}, err
		}
	}
	target, err := s.resolve(ctx, "mysis", mysis)
	if err != nil {
		return message.Stored{}, err
	}
	d.MysisID = target.ID
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	m, err := s.directs.Direct(ctx, d)
	if m.ID == 0 && errs.IsKeyReused(err) {
		// The memory service names its own field (memories[0].idempotency_key); the caller chose message_id.
		return message.Stored{}, errs.KeyReusedf("message_id", "%q was already used for a different message to this mysis; nothing was stored (use a new message_id)", d.ID)
	}
	if m.ID == 0 {
		return message.Stored{}, memoryErr(err)
	}
	if err != nil {
		// Stored: the mysis sees it at its next turn or reconciliation even without the wake. Failing the call would
		// invite a retry that, without a message_id, would store the message twice.
		s.log.WarnContext(ctx, "direct message stored but not announced", "mysis_id", target.ID, "err", err)
	}
	return m, nil
}

// Resolve returns the id of the mysis ref names (an id, or a name), for a request field (a watcher's filter):
// a malformed name is InvalidArgument and an unknown mysis NotFound, both naming field.
func (s *Service) Resolve(ctx context.Context, field, ref string) (string, error) {
	if !message.IsUUID(ref) {
		if err := names.Check(field, ref); err != nil {
			return "", err
		}
	}
	m, err := s.resolve(ctx, field, ref)
	if errs.Is(err, errs.NotFound) {
		return "", &errs.Error{Kind: errs.NotFound, Field: field, Msg: fmt.Sprintf("no mysis has the id or name %q", ref)}
	}
	return m.ID, err
}

// resolve finds a mysis by id, or by name when the argument is not an id.
func (s *Service) resolve(ctx context.Context, field, idOrName string) (Mysis, error) {
	if message.IsUUID(idOrName) {
		m, err := s.dir.Mysis(ctx, idOrName)
		if err == nil {
			return m, nil
		}
		if !errs.Is(err, errs.NotFound) {
			return Mysis{}, memoryErr(err)
		}
		// No name is a UUID (libs/names), so there is no name to fall back to.
		return Mysis{}, errs.NotFoundf("mysis %q not found", idOrName)
	}
	// Checked here, so a bad name is reported on the request's field ("mysis"), not the memory service's ("name").
	if err := names.Check(field, idOrName); err != nil {
		return Mysis{}, err
	}
	m, err := s.dir.MysisByName(ctx, idOrName)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return Mysis{}, errs.NotFoundf("mysis %q not found (by id or name)", idOrName)
		}
		return Mysis{}, memoryErr(err)
	}
	return m, nil
}

// memoryErr keeps the caller-relevant kinds of a memory service failure and hides the rest.
func memoryErr(err error) error {
	switch errs.KindOf(err) {
	case errs.Invalid, errs.NotFound, errs.Conflict, errs.Timeout:
		return err
	case errs.Unavailable:
		return errs.Unavailablef(err, "memory service unavailable")
	}
	return fmt.Errorf("memory service: %w", err)
}
