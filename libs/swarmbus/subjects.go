package swarmbus

import (
	"errors"
	"fmt"

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

func directSubject(mysisID string) string { return subjectDirectPrefix + mysisID }
func wakeSubject(mysisID string) string   { return subjectWakePrefix + mysisID }

func eventSubject(mysisID string) string {
	if mysisID == "" {
		return subjectEventPrefix + swarmToken
	}
	return subjectEventPrefix + mysisID
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
