package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func badField(field, desc string) error {
	st, _ := status.New(codes.InvalidArgument, field+": "+desc).WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: desc}}})
	return st.Err()
}

// Every error a commander meets is a sentence: no "rpc error: code = …", no SQL constraint or SQLSTATE.
func TestErrorsAreSentences(t *testing.T) {
	known := []string{"scout-1", "scout-2", "miner-7"}
	for _, tc := range []struct {
		name string
		err  error
		s    subject
		want string
	}{
		{"typo suggests", status.Error(codes.NotFound, `mysis "scuot-1" not found`), subject{mysis: "scuot-1", known: known, service: "runner"},
			"no mysis named scuot-1 (did you mean scout-1?)"},
		{"far from anything", status.Error(codes.NotFound, `mysis "zz" not found`), subject{mysis: "freighter", known: known, service: "runner"},
			"no mysis named freighter (zoea list shows them all)"},
		{"exact name never suggested", status.Error(codes.NotFound, "gone"), subject{mysis: "scout-1", known: known, service: "runner"},
			"no mysis named scout-1 (zoea list shows them all)"},
		{"duplicate on create", status.Error(codes.AlreadyExists, `duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`),
			subject{mysis: "scout-1", create: true, service: "runner"}, "a mysis named scout-1 already exists"},
		{"other duplicate", status.Error(codes.AlreadyExists, `duplicate key value violates unique constraint "x" (SQLSTATE 23505)`),
			subject{service: "memory"}, `already exists: duplicate key value violates unique constraint "x"`},
		{"field names the flag", badField("model", `autopilot runs no model, so model "foo" would be ignored`), subject{service: "runner"},
			`--model: autopilot runs no model, so model "foo" would be ignored`},
		{"temperature", badField("temperature", "must be between 0 and 2, got 3"), subject{service: "runner"},
			"--temperature: must be between 0 and 2, got 3"},
		{"precondition as is", status.Error(codes.FailedPrecondition, "provider ollama is not reachable at http://127.0.0.1:11434 (connection refused)"),
			subject{service: "runner"}, "provider ollama is not reachable at http://127.0.0.1:11434 (connection refused)"},
		{"down", status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:7003: connect: connection refused\""),
			subject{service: "runner", addr: "127.0.0.1:7003"},
			"cannot reach the runner at 127.0.0.1:7003: is the swarm running? (make dev, or docker compose up; --runner or ZOEA_RUNNER_ADDR point elsewhere)"},
		{"slow", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), subject{service: "bus", addr: "127.0.0.1:7004"},
			"the bus at 127.0.0.1:7004 did not answer in time (--timeout)"},
		{"token", status.Error(codes.Unauthenticated, "missing bearer token"), subject{service: "runner"},
			"the runner refused the call: missing bearer token (set ZOEA_ADMIN_TOKEN or --token to the swarm's admin token)"},
		{"cancelled", context.Canceled, subject{}, "interrupted"},
		{"sentence passes", sentencef("not deleted: scout-1 is kept"), subject{mysis: "scout-1"}, "not deleted: scout-1 is kept"},
	} {
		got := explain(tc.err, tc.s)
		if got == nil || got.Error() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			continue
		}
		for _, leak := range []string{"rpc error", "code =", "SQLSTATE", "desc ="} {
			if strings.Contains(got.Error(), leak) {
				t.Errorf("%s: %q leaks %q", tc.name, got, leak)
			}
		}
	}
	if explain(nil, subject{}) != nil {
		t.Error("nil error became an error")
	}
	plain := errors.New("dial 127.0.0.1:1: bad address")
	if !errors.Is(explain(plain, subject{}), plain) {
		t.Error("a non-gRPC error should pass unchanged")
	}
}

func TestEditDistanceCountsASwapOnce(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"scuot-1", "scout-1", 1}, {"scout-1", "scout-1", 0}, {"scout", "scouts", 1}, {"", "abc", 3}, {"miner", "scout", 5}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

func TestConfirmNeedsAYes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		fail bool
	}{{"y\n", true, false}, {"YES\n", true, false}, {"n\n", false, false}, {"\n", false, false}, {"", false, true}} {
		var out strings.Builder
		ok, err := confirm(strings.NewReader(tc.in), &out, "Delete? [y/N] ")
		if ok != tc.ok || (err != nil) != tc.fail {
			t.Errorf("answer %q: ok %v err %v", tc.in, ok, err)
		}
		if !strings.HasPrefix(out.String(), "Delete? [y/N] ") {
			t.Errorf("question not asked: %q", out.String())
		}
	}
}
