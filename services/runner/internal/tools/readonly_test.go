package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv"
)

// Which cut calls a resumed turn may run again (issue 29): on the legacy /mcp each tool is one command and its
// annotation or name decides; on /mcp/v2 one tool holds reads and mutations (spacemolt: get_status and travel), so
// the action decides. Checked against the real simulator on both endpoints; on v2 every action the server flags as
// a mutation (get_commands) must be judged one, and the documented reads must be judged reads.
func TestReadOnlyCallsOnBothEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	sim := testenv.StartSim(t, "ZOEA_SIM_REGISTRATION_CODE=letmein")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	v1, err := NewRouter(Config{Endpoint: sim.MCPURL()}, newAccounts(t), &fakeSearch{}).Tools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	reads := llm.ReadOnlyCalls(v1)
	for name, want := range map[string]bool{"get_status": true, "view_market": true, "zoea_search_messages": true,
		"travel": false, "jump": false, "sell": false, "mine": false, "chat": false, "login": false} {
		if got := llm.ReadOnlyCall(reads, name, `{}`); got != want {
			t.Errorf("/mcp %s: read-only %v, want %v", name, got, want)
		}
	}

	// The swarm plays /mcp; this mysis chose v2 (issue 29: the endpoint per mysis), so its session plays /mcp/v2.
	accounts := newAccounts(t)
	r := NewRouter(Config{Endpoint: sim.MCPURL(), RegistrationCode: "letmein", ResultView: ViewStructured}, accounts, &fakeSearch{})
	m := accounts.mysis(t, "Ada Lovelace")
	m.SpaceMoltEndpoint = EndpointV2
	s := r.Open(m).(*Session)
	defer s.Close()
	v2, err := s.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.v2 || s.endpoint != sim.MCPURL()+"/v2" {
		t.Fatalf("a mysis on v2 plays %s (v2 %v), want the swarm's server at /mcp/v2", s.endpoint, s.v2)
	}
	if listed, err := r.Tools(ctx, EndpointV2); err != nil || len(listed) != len(v2) {
		t.Errorf("Tools(v2) = %d tools, %v; want the v2 session's %d", len(listed), err, len(v2))
	}
	reads = llm.ReadOnlyCalls(v2)
	for _, tc := range []struct {
		tool, args string
		want       bool
	}{
		{"spacemolt", `{"action":"get_status"}`, true},
		{"spacemolt", `{"action":"get_commands"}`, true},
		{"spacemolt", `{"action":"travel","id":"main_belt"}`, false},
		{"spacemolt", `{"action":"sell","id":"iron_ore"}`, false},
		{"spacemolt", `{}`, false},
		{"spacemolt_market", `{"action":"view_market"}`, true},
		{"spacemolt_social", `{"action":"captains_log_list"}`, true},
		{"spacemolt_social", `{"action":"chat","target":"system","content":"hi"}`, false},
		{"spacemolt_auth", `{"action":"login"}`, false},
		{"spacemolt_auth", `{"action":"help"}`, true},
		{"spacemolt_catalog", `{"type":"items"}`, true},
		{"get_status", `{}`, false}, // no such tool on v2
	} {
		if got := llm.ReadOnlyCall(reads, tc.tool, tc.args); got != tc.want {
			t.Errorf("/mcp/v2 %s %s: read-only %v, want %v", tc.tool, tc.args, got, tc.want)
		}
	}
	// The server's own word on each action: a mutation is never judged a read.
	res, err := s.Call(ctx, call("c", "spacemolt", `{"action":"get_commands"}`))
	if err != nil || res.IsError {
		t.Fatalf("get_commands: %v %s", err, res.Content)
	}
	var cmds struct {
		Tools []struct {
			Tool    string `json:"tool"`
			Actions []struct {
				Name     string `json:"name"`
				Mutation bool   `json:"mutation"`
			} `json:"actions"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Content), &cmds); err != nil || len(cmds.Tools) != 16 {
		t.Fatalf("get_commands: %d tools (%v) in %s", len(cmds.Tools), err, res.Content)
	}
	mutations := 0
	for _, tool := range cmds.Tools {
		for _, a := range tool.Actions {
			args := `{"action":"` + a.Name + `"}`
			if a.Mutation {
				mutations++
				if llm.ReadOnlyCall(reads, tool.Tool, args) {
					t.Errorf("%s.%s is a mutation, judged read-only", tool.Tool, a.Name)
				}
			}
		}
	}
	if mutations < 10 {
		t.Errorf("the simulator flagged %d mutations; the check above tested too little", mutations)
	}
}
