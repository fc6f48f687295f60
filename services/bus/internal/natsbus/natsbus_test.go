package natsbus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
	"github.com/zoeaswarm/zoea/services/bus/internal/natsbus"
)

// stream hands each of its deliveries to the consumer's handler once and keeps what the handler returned.
type stream struct {
	deliveries []swarmbus.Delivery
	returned   []error
	published  []swarmbus.Broadcast
}

func (s *stream) PublishBroadcast(_ context.Context, b swarmbus.Broadcast) (swarmbus.PubAck, error) {
	s.published = append(s.published, b)
	return swarmbus.PubAck{}, nil
}

func (s *stream) ConsumeMessages(ctx context.Context, _ swarmbus.ConsumerOptions, h func(context.Context, swarmbus.Delivery) error) error {
	for _, d := range s.deliveries {
		s.returned = append(s.returned, h(ctx, d))
	}
	return nil
}

func (s *stream) SubscribeEvents(context.Context, swarmbus.EventFilter, func(context.Context, *busv1.Event)) (*swarmbus.Subscription, error) {
	return nil, errors.New("not used")
}

// The stream's deliveries reach delivery as its own Message values, field for field, and an error delivery marks
// undeliverable is terminated (swarmbus.Permanent) while any other is left to redelivery.
func TestConsumeConvertsAndTerminatesTheUndeliverable(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &stream{deliveries: []swarmbus.Delivery{
		{Broadcast: &swarmbus.Broadcast{ID: "b1", SenderID: "s", Content: "go", At: at}, Attempt: 2, Stored: at},
		{Direct: &swarmbus.Direct{ID: "d1", MysisID: "m", SenderID: "s", Content: "hi", At: at}, Attempt: 1},
		{},
	}}
	var got []delivery.Message
	err := natsbus.NewBroadcasts(s).Consume(context.Background(), swarmbus.ConsumerOptions{}, func(_ context.Context, m delivery.Message) error {
		got = append(got, m)
		switch len(got) {
		case 2:
			return errors.New("memory down")
		case 3:
			return fmt.Errorf("%w: empty", delivery.ErrUndeliverable)
		}
		return nil
	})
	if err != nil || len(got) != 3 {
		t.Fatalf("Consume = %v after %d messages", err, len(got))
	}
	if b := got[0].Broadcast; b == nil || *b != (message.Broadcast{ID: "b1", SenderID: "s", Content: "go", At: at}) || got[0].Attempt != 2 || !got[0].Stored.Equal(at) {
		t.Errorf("broadcast message = %+v", got[0])
	}
	if d := got[1].Direct; d == nil || *d != (message.Direct{ID: "d1", MysisID: "m", SenderID: "s", Content: "hi", At: at}) {
		t.Errorf("direct message = %+v", got[1])
	}
	if s.returned[0] != nil || s.returned[1] == nil || swarmbus.IsPermanent(s.returned[1]) || !swarmbus.IsPermanent(s.returned[2]) {
		t.Errorf("returned to the stream: %v; want nil, a retryable error, a permanent one", s.returned)
	}
}

// A direct message keeps the idempotency key the stream's own type gives it, so a message accepted before and
// delivered after an upgrade is stored once.
func TestDirectIdempotencyKeyIsTheStreams(t *testing.T) {
	if a, b := (message.Direct{ID: "x1"}).IdempotencyKey(), (swarmbus.Direct{ID: "x1"}).IdempotencyKey(); a != b {
		t.Fatalf("message key %q, stream key %q", a, b)
	}
}

func TestPublishBroadcastCarriesEveryField(t *testing.T) {
	at := time.Now().UTC()
	s := &stream{}
	if err := natsbus.NewBroadcasts(s).PublishBroadcast(context.Background(), message.Broadcast{ID: "b", SenderID: "s", Content: "c", At: at}); err != nil {
		t.Fatal(err)
	}
	if len(s.published) != 1 || s.published[0] != (swarmbus.Broadcast{ID: "b", SenderID: "s", Content: "c", At: at}) {
		t.Fatalf("published %+v", s.published)
	}
}
