package main

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
)

// listingRunner answers ListMyses and GetMysis with fixed statuses: what a model wrote reaches the CLI through
// them (last action, last error), so they carry bidi and terminal controls.
type listingRunner struct {
	runnerv1.UnimplementedSwarmServiceServer
	myses []*runnerv1.MysisStatus
}

func (r *listingRunner) ListMyses(context.Context, *runnerv1.ListMysesRequest) (*runnerv1.ListMysesResponse, error) {
	return &runnerv1.ListMysesResponse{Myses: r.myses}, nil
}

func (r *listingRunner) GetMysis(context.Context, *runnerv1.GetMysisRequest) (*runnerv1.GetMysisResponse, error) {
	return &runnerv1.GetMysisResponse{Status: r.myses[0]}, nil
}

func serveRunner(t *testing.T, r runnerv1.SwarmServiceServer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runnerv1.RegisterSwarmServiceServer(srv, r)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

func runZoea(t *testing.T, args ...string) string {
	t.Helper()
	var out strings.Builder
	root := newRoot("test")
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("zoea %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// After a restart the runner's own turn count starts again at 1; list shows the mysis's stored turn number. A
// model's bidi and escape codes are shown escaped in list and get, never applied.
func TestListShowsTotalTurnsAndEscapesModelText(t *testing.T) {
	r := &listingRunner{myses: []*runnerv1.MysisStatus{{
		Mysis: &memoryv1.Mysis{Id: "id-1", Name: "scout-1", Provider: "autopilot", Model: "autopilot",
			State: memoryv1.MysisState_MYSIS_STATE_RUNNING, CurrentTurn: 44, SystemPrompt: "You play \u202eSpaceMolt"},
		Turns: 1, Credits: 900, LastAction: "sell \u202Eero\u202C at\x1b[2J sol", LastError: "model said \x1b]0;owned\x07 \u2067x\u2069",
	}}}
	addr := serveRunner(t, r)
	list := runZoea(t, "--runner", addr, "list")
	lines := strings.Split(list, "\n")
	head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	for i, h := range head {
		if h == "TURNS" && (i >= len(row) || row[i] != "44") {
			t.Errorf("TURNS shows %v, want the stored turn 44:\n%s", row, list)
		}
	}
	get := runZoea(t, "--runner", addr, "get", "scout-1")
	for name, out := range map[string]string{"list": list, "get": get} {
		for _, raw := range []string{"\u202E", "\u202C", "\u2067", "\x1b", "\x07"} {
			if strings.Contains(out, raw) {
				t.Errorf("%s prints %q as it is:\n%q", name, raw, out)
			}
		}
	}
	if !strings.Contains(list, `sell \u202eero\u202c at\x1b[2`) || !strings.Contains(get, `model said \x1b]0;owned\x07 \u2067x\u2069`) {
		t.Errorf("escaped text missing:\n%s\n%s", list, get)
	}
	if !strings.Contains(get, "turn:          44 (1 run by its current owner)") && !strings.Contains(get, "44 (1 run by its current owner)") {
		t.Errorf("get does not show both turn counts:\n%s", get)
	}
}

// After a runner dies its myses wait for their leases to expire: list says so, and that the credits may be stale.
func TestListSaysPlayIsPausedUntilALeaseExpires(t *testing.T) {
	until := time.Now().Add(9 * time.Second)
	r := &listingRunner{myses: []*runnerv1.MysisStatus{
		{Mysis: &memoryv1.Mysis{Id: "id-1", Name: "scout-1", State: memoryv1.MysisState_MYSIS_STATE_RUNNING, CurrentTurn: 44},
			Owner: "runner-7f3a", Credits: 900, PausedUntil: timestamppb.New(until)},
		{Mysis: &memoryv1.Mysis{Id: "id-2", Name: "miner-2", State: memoryv1.MysisState_MYSIS_STATE_RUNNING, CurrentTurn: 3},
			Owner: "runner-9b1c", Credits: 10},
	}}
	list := runZoea(t, "--runner", serveRunner(t, r), "list")
	want := "scout-1: play is paused until its lease expires (by " + until.Local().Format(time.TimeOnly)
	if !strings.Contains(list, want) || !strings.Contains(list, "runner runner-7f3a, which held it, stopped renewing it") ||
		!strings.Contains(list, "may be stale") {
		t.Errorf("list does not explain the pause:\n%s", list)
	}
	if strings.Contains(list, "miner-2: play is paused") {
		t.Errorf("a mysis with a live runner is reported paused:\n%s", list)
	}
}

// --help shows where the admin token comes from, never the token.
func TestHelpDoesNotPrintTheAdminToken(t *testing.T) {
	const secret = "s3cret-admin-token-value"
	t.Setenv("ZOEA_ADMIN_TOKEN", secret)
	for _, args := range [][]string{{"--help"}, {"list", "--help"}, {"dev", "--help"}} {
		out := runZoea(t, args...)
		if strings.Contains(out, secret) {
			t.Errorf("zoea %v prints the token:\n%s", args, out)
		}
		if !strings.Contains(out, "$ZOEA_ADMIN_TOKEN, set, not shown") {
			t.Errorf("zoea %v does not say the token comes from ZOEA_ADMIN_TOKEN:\n%s", args, out)
		}
	}
	ep := &endpoints{}
	if ep.adminToken() != secret {
		t.Error("without --token the CLI does not use ZOEA_ADMIN_TOKEN")
	}
	ep.token = "flag"
	if ep.adminToken() != "flag" {
		t.Error("--token does not win over ZOEA_ADMIN_TOKEN")
	}
	os.Unsetenv("ZOEA_ADMIN_TOKEN")
	if out := runZoea(t, "--help"); !strings.Contains(out, "$ZOEA_ADMIN_TOKEN, not set") {
		t.Errorf("--help without the variable:\n%s", out)
	}
}

// A stored state reason or last error that quotes a credential (a row written before the runner redacted them, or a
// credential it never knew) is printed by list and get without it; so is the admin token the CLI sends, should a
// server echo it (issue 41, finding 3).
func TestListAndGetPrintNoSecrets(t *testing.T) {
	const key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	const token = "admin-token-5e1d2b4c6a9e"
	for _, e := range redacttest.Echoes(key) {
		if e.Bare {
			continue // a bare key has no shape: only the runner, which knows it, can remove it
		}
		t.Run(e.Name, func(t *testing.T) {
			r := &listingRunner{myses: []*runnerv1.MysisStatus{{
				Mysis: &memoryv1.Mysis{Id: "id-1", Name: "scout-1", Provider: "openai", Model: "gpt-4o-mini",
					State: memoryv1.MysisState_MYSIS_STATE_ERRORED, StateReason: "llm openai: " + e.Text},
				LastError: "server echoed token " + token + " and " + e.Text, LastAction: e.Text,
			}}}
			addr := serveRunner(t, r)
			for _, args := range [][]string{{"list"}, {"get", "scout-1"}, {"get", "scout-1", "--json"}} {
				out := runZoea(t, append([]string{"--runner", addr, "--token", token}, args...)...)
				for _, secret := range []string{key, token} {
					if leak := redacttest.Leak(out, secret); leak != "" {
						t.Errorf("zoea %v prints %q of a secret:\n%s", args, leak, out)
					}
				}
			}
		})
	}
}
