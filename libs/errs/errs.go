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
	// Aborted means a concurrent transaction won (a serialization failure, a deadlock): the same call retried at once
	// will usually succeed. Unlike Conflict it says nothing about the caller's request being wrong for the state.
	Aborted
	// PermissionDenied means the caller is known but this operation is not allowed to it (a mysis broadcasting where
	// only the commander may).
	PermissionDenied
)

// Reasons are stable, machine-readable causes carried to clients in a gRPC ErrorInfo (domain "zoea.dev"), so a client
// can switch on them instead of parsing messages. This list is the one place they are defined; docs/ERRORS.md
// describes them for API users. A reason is never renamed or reused; new ones are added here and there.
//
// A Kind alone gives its generic reason:
const (
	ReasonInvalidArgument = "INVALID_ARGUMENT"       // InvalidArgument: BadRequest names the field
	ReasonNotFound        = "NOT_FOUND"              // NotFound
	ReasonAlreadyExists   = "ALREADY_EXISTS"         // AlreadyExists
	ReasonConflict        = "STATE_CONFLICT"         // FailedPrecondition: change the state first, do not retry as is
	ReasonUnavailable     = "DEPENDENCY_UNAVAILABLE" // Unavailable: retry later with backoff
	ReasonTimeout         = "TIMEOUT"                // DeadlineExceeded
	ReasonUnauthenticated = "UNAUTHENTICATED"        // Unauthenticated
	ReasonAborted         = "CONCURRENT_UPDATE"      // Aborted: a concurrent transaction won; retry at once
	ReasonPermission      = "PERMISSION_DENIED"      // PermissionDenied: not allowed to this caller; do not retry
	ReasonInternal        = "INTERNAL"               // Internal: a bug; logged in full on the server
)

// Specific reasons refine a kind where a client acts differently on the cause:
const (
	// ReasonMysisNameTaken (AlreadyExists): another mysis has this name.
	ReasonMysisNameTaken = "MYSIS_NAME_TAKEN"
	// ReasonAccountUsernameTaken (AlreadyExists): the account pool already has this username.
	ReasonAccountUsernameTaken = "ACCOUNT_USERNAME_TAKEN"
	// ReasonAccountAlreadyBound (FailedPrecondition): the mysis already holds an account.
	ReasonAccountAlreadyBound = "ACCOUNT_ALREADY_BOUND"
	// ReasonSecretKeyMissing (FailedPrecondition): the memory service has no ZOEA_SECRET_KEY, so account passwords
	// cannot be stored or read.
	ReasonSecretKeyMissing = "SECRET_KEY_MISSING"
	// ReasonStateChanged (FailedPrecondition): a compare-and-set state change found another state; re-read and decide.
	ReasonStateChanged = "STATE_CHANGED"
	// ReasonIdempotencyKeyReused (AlreadyExists): an idempotency key (a memory's idempotency_key, a broadcast_id) names
	// a stored item whose content differs from the request's; nothing was written and the stored item is unchanged.
	// The same key with the same content is a retry and returns the stored item. Do not retry as is: use a new key
	// for new content, or read what the key stored.
	ReasonIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
)

// KeyReusedf reports an idempotency key sent again with different content; field names the key's request field
// ("memories[2].idempotency_key", "broadcast_id").
func KeyReusedf(field, format string, args ...any) error {
	return &Error{Kind: Exists, Field: field, Reason: ReasonIdempotencyKeyReused, Msg: fmt.Sprintf(format, args...)}
}

// IsKeyReused reports whether err is an idempotency key sent again with different content.
func IsKeyReused(err error) bool { return err != nil && ReasonOf(err) == ReasonIdempotencyKeyReused }

// Error is a classified error.
type Error struct {
	Kind  Kind
	Field string // for Invalid: the offending field, e.g. "memories[3].content"
	Msg   string
	Err   error // cause, never shown to remote callers for Internal
	// Reason refines Kind for clients (e.g. "SPEND_LIMIT_REACHED"); empty means the Kind's generic reason.
	Reason string
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
		case PermissionDenied:
			msg = "permission denied"
		default:
			msg = "invalid"
		}
	}
	if e.Field != "" {
		return e.Field + ": " + msg
	}
	return msg
}

// Deniedf reports an operation the caller may not perform; field (may be empty) names the request field that asks
// for it.
func Deniedf(field, format string, args ...any) error {
	return &Error{Kind: PermissionDenied, Field: field, Msg: fmt.Sprintf(format, args...)}
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

// Abortedf reports an operation that lost a race with a concurrent one and may be retried at once.
func Abortedf(cause error, format string, args ...any) error {
	return &Error{Kind: Aborted, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Retryable reports whether retrying the same call later may succeed without changing it.
func Retryable(err error) bool {
	switch KindOf(err) {
	case Unavailable, Timeout, Aborted:
		return err != nil
	}
	return false
}

// ReasonOf returns the machine-readable reason of err: its own Reason, or its Kind's generic one.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return KindOf(err).Reason()
}

// Reason is the generic machine-readable reason of the kind.
func (k Kind) Reason() string {
	switch k {
	case Invalid:
		return ReasonInvalidArgument
	case NotFound:
		return ReasonNotFound
	case Exists:
		return ReasonAlreadyExists
	case Conflict:
		return ReasonConflict
	case Unavailable:
		return ReasonUnavailable
	case Timeout:
		return ReasonTimeout
	case Unauthenticated:
		return ReasonUnauthenticated
	case Aborted:
		return ReasonAborted
	case PermissionDenied:
		return ReasonPermission
	default:
		return ReasonInternal
	}
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
