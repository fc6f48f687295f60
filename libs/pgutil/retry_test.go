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
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{&pgconn.PgError{Code: pgerrcode.SerializationFailure}, true},
		{&pgconn.PgError{Code: pgerrcode.QueryCanceled}, false}, // query_canceled: the caller's own doing
		{&pgconn.PgError{Code: pgerrcode.UniqueViolation}, false},
		{&pgconn.PgError{Code: "42601"}, false},
		{errors.New("boom"), false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
