package compose_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

func reasonsByID(res compose.Result) map[int64]compose.Item {
	out := make(map[int64]compose.Item)
	for _, it := range res.Manifest.Items {
		out[it.MemoryID] = it
	}
	return out
}

// Turn boundaries come from turn numbers: the current turn is the newest one, complete; earlier turns are compressed.
func TestTurnBoundary(t *testing.T) {
	tests := []struct {
		name    string
		build   func(h *hist) (current []int64)
		opener  bool
		decided compose.Decision
	}{
		{"direct opens the current turn", func(h *hist) []int64 {
			h.user(compose.SourceDirect, "old order")
			h.loop("mine", "{}", "ok")
			a := h.user(compose.SourceDirect, "new order")
			return []int64{a}
		}, true, compose.DecisionReset},
		{"broadcast opens the current turn", func(h *hist) []int64 {
			h.user(compose.SourceDirect, "old order")
			a := h.user(compose.SourceBroadcast, "all myses: regroup")
			h.calls(chat.ToolCall{ID: "c1", Name: "travel", Arguments: `{"to":"sol"}`})
			b := h.result("c1", "travel", "arrived")
			return []int64{a, b}
		}, true, compose.DecisionReset},
		{"nudge opens the current turn", func(h *hist) []int64 {
			h.user(compose.SourceDirect, "order")
			h.text("done")
			a := h.user(compose.SourceNudge, "Continue your mission.")
			return []int64{a}
		}, true, compose.DecisionNone},
		{"tool and llm rows stay in the turn", func(h *hist) []int64 {
			a := h.user(compose.SourceDirect, "order")
			h.loop("mine", "{}", "ok")
			b := h.text("done")
			return []int64{a, b}
		}, true, compose.DecisionReset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			want := tt.build(&h)
			res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
			items := reasonsByID(res)
			for _, id := range want {
				if items[id].Reason != compose.ReasonCurrentTurn {
					t.Errorf("memory %d: %+v, want current turn", id, items[id])
				}
			}
			if res.Encouragement.Decision != tt.decided {
				t.Errorf("decision %v, want %v", res.Encouragement.Decision, tt.decided)
			}
		})
	}
}

// Seed: login → get_status → get_notifications within a turn are all kept (the session id stays visible).
func TestLoginStatusNotificationsKeptWithinTurn(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "Check ship status")
	h.loop("login", `{"username":"mysis-7","password":"***"}`, `{"session_id":"abc123"}`)
	h.loop("get_status", `{"session_id":"abc123"}`, `{"credits":100,"location":"sol"}`)
	h.loop("get_notifications", `{"session_id":"abc123"}`, `[]`)
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
	if got := roles(res.Messages); got != "suatatat" {
		t.Fatalf("roles %s", got)
	}
	if !strings.Contains(res.Messages[3].Content, "abc123") {
		t.Fatal("login result lost")
	}
	golden(t, "login_status_notifications", res)
}

// Seed: no prompt in the window and no mission → a synthetic nudge where the prompt would be; not persisted.
func TestNudgeWhenNoPrompt(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "explore")
	for range 12 {
		h.loop("travel", `{"to":"next"}`, "arrived")
	}
	in := compose.Input{SystemPrompt: systemPrompt, Window: h.last(10), EncouragementCount: 2}
	res := mustCompose(t, in, compose.DefaultPolicy())
	if res.Messages[1].Role != chat.RoleUser || res.Messages[1].Content != compose.DefaultPolicy().Nudges.Firm {
		t.Fatalf("want the firm nudge first, got %+v", res.Messages[1])
	}
	if res.Nudge != nil || res.Encouragement.Decision != compose.DecisionNone || res.Manifest.NudgeLevel != compose.NudgeFirm {
		t.Fatalf("synthetic nudge must not be persisted nor counted: %+v %+v", res.Nudge, res.Encouragement)
	}
	if len(res.Manifest.Synthetic) != 1 || res.Manifest.Synthetic[0].Index != 1 {
		t.Fatalf("synthetic %+v", res.Manifest.Synthetic)
	}
	golden(t, "nudge_when_no_prompt", res)
}

// Seed: only historical turns (the runner begins a new autonomous turn). Below the high-water mark history is sent
// as it was (append-only, v2); compacted, it keeps its state and its latest complete loop with its prompt.
func TestOnlyHistoricalTurns(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "old question")
	h.loop("get_cargo", "{}", `{"iron_ore":3}`)
	h.loop("sell", `{"item":"iron_ore"}`, `{"credits":36}`)
	h.text("Sold.")
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, BeginTurn: true}, compose.DefaultPolicy())
	if got := roles(res.Messages); got != "suatatau" {
		t.Fatalf("roles %s\n%s", got, dump(res.Messages))
	}
	p := compose.DefaultPolicy()
	p.HighWater, p.CompactStep, p.CarryLimit, p.ReplyLimit = 1, 1, 0, 0
	p.Compaction = compose.CompactionWatermark // composition v2's marks
	small := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, BeginTurn: true}, p)
	// Below the compaction boundary only carried state and replies stay (what the memory service returns for rows
	// before the recent part): with nothing carried and no replies, the compacted history is the nudge alone; with
	// carry on, the latest loop's result is state and stays.
	if got := roles(small.Messages); got != "su" {
		t.Fatalf("compacted history without carry: %s\n%s", got, dump(small.Messages))
	}
	p.CarryLimit = 8
	carried := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, BeginTurn: true}, p)
	if out := sent(carried); !strings.Contains(out, `{"credits":36}`) || !strings.Contains(out, `{"iron_ore":3}`) {
		t.Fatalf("carried state lost:\n%s", dump(carried.Messages))
	}
	if res.Encouragement != (compose.Encouragement{Decision: compose.DecisionIncrement, Count: 1}) || res.Nudge.Level != compose.NudgeGentle {
		t.Fatalf("%+v %+v", res.Encouragement, res.Nudge)
	}
	golden(t, "only_historical_turns", res)
}

// Seed: a broadcast 25 rows back still drives the turn, through the mission, placed before the window's loops.
func TestBroadcastOutsideWindowDrivesTurn(t *testing.T) {
	var h hist
	bid := h.user(compose.SourceBroadcast, "Explore the universe!")
	b := h.rows[0]
	for range 12 {
		h.loop("travel", `{"to":"next"}`, "arrived")
	}
	h.loop("get_system", "{}", `{"id":"sol"}`)
	if len(h.rows) < 26 {
		t.Fatalf("history has %d rows", len(h.rows))
	}
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	in := compose.Input{SystemPrompt: systemPrompt, Window: h.last(20), EncouragementCount: 2,
		Mission: &compose.Mission{MemoryID: bid, Seq: b.Seq, Source: b.Source, Content: b.Content}}
	res := mustCompose(t, in, p)
	if res.Messages[1].Content != "Explore the universe!" || res.Manifest.Mission == nil {
		t.Fatalf("mission not first: %+v", res.Messages[1])
	}
	if res.Encouragement.Decision != compose.DecisionNone || res.Manifest.NudgeLevel != compose.NudgeNone {
		t.Fatalf("a mission means no synthetic nudge: %+v", res.Encouragement)
	}
	golden(t, "broadcast_outside_window", res)

	in.BeginTurn = true
	res = mustCompose(t, in, p)
	if res.Encouragement != (compose.Encouragement{Decision: compose.DecisionReset}) || res.Nudge == nil || res.Nudge.Level != compose.NudgeGentle {
		t.Fatalf("begin with mission: %+v %+v", res.Encouragement, res.Nudge)
	}
}

// Seed: a new mysis inherits the commander's swarm-wide mission (fallback with no memory row) instead of idling.
func TestNewMysisInheritsMission(t *testing.T) {
	m := &compose.Mission{Source: compose.SourceBroadcast, Content: "All myses: mine iron in Sol."}
	in := compose.Input{SystemPrompt: systemPrompt, Mission: m, BeginTurn: true, EncouragementCount: 3}
	res := mustCompose(t, in, compose.DefaultPolicy())
	if res.Encouragement.Decision != compose.DecisionReset || !strings.Contains(res.Messages[1].Content, "mine iron") {
		t.Fatalf("%+v\n%s", res.Encouragement, dump(res.Messages))
	}
	golden(t, "new_mysis_inherits_mission", res)

	p := compose.DefaultPolicy()
	p.DisableMissionFallback = true
	res = mustCompose(t, in, p)
	if res.Encouragement.Decision != compose.DecisionIdle || res.Messages != nil {
		t.Fatalf("fallback disabled: want idle, got %+v", res.Encouragement)
	}
}

// Seed: 15 get_ship results → only the newest keeps its body; every call is still answered.
func TestFifteenGetShipKeepsNewest(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "watch the hull")
	var last int64
	for i := range 15 {
		id := "ship_" + string(rune('a'+i))
		h.calls(chat.ToolCall{ID: id, Name: "get_ship", Arguments: "{}"})
		last = h.result(id, "get_ship", `{"hull":`+strings.Repeat("9", i+1)+`,"modules":"`+strings.Repeat("laser ", 40)+`"}`)
	}
	h.loop("mine", "{}", "ok")
	p := compose.DefaultPolicy()
	p.HighWater, p.LowWater, p.CompactStep = 200, 1, 4 // compact as far as possible: the boundary passes them all
	p.Compaction = compose.CompactionWatermark         // composition v2's marks
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, p)
	bodies, stubs := 0, 0
	for _, m := range res.Messages {
		if m.Role == chat.RoleTool && m.Name == "get_ship" {
			if strings.HasPrefix(m.Content, "[superseded") {
				stubs++
			} else {
				bodies++
			}
		}
	}
	// Below the compaction boundary a loop whose result is superseded there carries nothing: it is stubbed (the
	// latest history loop) or dropped whole, so only the newest get_ship is sent in full.
	dropped := 0
	for _, it := range res.Manifest.Items {
		if it.Disposition == compose.Dropped && it.Reason == compose.ReasonAllSuperseded {
			dropped++
		}
	}
	if bodies != 1 || stubs+dropped/2 != 14 || reasonsByID(res)[last].Disposition != compose.Included {
		t.Fatalf("bodies %d stubs %d dropped rows %d", bodies, stubs, dropped)
	}
	golden(t, "fifteen_get_ship", res)
}

// Seed truth table: nudges escalate gentle → firm → urgent, then the mysis goes idle; a real prompt resets.
func TestEscalationAndIdle(t *testing.T) {
	var h hist
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("get_status", "{}", "{}")
	h.text("Nothing to do.")
	p := compose.DefaultPolicy()
	want := []struct {
		level compose.NudgeLevel
		enc   compose.Encouragement
	}{
		{compose.NudgeGentle, compose.Encouragement{Decision: compose.DecisionIncrement, Count: 1}},
		{compose.NudgeFirm, compose.Encouragement{Decision: compose.DecisionIncrement, Count: 2}},
		{compose.NudgeUrgent, compose.Encouragement{Decision: compose.DecisionIncrement, Count: 3}},
	}
	for count, w := range want {
		res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, BeginTurn: true, EncouragementCount: count}, p)
		if res.Nudge == nil || res.Nudge.Level != w.level || res.Encouragement != w.enc {
			t.Fatalf("count %d: %+v %+v", count, res.Nudge, res.Encouragement)
		}
		if last := res.Messages[len(res.Messages)-1]; last.Content != p.Nudges.Text(w.level) {
			t.Fatalf("count %d: last message %q", count, last.Content)
		}
	}
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, BeginTurn: true, EncouragementCount: 3}, p)
	if res.Encouragement.Decision != compose.DecisionIdle || res.Messages != nil || res.Nudge != nil {
		t.Fatalf("count 3: %+v", res.Encouragement)
	}
	// A direct message that has not been answered wins over BeginTurn and resets the count.
	h.user(compose.SourceDirect, "wake up")
	res = mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, BeginTurn: true, EncouragementCount: 3}, p)
	if res.Encouragement != (compose.Encouragement{Decision: compose.DecisionReset}) || res.Nudge != nil {
		t.Fatalf("direct message: %+v", res.Encouragement)
	}
}

// The nudge returned for persisting gives the same messages once persisted (runner contract).
func TestNudgePersistenceIsIdentical(t *testing.T) {
	var h hist
	h.user(compose.SourceBroadcast, "mine")
	for range 30 {
		h.loop("mine", "{}", "ok")
	}
	h.text("Cargo full.")
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	for _, mission := range []*compose.Mission{nil, {MemoryID: 10, Seq: 1, Source: compose.SourceBroadcast, Content: "mine"}} {
		c := histgen.Case{Input: compose.Input{SystemPrompt: systemPrompt, Window: h.last(20), BeginTurn: true, Mission: mission}, Policy: p}
		if err := histgen.CheckDeterminism(c); err != nil {
			t.Fatal(err)
		}
	}
}

// LESSONS 1: a stored system prompt inside the window is never sent a second time.
func TestLesson1SystemPromptOnce(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "go")
	sid := h.add(compose.Memory{Role: chat.RoleSystem, Source: compose.SourceSystem, Content: "rebuilt system prompt"})
	h.loop("get_status", "{}", "{}")
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
	n := 0
	for _, m := range res.Messages {
		if m.Role == chat.RoleSystem {
			n++
		}
	}
	if n != 1 || res.Messages[0].Content != systemPrompt || reasonsByID(res)[sid].Reason != compose.ReasonSystemOnce {
		t.Fatalf("%d system messages\n%s", n, dump(res))
	}
}

// LESSONS 2: compaction of one result of a multi-call message never orphans the others.
func TestLesson2MultiCallCompaction(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "status")
	h.calls(chat.ToolCall{ID: "a", Name: "get_ship", Arguments: "{}"}, chat.ToolCall{ID: "b", Name: "get_cargo", Arguments: "{}"},
		chat.ToolCall{ID: "c", Name: "mine", Arguments: "{}"})
	ship := func(hull int) string {
		return fmt.Sprintf(`{"hull":%d,"modules":"%s"}`, hull, strings.Repeat("laser ", 40))
	}
	h.result("a", "get_ship", ship(1))
	h.result("b", "get_cargo", `{"iron":1}`)
	h.result("c", "mine", `ok`)
	h.loop("get_ship", "{}", ship(2)) // supersedes result a only
	h.loop("mine", "{}", "ok")
	p := compose.DefaultPolicy()
	p.HighWater, p.CompactStep = 100, 1
	p.Compaction = compose.CompactionWatermark // composition v2's marks
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, p)
	// Below the compaction boundary the multi-call message keeps only the call whose result is carried (get_cargo):
	// the superseded get_ship and mine calls go with their results, so nothing is orphaned.
	if err := chatvalid.Strict.Validate(res.Messages); err != nil {
		t.Fatal(err)
	}
	if got := roles(res.Messages); got != "suatatat" {
		t.Fatalf("roles %s\n%s", got, dump(res.Messages))
	}
	if calls := res.Messages[2].ToolCalls; len(calls) != 1 || calls[0].Name != "get_cargo" || res.Messages[3].Content != `{"iron":1}` {
		t.Fatalf("%s", dump(res.Messages))
	}
	golden(t, "lesson2_multi_call", res)
}

// LESSONS 3: an autonomous turn (opened by a stored nudge) keeps all its own earlier loops; a direct order far out of
// the window still reaches the model as the mission.
func TestLesson3NudgedTurnKeepsItsLoops(t *testing.T) {
	var h hist
	did := h.user(compose.SourceDirect, "Build an outpost in Sol.")
	d := h.rows[0]
	for range 20 {
		h.loop("mine", "{}", "ok")
	}
	h.text("ok")
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("login", "{}", `{"session_id":"s1"}`)
	h.loop("get_status", "{}", "{}")
	h.loop("travel", `{"to":"sol"}`, "arrived")
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.last(20),
		Mission: &compose.Mission{MemoryID: did, Seq: d.Seq, Source: d.Source, Content: d.Content}}, p)
	var names []string
	for _, m := range res.Messages {
		for _, tc := range m.ToolCalls {
			names = append(names, tc.Name)
		}
	}
	// v2: below the high-water mark the earlier turn's loops are sent as before (append-only); the nudged turn's own
	// loops all follow the mission.
	if !slices.Equal(names[len(names)-3:], []string{"login", "get_status", "travel"}) || names[0] != "mine" || !strings.Contains(res.Messages[1].Content, "outpost") {
		t.Fatalf("calls %v\n%s", names, dump(res.Messages))
	}
}

// LESSONS 4: with no mission the mysis does go idle, and a re-injected mission sits before the tool loop.
func TestLesson4MissionPlacementAndIdle(t *testing.T) {
	var h hist
	h.user(compose.SourceBroadcast, "Mine iron.")
	b := h.rows[0]
	for range 15 {
		h.loop("mine", "{}", "ok")
	}
	p := compose.DefaultPolicy()
	p.ScanWindow = 10
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.last(10),
		Mission: &compose.Mission{MemoryID: b.ID, Seq: b.Seq, Source: b.Source, Content: b.Content}}, p)
	firstAssistant := slices.IndexFunc(res.Messages, func(m chat.Message) bool { return m.Role == chat.RoleAssistant })
	missionAt := slices.IndexFunc(res.Messages, func(m chat.Message) bool { return m.Content == "Mine iron." })
	if missionAt < 0 || missionAt > firstAssistant || res.Messages[len(res.Messages)-1].Role != chat.RoleTool {
		t.Fatalf("mission at %d, first assistant at %d\n%s", missionAt, firstAssistant, dump(res.Messages))
	}
	res = mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.last(10), BeginTurn: true, EncouragementCount: 3}, p)
	if res.Encouragement.Decision != compose.DecisionIdle {
		t.Fatalf("no mission, count 3: %+v", res.Encouragement)
	}
}

// LESSONS 5: arguments with |, :, quotes and the old text markers round-trip byte for byte.
func TestLesson5ArgumentsRoundTrip(t *testing.T) {
	args := `{"text":"a|b:c \"quoted\" | [TOOL_CALLS]id:name:{}|x","n":1}`
	var h hist
	h.user(compose.SourceDirect, "log it")
	h.calls(chat.ToolCall{ID: "id|1:x", Name: "captains_log_add", Arguments: args})
	h.result("id|1:x", "captains_log_add", "saved")
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
	tc := res.Messages[2].ToolCalls[0]
	if tc.Arguments != args || tc.ID != "id|1:x" {
		t.Fatalf("%+v", tc)
	}
	b, _ := json.Marshal(res.Messages)
	var back []chat.Message
	if err := json.Unmarshal(b, &back); err != nil || back[2].ToolCalls[0].Arguments != args {
		t.Fatalf("JSON round trip: %v", err)
	}
}

// Broken histories are repaired: crash mid-loop, orphan, duplicate ids, a result stored after a broadcast.
func TestRepairs(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "go")
	h.calls(chat.ToolCall{ID: "x", Name: "mine", Arguments: "{}"}, chat.ToolCall{ID: "y", Name: "get_status", Arguments: "{}"})
	h.result("x", "mine", "ok") // y was never stored: crash
	h.result("ghost", "mine", "orphan")
	h.calls(chat.ToolCall{ID: "x", Name: "sell", Arguments: "not json"}) // duplicate id, bad arguments
	h.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceDirect, Content: "status?"})
	h.result("x", "sell", "sold") // separated from its call by a user message, and in the next turn
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
	kinds := map[string]bool{}
	for _, r := range res.Manifest.Repairs {
		kinds[r.Kind] = true
	}
	for _, k := range []string{"interrupted", "dropped-result", "bad-arguments", "moved-result"} {
		if !kinds[k] {
			t.Errorf("missing repair %q: %+v", k, res.Manifest.Repairs)
		}
	}
	golden(t, "repairs", res)
}

// Budget: the current turn alone is too big → early iterations are compressed, the login result pinned; and an
// impossible budget is an error, never an oversized request.
func TestBudgetCompressesEarlyIterations(t *testing.T) {
	big := `{"pois":[` + strings.Repeat(`{"id":"poi_1","name":"Belt","resources":["iron_ore"]},`, 60) + `{}]}`
	var h hist
	h.user(compose.SourceDirect, "survey")
	h.loop("login", "{}", `{"session_id":"keep-me"}`)
	for range 8 {
		h.loop("get_map", "{}", big)
	}
	h.loop("get_map", "{}", big)
	p := compose.DefaultPolicy()
	p.TokenBudget = 2500
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, p)
	if !strings.Contains(dump(res.Messages), "keep-me") {
		t.Fatal("pinned login result was compressed before the early iterations")
	}
	if last := res.Messages[len(res.Messages)-1]; last.Content != big {
		t.Fatalf("newest result must keep its body: %.80s", last.Content)
	}
	golden(t, "budget_early_iterations", res)

	p.TokenBudget = 256
	h2 := hist{}
	h2.user(compose.SourceDirect, strings.Repeat("a very long order ", 200))
	_, err := compose.Compose(compose.Input{SystemPrompt: systemPrompt, Window: h2.rows}, p)
	var be *compose.BudgetError
	if !errors.As(err, &be) || be.Need <= 256 {
		t.Fatalf("want BudgetError, got %v", err)
	}
}

// Oversized results are cut to the cap with a pointer to the memory that holds the whole result.
func TestOversizedResultTruncated(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "map")
	h.calls(chat.ToolCall{ID: "m", Name: "get_map", Arguments: "{}"})
	rid := h.result("m", "get_map", strings.Repeat(`{"system":"S1","links":["S2","S3"]},`, 400))
	p := compose.DefaultPolicy()
	p.ToolResultCap = 200
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, p)
	c := res.Messages[3].Content
	if !strings.Contains(c, "tokens omitted; full result is memory #") || !strings.Contains(c, "zoea_recall returns it") {
		t.Fatalf("%q", c[len(c)-120:])
	}
	if reasonsByID(res)[rid].Disposition != compose.Truncated {
		t.Fatal("manifest must say truncated")
	}
}

func TestInvalidInput(t *testing.T) {
	if _, err := compose.Compose(compose.Input{}, compose.DefaultPolicy()); !errors.Is(err, compose.ErrNoSystemPrompt) {
		t.Fatal(err)
	}
	p := compose.DefaultPolicy()
	p.TokenBudget = 10
	if _, err := compose.Compose(compose.Input{SystemPrompt: "s"}, p); !errors.Is(err, compose.ErrInvalidPolicy) {
		t.Fatal(err)
	}
}

// Every memory that is sent names the message carrying it, so a preview can say which message is there and why.
func TestItemsNameTheirMessage(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "old order")
	h.loop("mine", "{}", "ok")
	h.text("mined")
	order := h.user(compose.SourceDirect, "new order")
	h.calls(chat.ToolCall{ID: "c1", Name: "travel", Arguments: `{"to":"sol"}`})
	res := h.result("c1", "travel", "arrived")
	out := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
	byID := map[int64]compose.Item{}
	for _, it := range out.Manifest.Items {
		byID[it.MemoryID] = it
		if it.Disposition == compose.Dropped {
			continue
		}
		if it.MessageIndex < 1 || it.MessageIndex >= len(out.Messages) {
			t.Fatalf("item %+v: message index out of range (%d messages)", it, len(out.Messages))
		}
	}
	m := out.Messages[byID[res].MessageIndex]
	if m.Role != chat.RoleTool || m.ToolCallID != "c1" || m.Content != "arrived" {
		t.Errorf("result names message %d = %+v", byID[res].MessageIndex, m)
	}
	if m := out.Messages[byID[order].MessageIndex]; m.Role != chat.RoleUser || m.Content != "new order" {
		t.Errorf("order names message %+v", m)
	}
}

// A result the memory service already cut (its marker at the end, pointing at the memory) composes like any other:
// the composer's own cap still cuts it with its own pointer; a short one passes through with the service's marker
// intact, so the model learns either way where the whole result is.
func TestResultCutByMemoryService(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "map")
	h.calls(chat.ToolCall{ID: "m", Name: "get_map", Arguments: "{}"})
	body := strings.Repeat(`{"system":"S1","links":["S2","S3"]},`, 2000)[:64<<10]
	rid := h.result("m", "get_map", body+fmt.Sprintf("…[cut: %d bytes more; full result is memory #%d, search for it]", 8<<20, h.id+10))
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, compose.DefaultPolicy())
	c := res.Messages[3].Content
	if !strings.Contains(c, fmt.Sprintf("full result is memory #%d", rid)) || !strings.Contains(c, "tokens omitted") ||
		reasonsByID(res)[rid].Disposition != compose.Truncated {
		t.Fatalf("composer cap on a cut result: %q", c[max(0, len(c)-160):])
	}

	var s hist
	s.user(compose.SourceDirect, "map")
	s.calls(chat.ToolCall{ID: "m", Name: "get_map", Arguments: "{}"})
	marker := fmt.Sprintf("…[cut: 5000 bytes more; full result is memory #%d, search for it]", s.id+10)
	sid := s.result("m", "get_map", body[:1024]+marker)
	res = mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: s.rows}, compose.DefaultPolicy())
	if c := res.Messages[3].Content; !strings.HasSuffix(c, marker) || reasonsByID(res)[sid].Disposition == compose.Truncated {
		t.Fatalf("short cut result: %q", c[max(0, len(c)-160):])
	}
}
