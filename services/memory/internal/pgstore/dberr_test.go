package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zoeaswarm/zoea/libs/errs"
)

// Every Postgres failure a caller can meet leaves the store as an errs kind with a public sentence free of SQL.
func TestDBErrMapping(t *testing.T) {
	pg := func(code, constraint string) error {
		return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, ConstraintName: constraint, Message: "m"})
	}
	cases := []struct {
		name  string
		err   error
		kind  errs.Kind
		field string
		msg   string
	}{
		{"name taken", pg(pgerrcode.UniqueViolation, "myses_name_key"), errs.Exists, "", "a mysis with this name already exists"},
		{"account taken", pg(pgerrcode.UniqueViolation, "accounts_pkey"), errs.Exists, "", "an account with this username already exists"},
		{"mysis holds an account", pg(pgerrcode.UniqueViolation, "accounts_mysis_id_key"), errs.Conflict, "", "the mysis already holds an account"},
		{"other duplicate", pg(pgerrcode.UniqueViolation, "x_key"), errs.Exists, "", "memory already exists"},
		{"unknown mysis", pg(pgerrcode.ForeignKeyViolation, "memories_mysis_id_fkey"), errs.NotFound, "", "mysis not found"},
		{"NUL byte", pg(pgerrcode.CharacterNotInRepertoire, ""), errs.Invalid, "", "text Postgres cannot store (NUL byte or invalid UTF-8)"},
		{"bad encoding", pg(pgerrcode.UntranslatableCharacter, ""), errs.Invalid, "", "text Postgres cannot store (NUL byte or invalid UTF-8)"},
		{"malformed uuid", pg(pgerrcode.InvalidTextRepresentation, ""), errs.Invalid, "", "malformed value"},
		{"serialization failure", pg(pgerrcode.SerializationFailure, ""), errs.Aborted, "", "memory: concurrent update, retry"},
		{"deadlock", pg(pgerrcode.DeadlockDetected, ""), errs.Aborted, "", "memory: concurrent update, retry"},
		{"lock not available", pg(pgerrcode.LockNotAvailable, ""), errs.Unavailable, "", "memory: busy, retry later"},
		{"admin shutdown", pg(pgerrcode.AdminShutdown, ""), errs.Unavailable, "", "database unavailable"},
		{"tsquery too big", &pgconn.PgError{Code: pgerrcode.InternalError, Message: "tsquery stack too small"}, errs.Invalid, "query", "too many operators (such as -word) to search for"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := dbErr(c.err, "memory")
			var e *errs.Error
			if !errors.As(got, &e) {
				t.Fatalf("dbErr = %v (%T), want an *errs.Error", got, got)
			}
			if e.Kind != c.kind || e.Field != c.field || e.Msg != c.msg {
				t.Fatalf("dbErr = kind %v field %q msg %q, want %v %q %q", e.Kind, e.Field, e.Msg, c.kind, c.field, c.msg)
			}
			if !errors.Is(got, c.err) {
				t.Fatal("the cause is lost for the logs")
			}
		})
	}
	if got := dbErr(nil, "memory"); got != nil {
		t.Fatalf("dbErr(nil) = %v", got)
	}
	if got := dbErr(fmt.Errorf("q: %w", context.Canceled), "memory"); !errors.Is(got, context.Canceled) || errs.KindOf(got) != errs.Internal {
		t.Fatalf("a cancelled query must stay a context error, got %v", got)
	}
	if got := dbErr(pg(pgerrcode.SyntaxError, ""), "memory"); errs.KindOf(got) != errs.Internal {
		t.Fatalf("an unexpected SQL error must be Internal, got kind %v", errs.KindOf(got))
	}
	// Aborted is retryable like Unavailable, but clients can tell them apart by code and reason.
	if got := dbErr(pg(pgerrcode.DeadlockDetected, ""), "memory"); !errs.Retryable(got) || errs.ReasonOf(got) != errs.ReasonAborted {
		t.Fatalf("deadlock: retryable %v reason %q", errs.Retryable(got), errs.ReasonOf(got))
	}
}
