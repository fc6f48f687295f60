// Package names holds the one rule for a mysis name, shared by every service that accepts one (the runner's
// CreateMysis, the memory service's store, the bus's and the CLI's lookups by name), so a name one accepts is never
// refused, trimmed or unreachable in another.
//
// A name is what a commander types and reads in a list: 1–64 characters, printable, no leading or trailing
// spaces (refused, never trimmed: a silently altered name is a different name), no invisible format characters
// (zero-width spaces and joiners, bidi overrides like U+202E that display text reversed), and not a UUID — every
// lookup tries a UUID as an id first, so such a name would be unreachable once another mysis had that id.
package names

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/zoeaswarm/zoea/libs/errs"
)

// Limits of a name.
const (
	MaxRunes = 64
	MaxBytes = 256
)

// Check validates a mysis name; field is the request field it came from ("name", "mysis").
func Check(field, name string) error {
	if name == "" {
		return errs.InvalidField(field, "required")
	}
	if len(name) > MaxBytes {
		return errs.InvalidField(field, "too long: %d bytes, at most %d", len(name), MaxBytes)
	}
	if !utf8.ValidString(name) {
		return errs.InvalidField(field, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxRunes {
		return errs.InvalidField(field, "too long: %d characters, at most %d", n, MaxRunes)
	}
	if strings.TrimSpace(name) != name {
		return errs.InvalidField(field, "must not start or end with spaces")
	}
	for _, r := range name {
		switch {
		case r == 0:
			return errs.InvalidField(field, "must not contain a NUL byte")
		case unicode.Is(unicode.Cf, r):
			return errs.InvalidField(field, "must not contain invisible formatting characters (such as U+%04X)", r)
		case !unicode.IsPrint(r) && r != ' ':
			return errs.InvalidField(field, "must contain only printable characters (not U+%04X)", r)
		}
	}
	if IsID(name) {
		return errs.InvalidField(field, "must not be a UUID: a mysis is looked up by id first, so this name could become unreachable")
	}
	return nil
}

// IsID reports whether s parses as a UUID in any of its spellings (36 characters, 32 hex digits, braces, urn:uuid:).
func IsID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil
}
