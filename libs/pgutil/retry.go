package pgutil

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

// Retryable reports whether err means "the database could not do it now" rather than "this request is wrong":
// the connection dropped or was refused (a restart, an immediate stop — often only "unexpected EOF"), the server is
// shutting down, starting or out of connections, or the transaction lost a serialization race or a deadlock. A
// client may retry such a request (Zoea's writes carry idempotency keys); callers report it as Unavailable, never
// Internal.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pgerrcode.IsConnectionException(pe.Code) ||
			pgerrcode.IsOperatorIntervention(pe.Code) && pe.Code != pgerrcode.QueryCanceled ||
			pgerrcode.IsInsufficientResources(pe.Code) ||
			pe.Code == pgerrcode.SerializationFailure || pe.Code == pgerrcode.DeadlockDetected ||
			pe.Code == pgerrcode.LockNotAvailable
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}
