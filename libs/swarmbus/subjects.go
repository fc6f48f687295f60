package swarmbus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// ErrInvalidID reports an id that cannot be used as a subject token or KV key.
var ErrInvalidID = errors.New("swarmbus: invalid id")

// MaxIDLen bounds mysis, broadcast and message ids.
const MaxIDLen = 128

// ValidateID checks that id can be used as a NATS subject token and KV key: 1–128 characters from
// [A-Za-z0-9_-]. Mysis ids (UUIDs) and broadcast ids always pass.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidID, MaxIDLen)
	}
	for i := range len(id) {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: %q has character %q (allowed: letters, digits, '-' and '_')", ErrInvalidID, id, c)
		}
	}
	return nil
}

// ErrInvalidSwarm reports a swarm name (Options.Swarm, ZOEA_SWARM) that cannot name NATS resources.
var ErrInvalidSwarm = errors.New("swarmbus: invalid swarm name (ZOEA_SWARM)")

// MaxSwarmLen bounds swarm names, so the stream and bucket names built from them stay short.
const MaxSwarmLen = 32

// ValidateSwarm checks a swarm name: empty (the default swarm, today's resource names), or 1–32 characters from
// lowercase letters, digits and '-', starting with a letter or digit. Such a name is safe in every NATS subject
// token, stream, consumer and bucket name, and names built from two different swarm names never collide.
func ValidateSwarm(swarm string) error {
	if swarm == "" {
		return nil
	}
	if len(swarm) > MaxSwarmLen {
		return fmt.Errorf("%w: %q is longer than %d characters", ErrInvalidSwarm, swarm, MaxSwarmLen)
	}
	if swarm[0] == '-' {
		return fmt.Errorf("%w: %q starts with '-' (start with a letter or digit)", ErrInvalidSwarm, swarm)
	}
	for i := range len(swarm) {
		c := swarm[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%w: %q has character %q (allowed: lowercase letters, digits and '-')", ErrInvalidSwarm, swarm, c)
		}
	}
	return nil
}

// Names are the NATS resources of one swarm. The default swarm (an empty name) uses the names of the constants
// above; a named swarm inserts its name after "zoea" in each of them (see NamesFor), so swarms that share a NATS
// server share nothing on it.
type Names struct {
	// Swarm is the swarm name; empty for the default swarm.
	Swarm string
	// Stream is the JetStream stream of broadcasts and direct messages.
	Stream string
	// Consumer is the durable delivery consumer; consumer names are scoped to their stream, so every swarm's is
	// DeliveryConsumer.
	Consumer string
	// LeaseBucket and StatusBucket are the KV buckets of leases and live statuses.
	LeaseBucket, StatusBucket string
	// Broadcast is the subject of broadcasts.
	Broadcast string
	// DirectPrefix, WakePrefix and EventPrefix are followed by a mysis id (one subject token).
	DirectPrefix, WakePrefix, EventPrefix string
}

// NamesFor returns the resource names of swarm: for "" the defaults (ZOEA_MESSAGES, zoea.bcast, zoea_leases, …),
// for "alpha" ZOEA_ALPHA_MESSAGES, zoea_alpha.bcast, zoea_alpha.direct.<mysis>, zoea_alpha.wake.<mysis>,
// zoea_alpha.events.<mysis>, zoea_alpha_leases and zoea_alpha_status.
func NamesFor(swarm string) (Names, error) {
	if err := ValidateSwarm(swarm); err != nil {
		return Names{}, err
	}
	if swarm == "" {
		return Names{
			Stream: StreamMessages, Consumer: DeliveryConsumer, LeaseBucket: LeaseBucket, StatusBucket: StatusBucket,
			Broadcast: SubjectBroadcast, DirectPrefix: subjectDirectPrefix, WakePrefix: subjectWakePrefix, EventPrefix: subjectEventPrefix,
		}, nil
	}
	// "zoea_<swarm>" is one subject token that no default subject (first token "zoea") and no other swarm's
	// subjects start with; the stream and buckets keep their suffixes, which no swarm name can forge ('_' is not
	// allowed in one).
	root := "zoea_" + swarm
	return Names{
		Swarm:        swarm,
		Stream:       "ZOEA_" + strings.ToUpper(swarm) + "_MESSAGES",
		Consumer:     DeliveryConsumer,
		LeaseBucket:  root + "_leases",
		StatusBucket: root + "_status",
		Broadcast:    root + ".bcast",
		DirectPrefix: root + ".direct.",
		WakePrefix:   root + ".wake.",
		EventPrefix:  root + ".events.",
	}, nil
}

func (n Names) direct(mysisID string) string { return n.DirectPrefix + mysisID }
func (n Names) wake(mysisID string) string   { return n.WakePrefix + mysisID }

func (n Names) event(mysisID string) string {
	if mysisID == "" {
		return n.EventPrefix + swarmToken
	}
	return n.EventPrefix + mysisID
}

// lastToken returns what follows prefix in subject.
func lastToken(subject, prefix string) string {
	if len(subject) <= len(prefix) {
		return ""
	}
	return subject[len(prefix):]
}

// headerCarrier adapts nats.Header to OpenTelemetry propagation. nats.Header is case-sensitive; propagators use
// lowercase W3C names ("traceparent"), which this carrier keeps as they are.
type headerCarrier nats.Header

var _ propagation.TextMapCarrier = headerCarrier{}

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
