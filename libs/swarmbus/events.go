package swarmbus

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
)

// PublishEvent publishes ev on zoea.events.<ev.mysis_id> (an empty mysis id is a swarm-wide event), protobuf
// encoded, with ctx's trace context in the headers. It fills in ev.id and ev.at when unset. Fire-and-forget: with
// no watcher the event goes nowhere, which is fine — events describe what memory already holds.
func (b *Bus) PublishEvent(ctx context.Context, ev *busv1.Event) error {
	if ev.GetMysisId() != "" {
		if err := ValidateID(ev.GetMysisId()); err != nil {
			return fmt.Errorf("event mysis id: %w", err)
		}
	}
	if ev.GetId() == "" {
		ev.Id = uuid.NewString()
	}
	if ev.GetAt() == nil {
		ev.At = timestamppb.Now()
	}
	data, err := proto.Marshal(ev)
	if err != nil {
		return fmt.Errorf("swarmbus: encode event: %w", err)
	}
	msg := &nats.Msg{Subject: b.names.event(ev.GetMysisId()), Data: data, Header: nats.Header{}}
	b.opts.Propagator.Inject(ctx, headerCarrier(msg.Header))
	if err := b.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("swarmbus: publish event: %w", err)
	}
	return nil
}

// EventFilter selects events; empty fields select everything.
type EventFilter struct {
	// MysisIDs keeps events of these myses. Empty keeps every event, swarm-wide ones included.
	MysisIDs []string
	// Kinds keeps events of these kinds. Empty, or containing EVENT_KIND_UNSPECIFIED, keeps every kind.
	Kinds []busv1.EventKind
}

// maxSubjectSubs is how many per-mysis subscriptions a filter may open before it subscribes to all events and
// filters locally instead.
const maxSubjectSubs = 64

// SubscribeEvents calls handler for every event matching f until ctx is done, in the order NATS delivered them
// (for one publisher: publish order), one at a time, with a context carrying the publisher's trace context. handler
// must keep up: past 65,536 waiting events NATS drops the excess (and logs a slow-consumer error). Undecodable events
// are skipped.
func (b *Bus) SubscribeEvents(ctx context.Context, f EventFilter, handler func(context.Context, *busv1.Event)) (*Subscription, error) {
	for _, id := range f.MysisIDs {
		if err := ValidateID(id); err != nil {
			return nil, fmt.Errorf("event filter mysis id: %w", err)
		}
	}
	kinds := map[busv1.EventKind]bool{}
	for _, k := range f.Kinds {
		if k == busv1.EventKind_EVENT_KIND_UNSPECIFIED {
			clear(kinds)
			break
		}
		kinds[k] = true
	}
	ids := map[string]bool{}
	for _, id := range f.MysisIDs {
		ids[id] = true
	}

	var subjects []string
	if len(ids) == 0 || len(ids) > maxSubjectSubs {
		subjects = []string{b.names.EventPrefix + "*"}
	} else {
		for id := range ids {
			subjects = append(subjects, b.names.event(id))
		}
		slices.Sort(subjects)
	}

	deliver := func(m *nats.Msg) {
		ev := &busv1.Event{}
		if err := proto.Unmarshal(m.Data, ev); err != nil {
			b.log.Warn("skipping undecodable event", "subject", m.Subject, "err", err)
			return
		}
		if len(ids) > 0 && !ids[ev.GetMysisId()] {
			return
		}
		if len(kinds) > 0 && !kinds[ev.GetKind()] {
			return
		}
		handler(b.opts.Propagator.Extract(context.WithoutCancel(ctx), headerCarrier(m.Header)), ev)
	}

	// All subscriptions feed one channel, filled by the connection's read loop in arrival order, and one goroutine
	// drains it: events keep the order in which the server sent them, across myses too.
	ch := make(chan *nats.Msg, 1<<16)
	subs := make([]*nats.Subscription, 0, len(subjects))
	for _, subj := range subjects {
		sub, err := b.nc.ChanSubscribe(subj, ch)
		if err != nil {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
			return nil, fmt.Errorf("swarmbus: subscribe %s: %w", subj, err)
		}
		subs = append(subs, sub)
	}
	// Make sure the server has the interest before returning, so an event published right after is seen.
	if err := b.flush(ctx); err != nil {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
		return nil, fmt.Errorf("swarmbus: subscribe events: %w", err)
	}
	s := newSubscription(ctx, subs)
	go func() {
		for {
			select {
			case <-s.done:
				return
			case m := <-ch:
				select {
				case <-s.done:
					return // stopped while this one waited: the caller no longer wants events
				default:
				}
				deliver(m)
			}
		}
	}()
	return s, nil
}
