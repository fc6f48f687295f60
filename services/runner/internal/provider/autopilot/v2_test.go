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

// v2State is SpaceMolt v2's get_status answer (the state blob) for a theoria at poi.
func v2State(poi string, docked bool, fuel, cargo int) string {
	dock := "null"
	if docked {
		dock = `"confederacy_central_command"`
	}
	return `{"player":{"id":"p1","username":"u","credits":100},` +
		`"ship":{"class_id":"theoria","fuel":` + itoa(fuel) + `,"max_fuel":100,"cargo_used":` + itoa(cargo) + `,"cargo_capacity":70},` +
		`"cargo":[],"location":{"system_id":"sol","poi_id":"` + poi + `","docked_at":` + dock + `,"in_transit":false},"queue":{"has_pending":false}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestPlaysAPIv2States: the v2 results are state blobs and mutation deltas with details (as the real v2 and the
// simulator's /mcp/v2 answer); the autopilot reads the position from location and the action's result from details.
func TestPlaysAPIv2States(t *testing.T) {
	p := newAutopilot(t, Config{})
	tools := []llm.Tool{{Name: "spacemolt"}, {Name: "spacemolt_auth"}, {Name: "spacemolt_market"}}
	travelDelta := `{"location":{"system_id":"sol","poi_id":"main_belt","docked_at":null,"in_transit":false},"queue":{"has_pending":false},` +
		`"details":{"action":"travel","poi":"Main Belt","poi_id":"main_belt","online_players":[],"online_players_count":0,"online_players_truncated":false,"offline_collapsed":0}}`
	fullCargo := `{"cargo":[{"item_id":"iron_ore","item_name":"Iron Ore","quantity":70,"size":1}],"ship":{"cargo_used":70,"cargo_capacity":70,"fuel":90,"max_fuel":100},"credits":100}`
	for _, c := range []struct {
		name       string
		steps      []step
		tool, args string
	}{
		{"docked and empty: undock", []step{{"spacemolt", `{"action":"get_status"}`, v2State("sol_central", true, 100, 0)}},
			"spacemolt", `{"action":"undock"}`},
		{"at the station undocked: travel to the belt", []step{{"spacemolt", `{"action":"get_status"}`, v2State("sol_central", false, 100, 0)}},
			"spacemolt", `{"action":"travel","id":"main_belt"}`},
		{"after the travel delta: mine", []step{
			{"spacemolt", `{"action":"get_status"}`, v2State("sol_central", false, 100, 0)},
			{"spacemolt", `{"action":"travel","id":"main_belt"}`, travelDelta}},
			"spacemolt", `{"action":"mine"}`},
		{"docked with ore: sell it", []step{
			{"spacemolt", `{"action":"get_status"}`, v2State("sol_central", true, 90, 70)},
			{"spacemolt", `{"action":"get_cargo"}`, fullCargo}},
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
