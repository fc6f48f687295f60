// Package errs is the vocabulary of failures shared by every Zoea domain package. Domain code returns these kinds
// without importing gRPC; libs/server maps them to status codes in one place.
package errs

import (
	"errors"
	"fmt"
)

// Kind classifies an error for the caller.
type Kind int

const (
	// Internal is anything unexpected; callers see a generic message, logs see everything.
	Internal Kind = iota
	// Invalid means the caller sent bad input; Field names it.
	Invalid
	// NotFound means the named thing does not exist.
	NotFound
	// Exists means a unique thing already exists.
	Exists
	// Conflict means the current state forbids the operation (a failed compare-and-set, a busy resource).
	Conflict
	// Unavailable means a dependency cannot be reached; retrying later may succeed.
	Unavailable
	// Timeout means a deadline passed.
	Timeout
	// Unauthenticated means credentials are missing or wrong.
	Unauthenticated
)

// Error is a classified error.
type Error struct {
	Kind  Kind
	Field string // for Invalid: the offending field, e.g. "memories[3].content"
	Msg   string
	Err   error // cause, never shown to remote callers for Internal
}

func (e *Error) Error() string {
	msg := e.Msg
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		if msg == "" {
			return e.Err.Error()
		}
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Public is the text a remote caller sees: the field and the message, never the cause. Causes are for logs: they
// carry SQL constraint names, driver errors and, for an error relayed from another service, that service's whole
// status text again (which is how one message once came back four times nested).
func (e *Error) Public() string {
	msg := e.Msg
	if msg == "" {
		switch e.Kind {
		case NotFound:
			msg = "not found"
		case Exists:
			msg = "already exists"
		case Conflict:
			msg = "not possible in the current state"
		case Unavailable:
			msg = "unavailable, retry later"
		case Timeout:
			msg = "deadline exceeded"
		case Unauthenticated:
			msg = "unauthenticated"
		default:
			msg = "invalid"
		}
	}
	if e.Field != "" {
		return e.Field + ": " + msg
	}
	return msg
}

// InvalidField reports bad input in one field.
func InvalidField(field, format string, args ...any) error {
	return &Error{Kind: Invalid, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// NotFoundf reports a missing thing.
func NotFoundf(format string, args ...any) error {
	return &Error{Kind: NotFound, Msg: fmt.Sprintf(format, args...)}
}

// Existsf reports a duplicate.
func Existsf(format string, args ...any) error {
	return &Error{Kind: Exists, Msg: fmt.Sprintf(format, args...)}
}

// Conflictf reports a state conflict.
func Conflictf(format string, args ...any) error {
	return &Error{Kind: Conflict, Msg: fmt.Sprintf(format, args...)}
}

// Unavailablef reports an unreachable dependency.
func Unavailablef(cause error, format string, args ...any) error {
	return &Error{Kind: Unavailable, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// KindOf returns the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// FieldOf returns the offending field of an Invalid error, if any.
func FieldOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// Is reports whether err is classified as k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }
