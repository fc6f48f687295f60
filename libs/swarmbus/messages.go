package swarmbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/zoeaswarm/zoea/libs/text"
)

const tracerName = "github.com/zoeaswarm/zoea/libs/swarmbus"

// Broadcast is a message to the whole swarm, as carried on zoea.bcast (JSON).
type Broadcast struct {
	// ID is the broadcast id (a UUID) and the JetStream message id; the caller chooses it so retries dedupe.
	ID string `json:"id"`
	// SenderID is the sending mysis; empty for the commander.
	SenderID string `json:"sender_id,omitempty"`
	// Content is the text.
	Content string `json:"content"`
	// At is when the broadcast was accepted.
	At time.Time `json:"at"`
}

// Direct is a message to one mysis, as carried on zoea.direct.<mysis> (JSON).
type Direct struct {
	// ID is the message id; the memory idempotency key is "direct:" + ID.
	ID string `json:"id"`
	// MysisID is the target mysis id (not a name: resolve names before publishing).
	MysisID string `json:"mysis_id"`
	// SenderID is the sending mysis; empty for the commander.
	SenderID string `json:"sender_id,omitempty"`
	// Content is the text.
	Content string `json:"content"`
	// At is when the message was accepted.
	At time.Time `json:"at"`
}

// IdempotencyKey is the memory idempotency key of a direct message: the same id is never stored twice.
func (d Direct) IdempotencyKey() string { return "direct:" + d.ID }

// PubAck says where JetStream stored a message.
type PubAck struct {
	// Seq is the stream sequence.
	Seq uint64
	// Duplicate is true when a message with the same id was already stored (a retried publish).
	Duplicate bool
}

// PublishBroadcast stores b durably and returns after JetStream's acknowledgement. b.ID is the deduplication id:
// publishing the same id again within the duplicate window stores nothing new and reports Duplicate. Transient
// failures (no PubAck in time, NATS reconnecting) are retried with the same id until ctx is done.
func (b *Bus) PublishBroadcast(ctx context.Context, bc Broadcast) (PubAck, error) {
	if err := ValidateID(bc.ID); err != nil {
		return PubAck{}, fmt.Errorf("broadcast id: %w", err)
	}
	if bc.At.IsZero() {
		bc.At = time.Now().UTC()
	}
	data, err := json.Marshal(bc)
	if err != nil {
		return PubAck{}, err
	}
	return b.publishDurable(ctx, b.names.Broadcast, bc.ID, data)
}

// PublishDirect stores d durably on zoea.direct.<mysis> with message id "direct:" + d.ID, like PublishBroadcast.
// The bus's delivery consumer appends it to the mysis's memory. (The bus's own SendDirect RPC writes to memory
// synchronously instead; this is for producers that must not wait for the memory service.)
func (b *Bus) PublishDirect(ctx context.Context, d Direct) (PubAck, error) {
	if err := ValidateID(d.ID); err != nil {
		return PubAck{}, fmt.Errorf("direct message id: %w", err)
	}
	if err := ValidateID(d.MysisID); err != nil {
		return PubAck{}, fmt.Errorf("direct message mysis id: %w", err)
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	data, err := json.Marshal(d)
	if err != nil {
		return PubAck{}, err
	}
	return b.publishDurable(ctx, b.names.direct(d.MysisID), d.IdempotencyKey(), data)
}

func (b *Bus) publishDurable(ctx context.Context, subject, msgID string, data []byte) (PubAck, error) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, "publish "+subject, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", msgID)))
	defer span.End()
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	b.opts.Propagator.Inject(ctx, headerCarrier(msg.Header))
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.opts.PublishTimeout)
		pa, err := b.js.PublishMsg(actx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(b.names.Stream))
		cancel()
		if err == nil {
			span.SetAttributes(attribute.Int64("messaging.nats.stream_seq", int64(pa.Sequence)), attribute.Bool("duplicate", pa.Duplicate))
			return PubAck{Seq: pa.Sequence, Duplicate: pa.Duplicate}, nil
		}
		if ctx.Err() != nil || !retryablePublish(err) {
			span.RecordError(err)
			span.SetStatus(codes.Error, "publish failed")
			if ctx.Err() != nil {
				return PubAck{}, fmt.Errorf("swarmbus: publish %s: %w (last error: %w)", subject, ctx.Err(), err)
			}
			return PubAck{}, fmt.Errorf("swarmbus: publish %s: %w", subject, err)
		}
		b.log.WarnContext(ctx, "publish not acknowledged; retrying with the same message id", "subject", subject, "msg_id", msgID, "attempt", attempt, "err", err)
		if !sleep(ctx, backoff(attempt, 50*time.Millisecond, time.Second)) {
			return PubAck{}, fmt.Errorf("swarmbus: publish %s: %w (last error: %w)", subject, ctx.Err(), err)
		}
	}
}

// retryablePublish reports whether a failed publish may succeed if sent again with the same message id.
func retryablePublish(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503: JetStream temporarily unavailable (e.g. a cluster electing a leader). Anything else is a real refusal
		// (stream full, wrong stream) that repeating will not fix.
		return apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// Delivery is one broadcast or direct message handed to a ConsumeMessages handler. Exactly one of Broadcast and
// Direct is set.
type Delivery struct {
	Broadcast *Broadcast
	Direct    *Direct
	// Attempt is 1 on first delivery and counts redeliveries.
	Attempt int
	// Seq is the stream sequence.
	Seq uint64
	// Stored is when JetStream stored the message.
	Stored time.Time
}

// permanentError marks a handler failure that retrying cannot fix.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent wraps err so that ConsumeMessages terminates the message instead of retrying it (e.g. a direct
// message to a mysis that was deleted). Use it only when no retry can ever succeed: the message is gone after it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was wrapped with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// ConsumerOptions configure ConsumeMessages. The zero value is usable.
type ConsumerOptions struct {
	// Durable names the consumer; DeliveryConsumer when empty. Every bus replica uses the same one.
	Durable string
	// AckWait is how long the server waits for an ack before redelivering (to any replica); default 30s. While a
	// handler runs, ConsumeMessages tells the server it is still in progress, so only a crashed replica's message
	// waits for AckWait.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one message; default 100000, i.e. with the retry backoff capped at 15s, weeks.
	MaxDeliver int
	// RetryBase and RetryMax shape the delay before a failed message is retried: RetryBase·2^(attempt-1) capped at
	// RetryMax; defaults 250ms and 15s.
	RetryBase, RetryMax time.Duration
	// HandlerTimeout bounds one handler call; default 2m. A shutdown lets the running handler finish.
	HandlerTimeout time.Duration
	// FetchWait is how long one pull waits for a message (and so the longest shutdown wait); default 2s.
	FetchWait time.Duration
}

func (o *ConsumerOptions) setDefaults() {
	if o.Durable == "" {
		o.Durable = DeliveryConsumer
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = 100000
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 250 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 15 * time.Second
	}
	if o.HandlerTimeout <= 0 {
		o.HandlerTimeout = 2 * time.Minute
	}
	if o.FetchWait <= 0 {
		o.FetchWait = 2 * time.Second
	}
}

// ConsumeMessages runs the durable delivery consumer until ctx is done, calling handler for each broadcast and
// direct message, one at a time, in publish order. A nil return acknowledges the message (it is then removed from
// the stream); an error wrapped with Permanent terminates it; any other error retries it after a backoff, holding
// back the messages behind it so order is kept. Delivery is at least once: handler effects must be idempotent.
//
// The consumer is the provisioned one (Provision) when it matches opts; when it is missing or differs, this bus
// creates or updates it, and when its NATS user may not (Zoea's authorization), ConsumeMessages returns an error
// wrapping ErrNotProvisioned at once instead of waiting for it.
//
// On ctx cancellation the running handler finishes (its context is not cancelled, HandlerTimeout bounds it), a
// message that arrives meanwhile is handed back for immediate redelivery, and ConsumeMessages returns nil.
func (b *Bus) ConsumeMessages(ctx context.Context, opts ConsumerOptions, handler func(context.Context, Delivery) error) error {
	opts.setDefaults()
	log := b.log.With("consumer", opts.Durable)
	defer b.consuming.Store(false)
	for ctx.Err() == nil {
		cons, err := b.deliveryConsumer(ctx, log, opts)
		if errors.Is(err, ErrNotProvisioned) {
			return err
		}
		if err != nil {
			return nil // ctx done
		}
		b.consuming.Store(true)
		b.consume(ctx, log, opts, cons, handler)
		b.consuming.Store(false)
	}
	return nil
}

// DeliveryReady reports whether ConsumeMessages is running with a working durable consumer; use it as a readiness
// check of the delivering process.
func (b *Bus) DeliveryReady(context.Context) error {
	if !b.consuming.Load() {
		return errors.New("delivery consumer is not running")
	}
	return nil
}

// consumerConfig is the delivery consumer as opts (with defaults) describe it; Provision creates it with the
// defaults.
func (b *Bus) consumerConfig(opts ConsumerOptions) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       opts.Durable,
		Description:   "Zoea bus: delivers broadcasts and direct messages to the memory service",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       opts.AckWait,
		MaxDeliver:    opts.MaxDeliver,
		MaxAckPending: 1,
		// The stream's replication, set explicitly: a consumer created while the stream was R1 keeps one peer
		// when the stream is scaled up, so each start reconciles it with Options.Replicas like the stream.
		Replicas: b.opts.Replicas,
		// No filter: the stream holds exactly the subjects to deliver, and multiple filter subjects would need
		// NATS 2.10+ (Debian 12 ships 2.9).
	}
}

// deliveryConsumer finds (or creates, or reconciles) the durable consumer, retrying until ctx is done; a refusal
// to create or update it (ErrNotProvisioned) is returned at once, since retrying cannot help.
func (b *Bus) deliveryConsumer(ctx context.Context, log *slog.Logger, opts ConsumerOptions) (jetstream.Consumer, error) {
	for attempt := 1; ; attempt++ {
		c, err := b.ensureConsumer(ctx, opts)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, ErrNotProvisioned) {
			log.Error("delivery consumer not provisioned", "err", err)
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Warn("creating delivery consumer; retrying", "attempt", attempt, "err", err)
		if !sleep(ctx, backoff(attempt, 200*time.Millisecond, 5*time.Second)) {
			return nil, ctx.Err()
		}
	}
}

// consume pulls one message at a time until ctx is done or the consumer disappears (a NATS server that lost its
// state), in which case the caller recreates it. Pulling one at a time (rather than a prefetching iterator) means
// no message ever sits unseen in a local buffer at shutdown, waiting out AckWait before another replica gets it.
func (b *Bus) consume(ctx context.Context, log *slog.Logger, opts ConsumerOptions, cons jetstream.Consumer, handler func(context.Context, Delivery) error) {
	failures := 0
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(opts.FetchWait))
		if err == nil {
			for msg := range batch.Messages() {
				if ctx.Err() != nil {
					// Shutting down: hand it back now rather than after AckWait.
					_ = msg.Nak()
					continue
				}
				b.handle(ctx, log, opts, msg, handler)
			}
			err = batch.Error()
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
				err = nil
			}
		}
		if err == nil {
			failures = 0
			continue
		}
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
			log.Warn("delivery consumer gone; recreating", "err", err)
			return
		}
		failures++
		log.Warn("fetch failed", "err", err, "failures", failures)
		sleep(ctx, backoff(failures, 100*time.Millisecond, 5*time.Second))
	}
}

func (b *Bus) handle(ctx context.Context, log *slog.Logger, opts ConsumerOptions, msg jetstream.Msg, handler func(context.Context, Delivery) error) {
	d := Delivery{Attempt: 1}
	if md, err := msg.Metadata(); err == nil {
		d.Attempt, d.Seq, d.Stored = int(md.NumDelivered), md.Sequence.Stream, md.Timestamp
	}
	// Only the stream's own subjects are read: anything else in it (no Zoea process publishes it) is terminated
	// unread rather than taken for a direct message.
	switch subject := msg.Subject(); {
	case !strings.HasPrefix(subject, b.names.DirectPrefix) && subject != b.names.Broadcast:
		log.Error("message on a foreign subject terminated", "seq", d.Seq, "subject", subject)
		_ = msg.TermWithReason("not a Zoea message subject")
		return
	case subject == b.names.Broadcast:
		var bc Broadcast
		if err := json.Unmarshal(msg.Data(), &bc); err != nil || ValidateID(bc.ID) != nil {
			log.Error("undecodable broadcast terminated", "seq", d.Seq, "err", err)
			_ = msg.TermWithReason("undecodable broadcast")
			return
		}
		d.Broadcast = &bc
	default:
		var dm Direct
		if err := json.Unmarshal(msg.Data(), &dm); err != nil || ValidateID(dm.ID) != nil || dm.MysisID != lastToken(subject, b.names.DirectPrefix) {
			log.Error("undecodable direct message terminated", "seq", d.Seq, "subject", subject, "err", err)
			_ = msg.TermWithReason("undecodable direct message")
			return
		}
		d.Direct = &dm
	}

	// The handler runs to completion even when ctx is cancelled (shutdown), so a delivery is not cut in half.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.HandlerTimeout)
	defer cancel()
	hctx = b.opts.Propagator.Extract(hctx, headerCarrier(msg.Headers()))
	hctx, span := otel.Tracer(tracerName).Start(hctx, "process "+msg.Subject(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", msg.Subject()),
			attribute.Int64("messaging.nats.stream_seq", int64(d.Seq)), attribute.Int("messaging.delivery_attempt", d.Attempt)))
	defer span.End()

	// Keep the server from redelivering to another replica while a slow handler is still working.
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		t := time.NewTicker(opts.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	err := handler(hctx, d)
	close(stopBeat)
	<-beatDone

	switch {
	case err == nil:
		// Wait for the server to confirm: an ack lost on the way means a redelivery, which is harmless but wasteful.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if aerr := msg.DoubleAck(actx); aerr != nil {
			log.Warn("ack not confirmed; the message may be delivered again", "seq", d.Seq, "err", aerr)
		}
	case IsPermanent(err):
		span.RecordError(err)
		span.SetStatus(codes.Error, "terminated")
		log.Error("message terminated after a permanent failure", "seq", d.Seq, "subject", msg.Subject(), "attempt", d.Attempt, "err", err)
		_ = msg.TermWithReason(text.Cut(err.Error(), 200))
	default:
		span.RecordError(err)
		span.SetStatus(codes.Error, "retry")
		delay := backoff(d.Attempt, opts.RetryBase, opts.RetryMax)
		log.Warn("delivery failed; will retry", "seq", d.Seq, "subject", msg.Subject(), "attempt", d.Attempt, "retry_in", delay.String(), "err", err)
		_ = msg.NakWithDelay(delay)
	}
}
