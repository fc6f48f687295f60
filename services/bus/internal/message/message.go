// Package message holds the bus's rules for what a commander (or a mysis) may send: content limits and the shape
// of ids. It is pure: no gRPC, NATS or protobuf, so the rules are table-tested on their own.
package message

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/text"
)

// MaxContentBytes bounds a broadcast's or direct message's text. Messages are prompts for a model that works under a
// token budget; 16 KiB is already several thousand tokens.
const MaxContentBytes = 16 << 10

// MaxIDLen bounds client-chosen message ids.
const MaxIDLen = 128

// ValidateContent checks message text: required (not only whitespace), at most MaxContentBytes, valid UTF-8 and
// free of NUL bytes (which Postgres cannot store, so the memory service would refuse it after we had accepted it).
func ValidateContent(field, s string) error {
	if strings.TrimSpace(s) == "" {
		return errs.InvalidField(field, "required")
	}
	if len(s) > MaxContentBytes {
		return errs.InvalidField(field, "too long: %d bytes, at most %d (16 KiB)", len(s), MaxContentBytes)
	}
	if !utf8.ValidString(s) {
		return errs.InvalidField(field, "not valid UTF-8")
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return errs.InvalidField(field, "contains a NUL byte at offset %d", i)
	}
	return nil
}

// ParseUUID validates a UUID in its 36-character form and returns it canonical (lower case), so ids that differ
// only in case name the same broadcast.
func ParseUUID(field, s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", errs.InvalidField(field, "not a UUID: %q", text.Clip(s, 64, "…"))
	}
	return u.String(), nil
}

// IsUUID reports whether s is a UUID in its 36-character form.
func IsUUID(s string) bool {
	_, err := ParseUUID("", s)
	return err == nil
}

// ValidateMessageID checks a client-chosen message id: 1–128 characters from [A-Za-z0-9_-] (a UUID fits). It
// becomes part of an idempotency key and of a NATS message id, so nothing else is allowed.
func ValidateMessageID(field, s string) error {
	if s == "" {
		return errs.InvalidField(field, "required")
	}
	if len(s) > MaxIDLen {
		return errs.InvalidField(field, "longer than %d characters", MaxIDLen)
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return errs.InvalidField(field, "character %q not allowed (use letters, digits, '-' and '_', e.g. a UUID)", c)
		}
	}
	return nil
}

// Excerpt shortens s to at most n bytes on a rune boundary, marking the cut, for event payloads.
func Excerpt(s string, n int) string {
	return text.Clip(s, n, "…")
}

// Stored is a direct message as the memory service stored it: a user row of source direct in the mysis's memory.
type Stored struct {
	ID, Seq, Turn                              int64
	MysisID, SenderID, Content, IdempotencyKey string
	CreatedAt                                  time.Time
}

// Broadcast is one message to the swarm as the bus accepted it (the durable stream carries it until delivery).
type Broadcast struct {
	// ID is the broadcast id (a UUID), chosen by the caller so that retries are one broadcast.
	ID string
	// SenderID is the sending mysis; empty for the commander.
	SenderID string
	Content  string
	// At is when the bus accepted it.
	At time.Time
}

// Direct is a message to one mysis as the bus accepted it.
type Direct struct {
	// ID is the client's message id (ValidateMessageID), the base of the idempotency key.
	ID       string
	MysisID  string
	SenderID string
	Content  string
	At       time.Time
}

// IdempotencyKey is the key a direct message is stored under in its mysis's memory: "direct:<id>", so a redelivery
// or a retried call with the same message id stores one row.
func (d Direct) IdempotencyKey() string { return "direct:" + d.ID }
