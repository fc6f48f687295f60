package autopilot

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/contract"
)

// step is one tool call of a fixture turn and the result the game returned.
type step struct {
	tool, args, result string
}

// turn builds a conversation: system, an older finished turn (which must be ignored), the user prompt that opens
// the current turn, then the steps as assistant tool calls with their results.
func turn(steps ...step) []chat.Message {
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a SpaceMolt miner."},
		{Role: chat.RoleUser, Content: "Mine and sell ore."},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "old_1", Name: "get_status", Arguments: "{}"}}},
		// An old turn's state (docked, cargo full) that would change the decision if it leaked into this turn.
		{Role: chat.RoleTool, ToolCallID: "old_1", Name: "get_status", Content: status("sol_central", true, 100, 70, 100)},
		{Role: chat.RoleAssistant, Content: "Summary of an older turn."},
		{Role: chat.RoleUser, Content: "Continue your mission."},
	}
	for i, s := range steps {
		id := "c" + string(rune('a'+i))
		args := s.args
		if args == "" {
			args = "{}"
		}
		msgs = append(msgs,
			chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Name: s.tool, Arguments: args}}},
			chat.Message{Role: chat.RoleTool, ToolCallID: id, Name: s.tool, Content: s.result})
	}
	return msgs
}

func newAutopilot(t *testing.T, cfg Config) *Provider {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecisions(t *testing.T) {
	atBelt := step{"get_status", "", status("main_belt", false, 99, 10, 100)}
	tests := []struct {
		name     string
		msgs     []chat.Message
		tools    []llm.Tool
		wantTool string // "" = the turn ends with text
		wantArgs string
		wantText string // substring of the closing text
		wantWhy  string // substring of the reasoning
	}{
		{
			name: "a turn starts with get_status", msgs: turn(),
			wantTool: "get_status", wantArgs: "{}", wantWhy: "checking status first",
		},
		{
			name:     "docked, empty hold, full tank: undock",
			msgs:     turn(step{"get_status", "", status("sol_central", true, 100, 0, 100)}),
			wantTool: "undock", wantArgs: "{}", wantWhy: "undocking to go mining",
		},
		{
			name:     "docked, fuel below 60%: refuel",
			msgs:     turn(step{"get_status", "", status("sol_central", true, 40, 0, 100)}),
			wantTool: "refuel", wantArgs: "{}", wantWhy: "Fuel 40/100 is below 60%",
		},
		{
			name:     "docked, fuel at 60%: no refuel",
			msgs:     turn(step{"get_status", "", status("sol_central", true, 60, 0, 100)}),
			wantTool: "undock",
		},
		{
			name:     "docked with cargo of unknown kind (a status without ship.cargo): get_cargo",
			msgs:     turn(step{"get_status", "", withoutHoldList(status("sol_central", true, 90, 70, 100))}),
			wantTool: "get_cargo", wantArgs: "{}", wantWhy: "cargo 70/70",
		},
		{
			name:     "docked, get_status lists the hold: sell the first stack",
			msgs:     turn(step{"get_status", "", statusWith("sol_central", true, 90, 100, stack{"copper_ore", 30}, stack{"iron_ore", 40})}),
			wantTool: "sell", wantArgs: `{"item_id":"copper_ore","quantity":30}`, wantWhy: "30 copper_ore",
		},
		{
			name: "docked with cargo known: sell the first item",
			msgs: turn(
				step{"get_status", "", status("sol_central", true, 90, 70, 100)},
				step{"get_cargo", "", cargoResult(stack{"iron_ore", 55}, stack{"copper_ore", 15})},
			),
			wantTool: "sell", wantArgs: `{"item_id":"iron_ore","quantity":55}`, wantWhy: "55 iron_ore",
		},
		{
			name: "docked with cargo but no get_cargo tool: sell what was mined",
			msgs: turn(
				step{"get_status", "", withoutHoldList(status("main_belt", false, 99, 65, 100))},
				step{"mine", "", mineResult("copper_ore", 5, 70)},
				step{"travel", `{"target_poi":"sol_central"}`, travelResult("sol_central")},
				step{"dock", "", dockResult()},
			),
			tools:    spaceMoltTools("get_cargo"),
			wantTool: "sell", wantArgs: `{"item_id":"copper_ore","quantity":5}`,
		},
		{
			name: "just sold: the turn ends with a summary",
			msgs: turn(
				step{"get_status", "", status("sol_central", true, 90, 70, 100)},
				step{"get_cargo", "", cargoResult(stack{"iron_ore", 55}, stack{"copper_ore", 15})},
				step{"sell", `{"item_id":"iron_ore","quantity":55}`, sellResult("iron_ore", 55, 55, 5)},
			),
			wantText: "Sold 55 iron_ore for 275 credits. Now docked at sol_central, cargo 15/70, fuel 90/100, 375 credits.",
			wantWhy:  "Just sold",
		},
		{
			name: "a sale that sold nothing does not end the turn and is not retried",
			msgs: turn(
				step{"get_status", "", status("sol_central", true, 90, 20, 100)},
				step{"get_cargo", "", cargoResult(stack{"iron_ore", 20})},
				step{"sell", `{"item_id":"iron_ore","quantity":20}`, sellResult("iron_ore", 20, 0, 5)},
			),
			wantTool: "undock",
		},
		{
			name: "station refuses the item: leave with it",
			msgs: turn(
				step{"get_status", "", status("sol_central", true, 90, 20, 100)},
				step{"get_cargo", "", cargoResult(stack{"iron_ore", 20})},
				step{"sell", `{"item_id":"iron_ore","quantity":20}`, gameErr("item_not_available", "No buy orders for iron_ore right now.")},
			),
			wantTool: "undock",
		},
		{
			name: "refuel without credits is not repeated",
			msgs: turn(
				step{"get_status", "", status("sol_central", true, 30, 0, 0)},
				step{"refuel", "", gameErr("no_credits", "Fuel costs 2 credits a unit; you have 0.")},
			),
			wantTool: "undock",
		},
		{
			name: "a partial refuel is not repeated",
			msgs: turn(
				step{"get_status", "", status("sol_central", true, 30, 0, 20)},
				step{"refuel", "", refuelResult(40, 20)},
			),
			wantTool: "undock",
		},
		{
			name:     "undocked at the station with an empty hold: travel to the belt",
			msgs:     turn(step{"get_status", "", status("sol_central", false, 100, 0, 100)}),
			wantTool: "travel", wantArgs: `{"target_poi":"main_belt"}`, wantWhy: "free cargo (0/70); travelling to main_belt",
		},
		{
			name:     "undocked at the station with cargo: dock",
			msgs:     turn(step{"get_status", "", status("sol_central", false, 98, 70, 100)}),
			wantTool: "dock", wantArgs: "{}", wantWhy: "docking to sell",
		},
		{
			name:     "undocked at the station with low fuel: dock to refuel",
			msgs:     turn(step{"get_status", "", status("sol_central", false, 20, 0, 100)}),
			wantTool: "dock", wantWhy: "docking to refuel",
		},
		{
			name: "at the belt with free cargo: mine", msgs: turn(atBelt),
			wantTool: "mine", wantArgs: "{}", wantWhy: "At main_belt with cargo 10/70; mining.",
		},
		{
			name:     "mining again after a yield",
			msgs:     turn(atBelt, step{"mine", "", mineResult("iron_ore", 5, 15)}),
			wantTool: "mine", wantWhy: "cargo 15/70",
		},
		{
			name:     "the yield that fills the hold: travel to the station",
			msgs:     turn(step{"get_status", "", status("main_belt", false, 99, 65, 100)}, step{"mine", "", mineResult("iron_ore", 5, 70)}),
			wantTool: "travel", wantArgs: `{"target_poi":"sol_central"}`, wantWhy: "Cargo 70/70, heading to sol_central to sell.",
		},
		{
			name: "a yield without cargo_used still counts",
			msgs: turn(step{"get_status", "", status("main_belt", false, 99, 65, 100)},
				step{"mine", "", `{"command":"mine","pending":false,"message":"Mined 5 Iron Ore.","resource_id":"iron_ore","quantity":5,"remaining":100}`}),
			wantTool: "travel", wantArgs: `{"target_poi":"sol_central"}`,
		},
		{
			name:     "cargo_full from mine: travel to the station",
			msgs:     turn(atBelt, step{"mine", "", gameErr("cargo_full", "Your cargo hold is full (70/70). Sell some cargo first.")}),
			wantTool: "travel", wantArgs: `{"target_poi":"sol_central"}`,
		},
		{
			name:     "no_cargo_space from mine: travel to the station",
			msgs:     turn(atBelt, step{"mine", "", gameErr("no_cargo_space", "No space.")}),
			wantTool: "travel", wantArgs: `{"target_poi":"sol_central"}`,
		},
		{
			name:     "belt too sparse with cargo: take it home",
			msgs:     turn(atBelt, step{"mine", "", gameErr("deposit_too_sparse", "The deposits are too sparse.")}),
			wantTool: "travel", wantArgs: `{"target_poi":"sol_central"}`,
		},
		{
			name: "belt too sparse with an empty hold: end the turn",
			msgs: turn(step{"get_status", "", status("main_belt", false, 99, 0, 100)},
				step{"mine", "", gameErr("deposit_too_sparse", "The deposits are too sparse.")}),
			wantText: "Mine failed (deposit_too_sparse). Now at main_belt, cargo 0/70, fuel 99/100, 100 credits.",
			wantWhy:  "too sparse",
		},
		{
			name:     "action_pending: get_status next",
			msgs:     turn(atBelt, step{"mine", "", gameErr("action_pending", "Your previous action (mine) is still waiting for the next tick.")}),
			wantTool: "get_status", wantWhy: "mine failed with action_pending",
		},
		{
			name: "in_transit: get_status next",
			msgs: turn(step{"get_status", "", status("sol_central", false, 100, 0, 100)},
				step{"travel", `{"target_poi":"main_belt"}`, gameErr("in_transit", "Your ship is in transit to main_belt and arrives in 10 seconds.")}),
			wantTool: "get_status", wantWhy: "in_transit",
		},
		{
			name:     "rate_limited: get_status next",
			msgs:     turn(atBelt, step{"mine", "", gameErr("rate_limited", "Too many actions; retry_after: 20")}),
			wantTool: "get_status",
		},
		{
			name: "rate_limited twice: end the turn",
			msgs: turn(atBelt,
				step{"mine", "", gameErr("rate_limited", "Too many actions (limit 30/min). retry_after: 2s")},
				step{"get_status", "", status("main_belt", false, 99, 10, 100)},
				step{"mine", "", gameErr("rate_limited", "Too many actions (limit 30/min). retry_after: 2s")},
			),
			wantText: "Mine failed (rate_limited); mine failed (rate_limited). Now at main_belt", wantWhy: "Rate limited twice",
		},
		{
			name: "status in transit: wait for the next turn",
			msgs: turn(
				step{"travel", `{"target_poi":"main_belt"}`, gameErr("in_transit", "Your ship is in transit.")},
				step{"get_status", "", status("", false, 99, 0, 100)},
			),
			wantText: "Travel failed (in_transit).", wantWhy: "In transit to main_belt (arrives in 10s)",
		},
		{
			name: "three failures in a row end the turn",
			msgs: turn(
				step{"get_status", "", gameErr("action_pending", "wait")},
				step{"get_status", "", gameErr("internal", "oops")},
				step{"get_status", "", gameErr("action_pending", "wait")},
			),
			wantText: "Get_status failed (action_pending); get_status failed (internal); get_status failed (action_pending).",
			wantWhy:  "Three failures in a row",
		},
		{
			name: "after six tool calls the turn ends",
			msgs: turn(atBelt,
				step{"mine", "", mineResult("iron_ore", 5, 15)}, step{"mine", "", mineResult("iron_ore", 5, 20)},
				step{"mine", "", mineResult("copper_ore", 5, 25)}, step{"mine", "", mineResult("iron_ore", 5, 30)},
				step{"mine", "", mineResult("iron_ore", 5, 35)}),
			wantText: "Mined 5 iron_ore; mined 5 iron_ore; mined 5 copper_ore; mined 5 iron_ore; mined 5 iron_ore. Now at main_belt, cargo 35/70, fuel 99/100, 100 credits.",
			wantWhy:  "Used 6 tool calls this turn",
		},
		{
			name: "a compacted older status is ignored; the newest decides",
			msgs: turn(
				step{"get_status", "", "[get_status result superseded by a newer one]"},
				step{"undock", "", undockResult()},
				step{"get_status", "", status("sol_central", false, 100, 0, 100)},
			),
			wantTool: "travel", wantArgs: `{"target_poi":"main_belt"}`,
		},
		{
			name:     "results of other tools are ignored",
			msgs:     turn(atBelt, step{"zoea_search_messages", `{"query":"iron"}`, `{"results":[],"total":0}`}),
			wantTool: "mine",
		},
		{
			name:     "no get_status tool: answer with text",
			msgs:     turn(),
			tools:    spaceMoltTools("get_status"),
			wantText: "get_status is not among my tools",
		},
		{
			name:     "a needed tool missing: answer with text",
			msgs:     turn(atBelt),
			tools:    spaceMoltTools("mine"),
			wantText: "I want to mine but that tool is not available",
		},
		{
			name:     "refuel missing: leave without refuelling",
			msgs:     turn(step{"get_status", "", status("sol_central", true, 10, 0, 100)}),
			tools:    spaceMoltTools("refuel"),
			wantTool: "undock",
		},
		{
			name:     "out of fuel: end the turn",
			msgs:     turn(atBelt, step{"travel", `{"target_poi":"sol_central"}`, gameErr("no_fuel", "Travelling needs 1 fuel; you have 0.")}),
			wantText: "Travel failed (no_fuel)", wantWhy: "Out of fuel",
		},
		{
			name:     "docked error from mine: undock",
			msgs:     turn(step{"get_status", "", status("main_belt", false, 99, 0, 100)}, step{"mine", "", gameErr("docked", "Undock before mining.")}),
			wantTool: "undock",
		},
	}
	p := newAutopilot(t, Config{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools := tc.tools
			if tools == nil {
				tools = spaceMoltTools()
			}
			resp, err := p.Chat(t.Context(), llm.Request{Model: "autopilot", Messages: tc.msgs, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			m := resp.Message
			if m.Role != chat.RoleAssistant {
				t.Fatalf("role = %q", m.Role)
			}
			if tc.wantTool == "" {
				if len(m.ToolCalls) != 0 || !strings.Contains(m.Content, tc.wantText) {
					t.Fatalf("want closing text containing %q, got %+v", tc.wantText, m)
				}
			} else {
				if len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != tc.wantTool || m.Content != "" {
					t.Fatalf("want one %s call, got %+v (reasoning %q)", tc.wantTool, m, resp.Reasoning)
				}
				if tc.wantArgs != "" && m.ToolCalls[0].Arguments != tc.wantArgs {
					t.Fatalf("arguments = %s, want %s", m.ToolCalls[0].Arguments, tc.wantArgs)
				}
			}
			if resp.Reasoning == "" || !strings.Contains(resp.Reasoning, tc.wantWhy) {
				t.Fatalf("reasoning %q does not contain %q", resp.Reasoning, tc.wantWhy)
			}
			if resp.Usage.PromptTokens <= 0 || resp.Usage.CompletionTokens <= 0 {
				t.Fatalf("usage = %+v", resp.Usage)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	p := newAutopilot(t, Config{})
	msgs := turn(step{"get_status", "", status("main_belt", false, 99, 10, 100)})
	req := llm.Request{Model: "autopilot", Messages: msgs, Tools: spaceMoltTools()}
	a, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newAutopilot(t, Config{}).Chat(t.Context(), llm.Request{Model: "autopilot", Messages: turn(step{"get_status", "", status("main_belt", false, 99, 10, 100)}), Tools: spaceMoltTools()})
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same conversation, different replies:\n%+v\n%+v", a, b)
	}
	if !regexp.MustCompile(`^call_[0-9a-f]{12}_0$`).MatchString(a.Message.ToolCalls[0].ID) {
		t.Fatalf("id %q", a.Message.ToolCalls[0].ID)
	}
	// One more mine result: another id.
	next := append(msgs, a.Message, chat.Message{Role: chat.RoleTool, ToolCallID: a.Message.ToolCalls[0].ID, Name: "mine", Content: mineResult("iron_ore", 5, 15)})
	c, _ := p.Chat(t.Context(), llm.Request{Messages: next, Tools: spaceMoltTools()})
	if c.Message.ToolCalls[0].ID == a.Message.ToolCalls[0].ID {
		t.Fatal("two calls in one conversation share an id")
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := newAutopilot(t, Config{}).Chat(ctx, llm.Request{Messages: turn(), Tools: spaceMoltTools()}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{{MaxToolIterations: -1}, {RefuelBelow: 1.5}, {Station: "x", Belt: "x"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	p := newAutopilot(t, Config{Name: "bot"})
	if p.Name() != "bot" {
		t.Fatalf("Name() = %q", p.Name())
	}
}

// TestWalkTheStarterLoop plays whole turns against the in-memory game the way the runner does: call the model,
// execute its tool call, store the result, repeat until it answers with text; then open the next turn with a nudge.
func TestWalkTheStarterLoop(t *testing.T) {
	const maxIter = 6
	p := newAutopilot(t, Config{MaxToolIterations: maxIter})
	g := newGame()
	g.fuel = 50       // low enough to refuel at the first stop
	g.rateLimitOn = 9 // one rate_limited in the middle of mining
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "You are a SpaceMolt miner."}, {Role: chat.RoleUser, Content: "Mine ore and sell it."}}
	var calls []string
	var sales, turns int
	for turns = 1; turns <= 60 && sales < 3; turns++ {
		iter := 0
		for {
			resp, err := p.Chat(t.Context(), llm.Request{Model: "autopilot", Messages: msgs, Tools: spaceMoltTools()})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Reasoning == "" {
				t.Fatalf("turn %d: empty reasoning", turns)
			}
			msgs = append(msgs, resp.Message)
			if len(resp.Message.ToolCalls) == 0 {
				if resp.Message.Content == "" {
					t.Fatalf("turn %d ended without text", turns)
				}
				break
			}
			iter++
			if iter > maxIter {
				t.Fatalf("turn %d ran %d tool calls, more than %d", turns, iter, maxIter)
			}
			tc := resp.Message.ToolCalls[0]
			out := g.call(tc.Name, tc.Arguments)
			if strings.HasPrefix(out, "Error: ") && !strings.HasPrefix(out, "Error: rate_limited") {
				t.Fatalf("turn %d: %s(%s) failed: %s\ncalls so far: %v", turns, tc.Name, tc.Arguments, out, calls)
			}
			if tc.Name == "sell" {
				sales++
			}
			calls = append(calls, tc.Name)
			msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: out})
		}
		if err := chatvalid.Validate(msgs); err != nil {
			t.Fatalf("turn %d left an invalid conversation: %v", turns, err)
		}
		msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: "Continue your mission."})
	}
	if sales < 3 {
		t.Fatalf("only %d sales in %d turns; calls: %v", sales, turns, calls)
	}
	// The first trip, call by call: status, refuel (fuel 50), undock, travel, then mining with a rate limit
	// answered by get_status.
	wantStart := []string{"get_status", "refuel", "undock", "travel", "mine", "mine", // turn 1: six calls
		"get_status", "mine", "mine", "mine", "get_status", "mine"} // turn 2: call 9 is rate limited
	if !reflect.DeepEqual(calls[:len(wantStart)], wantStart) {
		t.Fatalf("first calls = %v, want %v", calls[:len(wantStart)], wantStart)
	}
	if g.credits <= 100-2*50 || g.fuel < 60 {
		t.Fatalf("after %d turns: credits %d, fuel %d", turns, g.credits, g.fuel)
	}
	// Every trip goes belt → station → dock → sell, and mining never overflows the hold. get_status lists the hold
	// (ship.cargo), so no trip needs get_cargo.
	joined := strings.Join(calls, " ")
	for _, want := range []string{"dock sell", "get_status sell"} {
		if !strings.Contains(joined, want) {
			t.Errorf("calls never contain %q: %v", want, joined)
		}
	}
	if strings.Contains(joined, "get_cargo") {
		t.Errorf("get_cargo called although get_status lists the hold: %v", joined)
	}
	if strings.Count(joined, "sell") != sales || g.used() >= 70 && sales == 0 {
		t.Fatalf("inconsistent calls: %v", joined)
	}
}

func TestContract(t *testing.T) {
	contract.Run(t, newAutopilot(t, Config{}), llm.Request{
		Model: "autopilot", Tools: spaceMoltTools(),
		Messages: turn(step{"get_status", "", status("main_belt", false, 99, 10, 100)}),
	})
}
