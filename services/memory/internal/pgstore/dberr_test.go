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
		name   string
		err    error
		kind   errs.Kind
		field  string
		msg    string
		reason string
	}{
		{"name taken", pg(pgerrcode.UniqueViolation, "myses_name_key"), errs.Exists, "", "a mysis with this name already exists", errs.ReasonMysisNameTaken},
		{"account taken", pg(pgerrcode.UniqueViolation, "accounts_pkey"), errs.Exists, "", "an account with this username already exists", errs.ReasonAccountUsernameTaken},
		{"mysis holds an account", pg(pgerrcode.UniqueViolation, "accounts_mysis_id_key"), errs.Conflict, "", "the mysis already holds an account", errs.ReasonAccountAlreadyBound},
		{"other duplicate", pg(pgerrcode.UniqueViolation, "x_key"), errs.Exists, "", "memory already exists", errs.ReasonAlreadyExists},
		{"unknown mysis", pg(pgerrcode.ForeignKeyViolation, "memories_mysis_id_fkey"), errs.NotFound, "", "mysis not found", errs.ReasonNotFound},
		{"NUL byte", pg(pgerrcode.CharacterNotInRepertoire, ""), errs.Invalid, "", "text Postgres cannot store (NUL byte or invalid UTF-8)", errs.ReasonInvalidArgument},
		{"bad encoding", pg(pgerrcode.UntranslatableCharacter, ""), errs.Invalid, "", "text Postgres cannot store (NUL byte or invalid UTF-8)", errs.ReasonInvalidArgument},
		{"malformed uuid", pg(pgerrcode.InvalidTextRepresentation, ""), errs.Invalid, "", "malformed value", errs.ReasonInvalidArgument},
		{"serialization failure", pg(pgerrcode.SerializationFailure, ""), errs.Aborted, "", "memory: concurrent update, retry", errs.ReasonAborted},
		{"deadlock", pg(pgerrcode.DeadlockDetected, ""), errs.Aborted, "", "memory: concurrent update, retry", errs.ReasonAborted},
		{"lock not available", pg(pgerrcode.LockNotAvailable, ""), errs.Unavailable, "", "memory: busy, retry later", errs.ReasonUnavailable},
		{"admin shutdown", pg(pgerrcode.AdminShutdown, ""), errs.Unavailable, "", "database unavailable", errs.ReasonUnavailable},
		{"tsquery too big", &pgconn.PgError{Code: pgerrcode.InternalError, Message: "tsquery stack too small"}, errs.Invalid, "query", "too many operators (such as -word) to search for", errs.ReasonInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := dbErr(c.err, "memory")
			var e *errs.Error
			if !errors.As(got, &e) {
				t.Fatalf("dbErr = %v (%T), want an *errs.Error", got, got)
			}
			if e.Kind != c.kind || e.Field != c.field || e.Msg != c.msg || errs.ReasonOf(got) != c.reason {
				t.Fatalf("dbErr = kind %v field %q msg %q reason %q, want %v %q %q %q", e.Kind, e.Field, e.Msg, errs.ReasonOf(got), c.kind, c.field, c.msg, c.reason)
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
