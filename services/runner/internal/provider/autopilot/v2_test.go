package autopilot

import (
	"context"
	"encoding/json"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// asYAML renders a JSON fixture the way the simulator's /mcp/v2 renders result text.
func asYAML(t *testing.T, js string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlaysMCPv2: offered the v2 tools, the autopilot calls actions of spacemolt with v2 parameter names and reads
// v2 results (YAML text) and v2 calls as it reads the legacy ones.
func TestPlaysMCPv2(t *testing.T) {
	p := newAutopilot(t, Config{})
	tools := []llm.Tool{{Name: "spacemolt"}, {Name: "spacemolt_auth"}, {Name: "spacemolt_market"}}
	for _, c := range []struct {
		name       string
		steps      []step
		tool, args string
	}{
		{"look first", nil, "spacemolt", `{"action":"get_status"}`},
		{"docked and empty: undock", []step{{"spacemolt", `{"action":"get_status"}`, asYAML(t, status("sol_central", true, 100, 0, 100))}},
			"spacemolt", `{"action":"undock"}`},
		{"at the station undocked: travel to the belt", []step{
			{"spacemolt", `{"action":"get_status"}`, asYAML(t, status("sol_central", false, 100, 0, 100))}},
			"spacemolt", `{"action":"travel","id":"main_belt"}`},
		{"at the belt: mine", []step{
			{"spacemolt", `{"action":"get_status"}`, asYAML(t, status("sol_central", false, 100, 0, 100))},
			{"spacemolt", `{"action":"travel","id":"main_belt"}`, asYAML(t, travelResult("main_belt"))}},
			"spacemolt", `{"action":"mine"}`},
		{"docked with ore: check cargo, then sell it", []step{
			{"spacemolt", `{"action":"get_status"}`, asYAML(t, status("sol_central", true, 90, 70, 100))},
			{"spacemolt", `{"action":"get_cargo"}`, asYAML(t, cargoResult(stack{"iron_ore", 70}))}},
			"spacemolt", `{"action":"sell","id":"iron_ore","quantity":70}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := p.Chat(context.Background(), llm.Request{Messages: turn(c.steps...), Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			calls := res.Message.ToolCalls
			if len(calls) != 1 || calls[0].Name != c.tool || !sameJSON(calls[0].Arguments, c.args) {
				t.Fatalf("calls = %+v, want %s %s (reasoning %q, text %q)", calls, c.tool, c.args, res.Reasoning, res.Message.Content)
			}
		})
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
