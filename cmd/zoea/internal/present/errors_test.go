package present

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/libs/server"
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
		s    Subject
		want string
	}{
		{"typo suggests", status.Error(codes.NotFound, `mysis "scuot-1" not found`), Subject{Mysis: "scuot-1", Known: known, Service: "runner"},
			"no mysis named scuot-1 (did you mean scout-1?)"},
		{"far from anything", status.Error(codes.NotFound, `mysis "zz" not found`), Subject{Mysis: "freighter", Known: known, Service: "runner"},
			"no mysis named freighter (zoea list shows them all)"},
		{"exact name never suggested", status.Error(codes.NotFound, "gone"), Subject{Mysis: "scout-1", Known: known, Service: "runner"},
			"no mysis named scout-1 (zoea list shows them all)"},
		{"duplicate on create", status.Error(codes.AlreadyExists, `duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`),
			Subject{Mysis: "scout-1", Create: true, Service: "runner"}, "a mysis named scout-1 already exists"},
		{"other duplicate", status.Error(codes.AlreadyExists, `duplicate key value violates unique constraint "x" (SQLSTATE 23505)`),
			Subject{Service: "memory"}, `already exists: duplicate key value violates unique constraint "x"`},
		{"field names the flag", badField("model", `autopilot runs no model, so model "foo" would be ignored`), Subject{Service: "runner"},
			`--model: autopilot runs no model, so model "foo" would be ignored`},
		{"temperature", badField("temperature", "must be between 0 and 2, got 3"), Subject{Service: "runner"},
			"--temperature: must be between 0 and 2, got 3"},
		{"endpoint", badField("spacemolt_endpoint", `must be v1 (the flat tools at /mcp), v2 (the action tools at /mcp/v2) or empty for the swarm's endpoint; got "v3"`),
			Subject{Service: "runner"}, `--endpoint: must be v1 (the flat tools at /mcp), v2 (the action tools at /mcp/v2) or empty for the swarm's endpoint; got "v3"`},
		{"precondition as is", status.Error(codes.FailedPrecondition, "provider ollama is not reachable at http://127.0.0.1:11434 (connection refused)"),
			Subject{Service: "runner"}, "provider ollama is not reachable at http://127.0.0.1:11434 (connection refused)"},
		{"down", status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:7003: connect: connection refused\""),
			Subject{Service: "runner", Addr: "127.0.0.1:7003"},
			"cannot reach the runner at 127.0.0.1:7003: is the swarm running? (make dev, or docker compose up; --runner or ZOEA_RUNNER_ADDR point elsewhere)"},
		{"up, but what it needs is not", answeredWith(codes.Unavailable, "the game server did not list its tools, which the preview needs to count the request's tokens"),
			Subject{Service: "runner", Addr: "127.0.0.1:7003"},
			"the runner answered: the game server did not list its tools, which the preview needs to count the request's tokens"},
		{"up, but a service it calls is not", answeredWith(codes.Unavailable, "a service this one calls is unreachable (its log says which)"),
			Subject{Service: "runner", Addr: "127.0.0.1:7003"},
			"the runner answered: a service this one calls is unreachable (its log says which)"},
		{"memory down", status.Error(codes.Unavailable, "connection refused"), Subject{Service: "memory", Addr: "127.0.0.1:7001"},
			"cannot reach the memory service at 127.0.0.1:7001: is the swarm running? (make dev, or docker compose up; --memory or ZOEA_MEMORY_ADDR point elsewhere)"},
		{"slow", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), Subject{Service: "bus", Addr: "127.0.0.1:7004"},
			"the bus at 127.0.0.1:7004 did not answer in time (--timeout)"},
		{"token", status.Error(codes.Unauthenticated, "missing bearer token"), Subject{Service: "runner"},
			"the runner refused the call: missing bearer token (set ZOEA_ADMIN_TOKEN or --token to the swarm's admin token)"},
		{"cancelled", context.Canceled, Subject{}, "interrupted"},
		{"sentence passes", Sentencef("not deleted: scout-1 is kept"), Subject{Mysis: "scout-1"}, "not deleted: scout-1 is kept"},
	} {
		got := Explain(tc.err, tc.s)
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
	if Explain(nil, Subject{}) != nil {
		t.Error("nil error became an error")
	}
	plain := errors.New("dial 127.0.0.1:1: bad address")
	if !errors.Is(Explain(plain, Subject{}), plain) {
		t.Error("a non-gRPC error should pass unchanged")
	}
}

func TestEditDistanceCountsASwapOnce(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"scuot-1", "scout-1", 1}, {"scout-1", "scout-1", 0}, {"scout", "scouts", 1}, {"", "abc", 3}, {"miner", "scout", 5}} {
		if got := EditDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// answeredWith is an error status as a Zoea service sends it (libs/server): with an ErrorInfo in Zoea's domain.
func answeredWith(code codes.Code, msg string) error {
	st, _ := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: "UNAVAILABLE", Domain: server.ErrorDomain})
	return st.Err()
}
