package pgutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("list myses: %w", io.ErrUnexpectedEOF), true},
		{&pgconn.PgError{Code: pgerrcode.AdminShutdown, Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: pgerrcode.CannotConnectNow, Message: "the database system is starting up"}, true},
		{&pgconn.PgError{Code: pgerrcode.ConnectionFailure}, true},
		{&pgconn.PgError{Code: pgerrcode.TooManyConnections}, true},
		{&pgconn.PgError{Code: pgerrcode.SerializationFailure}, true},
		{&pgconn.PgError{Code: pgerrcode.QueryCanceled}, false}, // the caller's own doing
		{&pgconn.PgError{Code: pgerrcode.UniqueViolation}, false},
		{&pgconn.PgError{Code: pgerrcode.SyntaxError}, false},
		{errors.New("boom"), false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
