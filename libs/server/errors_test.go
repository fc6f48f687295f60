package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
)

func TestToStatusEveryCase(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	secret := errors.New(`duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`)
	passthrough := status.Error(codes.ResourceExhausted, "slow down")
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		msg    string
		reason string
	}{
		{"nil", nil, codes.OK, "", ""},
		{"status passes through", passthrough, codes.ResourceExhausted, "slow down", ""},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), codes.Canceled, "request canceled", ""},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "deadline exceeded", ""},
		{"unclassified is generic", secret, codes.Internal, "internal error", ""},
		{"internal kind is generic", &errs.Error{Kind: errs.Internal, Msg: "boom", Err: secret}, codes.Internal, "internal error", ""},
		{"invalid", errs.InvalidField("name", "must not be empty"), codes.InvalidArgument, "name: must not be empty", errs.ReasonInvalidArgument},
		{"not found", errs.NotFoundf("no mysis named %q", "x"), codes.NotFound, `no mysis named "x"`, errs.ReasonNotFound},
		{"exists", &errs.Error{Kind: errs.Exists, Msg: "a mysis named x already exists", Err: secret}, codes.AlreadyExists, "a mysis named x already exists", errs.ReasonAlreadyExists},
		{"conflict with own reason", &errs.Error{Kind: errs.Conflict, Msg: "limit", Reason: "SPEND_LIMIT_REACHED"}, codes.FailedPrecondition, "limit", "SPEND_LIMIT_REACHED"},
		{"unavailable hides the cause", errs.Unavailablef(secret, "postgres is unreachable"), codes.Unavailable, "postgres is unreachable", errs.ReasonUnavailable},
		{"aborted hides the cause", errs.Abortedf(secret, "a concurrent update won; retry"), codes.Aborted, "a concurrent update won; retry", errs.ReasonAborted},
		{"timeout", &errs.Error{Kind: errs.Timeout, Msg: "game did not answer"}, codes.DeadlineExceeded, "game did not answer", errs.ReasonTimeout},
		{"unauthenticated", &errs.Error{Kind: errs.Unauthenticated, Msg: "bad token"}, codes.Unauthenticated, "bad token", errs.ReasonUnauthenticated},
		{"permission denied names the field", errs.Deniedf("sender_id", "myses may not broadcast"), codes.PermissionDenied, "sender_id: myses may not broadcast", errs.ReasonPermission},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := server.ToStatus(context.Background(), log, c.err)
			st, _ := status.FromError(err)
			if st.Code() != c.code || st.Message() != c.msg {
				t.Fatalf("got %v %q, want %v %q", st.Code(), st.Message(), c.code, c.msg)
			}
			if strings.Contains(st.Message(), "SQLSTATE") {
				t.Fatalf("internal detail leaked: %q", st.Message())
			}
			var reason string
			for _, d := range st.Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok {
					reason = info.Reason
					if info.Domain != server.ErrorDomain {
						t.Fatalf("domain %q", info.Domain)
					}
				}
			}
			if reason != c.reason {
				t.Fatalf("ErrorInfo reason %q, want %q", reason, c.reason)
			}
		})
	}
}

// A client's expected outcome with a cause (an idempotent create that finds the name taken: the seed job run again)
// is not a warning in the server's log; a dependency failure is.
func TestToStatusLogsExpectedOutcomesQuietly(t *testing.T) {
	cause := errors.New(`duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`)
	cases := []struct {
		err  error
		warn bool
	}{
		{&errs.Error{Kind: errs.Exists, Msg: "a mysis named x already exists", Err: cause}, false},
		{&errs.Error{Kind: errs.NotFound, Msg: "no mysis named x", Err: cause}, false},
		{&errs.Error{Kind: errs.Invalid, Field: "name", Msg: "too long", Err: cause}, false},
		{&errs.Error{Kind: errs.Conflict, Msg: "stale revision", Err: cause}, false},
		{errs.Unavailablef(cause, "postgres is unreachable"), true},
		{errs.Abortedf(cause, "a concurrent update won; retry"), true},
	}
	for _, c := range cases {
		var buf strings.Builder
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		_ = server.ToStatus(context.Background(), log, c.err)
		out := buf.String()
		if !strings.Contains(out, "classified failure") {
			t.Fatalf("%v: cause not logged at all: %q", c.err, out)
		}
		if got := strings.Contains(out, "level=WARN"); got != c.warn {
			t.Errorf("%v: logged %q, want a warning %v", c.err, out, c.warn)
		}
	}
}

func TestFromStatusRoundTrip(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	kinds := []errs.Kind{errs.Invalid, errs.NotFound, errs.Exists, errs.Conflict, errs.Unavailable, errs.Timeout, errs.Unauthenticated, errs.Aborted, errs.PermissionDenied}
	for _, k := range kinds {
		in := &errs.Error{Kind: k, Msg: "something"}
		if k == errs.Invalid {
			in.Field = "policy.token_budget"
		}
		out := server.FromStatus(server.ToStatus(context.Background(), log, in))
		if errs.KindOf(out) != k {
			t.Errorf("kind %v came back as %v", k, errs.KindOf(out))
		}
		if errs.FieldOf(out) != in.Field {
			t.Errorf("kind %v: field %q came back as %q", k, in.Field, errs.FieldOf(out))
		}
		if errs.ReasonOf(out) != k.Reason() {
			t.Errorf("kind %v: reason %q", k, errs.ReasonOf(out))
		}
	}
	own := server.FromStatus(server.ToStatus(context.Background(), log, &errs.Error{Kind: errs.Conflict, Msg: "x", Reason: "SPEND_LIMIT_REACHED"}))
	if errs.ReasonOf(own) != "SPEND_LIMIT_REACHED" {
		t.Errorf("own reason came back as %q", errs.ReasonOf(own))
	}
	// Aborted is not a state conflict: a client retries it.
	if errs.Is(server.FromStatus(status.Error(codes.Aborted, "x")), errs.Conflict) {
		t.Error("Aborted must stay apart from Conflict")
	}
	if got := server.FromStatus(status.Error(codes.Internal, "internal error")); errs.KindOf(got) != errs.Internal {
		t.Errorf("Internal came back as %v", errs.KindOf(got))
	}
	if server.FromStatus(nil) != nil {
		t.Error("FromStatus(nil) must be nil")
	}
	plain := errors.New("not a status")
	if server.FromStatus(plain) != plain {
		t.Error("a non-status error passes through")
	}
}
