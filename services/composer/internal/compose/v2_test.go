package compose_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// v2 composes what production composes for a whole history h: the memory service's v2 window (emulated by
// histgen.ComposeWindow), the mission given, the objective at the mission's seq.
func v2(t *testing.T, h *hist, mission *compose.Mission, p compose.Policy) compose.Result {
	t.Helper()
	var obj int64
	if mission != nil {
		obj = mission.Seq
	}
	w := histgen.ComposeWindow(h.rows, p, obj)
	return mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Mission: mission, Window: w.Rows,
		RecentStartSeq: w.RecentStartSeq, ObjectiveSeq: w.ObjectiveSeq, TurnTruncated: w.TurnTruncated}, p)
}

func missionOf(h *hist, id int64) *compose.Mission {
	for _, m := range h.rows {
		if m.ID == id {
			return &compose.Mission{MemoryID: m.ID, Seq: m.Seq, Source: m.Source, Content: m.Content}
		}
	}
	return nil
}

// sent is every message's text and tool call arguments.
func sent(res compose.Result) string {
	var b strings.Builder
	for _, m := range res.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Arguments)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Issue case 1: one turn of 26 loops whose first loop is get_status; at the default policy the request still
// carries that get_status result (v1 lost it to the 50-row scan window).
func TestLongTurnKeepsItsFirstState(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: find the best iron price in the sector.")
	h.loop("get_status", "{}", `{"credits":1234,"location":"sol_station","fuel":88,"cargo_used":12}`)
	for i := range 25 {
		h.loop("view_market", fmt.Sprintf(`{"station":"st_%d"}`, i), fmt.Sprintf(`{"iron_ore":{"buy":%d,"sell":%d}}`, 10+i, 12+i))
	}
	p := compose.DefaultPolicy()
	res := v2(t, &h, missionOf(&h, mid), p)
	if !strings.Contains(sent(res), `"credits":1234`) {
		t.Fatalf("the turn's first get_status result is missing\n%s", dump(res.Messages))
	}
	for i := range 25 {
		if !strings.Contains(sent(res), fmt.Sprintf(`"buy":%d,`, 10+i)) {
			t.Fatalf("view_market of st_%d is missing", i)
		}
	}
	// The same turn as a v1 window (the last 50 rows) must not crash or count the cut as a repair.
	v1 := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.last(50), Mission: missionOf(&h, mid)}, p)
	if len(v1.Manifest.Repairs) != 0 {
		t.Fatalf("a v1 window cut at a loop boundary is no repair: %+v", v1.Manifest.Repairs)
	}
}

// Issue case 2: token_budget 1500; an 809-token view_market result, an "ok" undock, a newer view_market with the
// same arguments → the older view_market is stubbed; "ok" is never replaced by a longer stub.
func TestBudgetStubsSupersededNotShortResults(t *testing.T) {
	tok, err := o200k.Load()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString(`{"station":"sol_station","orders":[`)
	for i := 0; tok.Count(sb.String()) < 790; i++ {
		fmt.Fprintf(&sb, `{"item":"ore_%d","buy":%d,"sell":%d},`, i, 10+i, 12+i)
	}
	sb.WriteString(`{}]}`)
	market := sb.String()
	if n := tok.Count(market); n < 790 || n > 830 {
		t.Fatalf("market result has %d tokens", n)
	}
	var h hist
	h.user(compose.SourceDirect, "Sell the iron where it pays best.")
	h.loop("view_market", `{"station":"sol_station"}`, market)
	undock := h.seq + 2
	h.loop("undock", "{}", "ok")
	h.loop("view_market", `{ "station": "sol_station" }`, strings.Replace(market, `"buy":10,`, `"buy":11,`, 1))
	p := compose.DefaultPolicy()
	p.TokenBudget = 1500
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, p)
	items := reasonsByID(res)
	older, newer := h.rows[2], h.rows[6]
	// Superseded: stubbed by the budget, or — once the compaction boundary passes it — dropped with its call.
	if it := items[older.ID]; !(it.Disposition == compose.Stubbed && it.Reason == compose.ReasonBudgetSuperseded) &&
		!(it.Disposition == compose.Dropped && it.Reason == compose.ReasonAllSuperseded) {
		t.Fatalf("older view_market: %+v", it)
	}
	if it := items[newer.ID]; it.Disposition != compose.Included {
		t.Fatalf("newer view_market: %+v", it)
	}
	for _, m := range res.Messages {
		if m.Role == chat.RoleTool && m.Name == "undock" && m.Content != "ok" {
			t.Fatalf("undock result became %q", m.Content)
		}
	}
	if it := items[h.rows[undock-1].ID]; it.Disposition != compose.Included {
		t.Fatalf("undock: %+v", it)
	}
}

// State gathered in earlier turns (split by text replies and nudges, as Claude and GLM play) is carried over: the
// newest result of every distinct call since the objective, with the call that made it.
func TestCarryOverAcrossTurnsAndTextReplies(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: trade iron between Sol and Vega.")
	h.loop("get_status", "{}", `{"credits":100,"location":"sol"}`)
	h.loop("view_market", `{"station":"sol"}`, `{"iron":{"buy":10}}`)
	h.loop("get_cargo", "{}", `{"iron_ore":30}`)
	h.text("Iron is cheap at Sol: buy 30 here.")
	for turn := range 12 {
		h.user(compose.SourceNudge, "Continue your mission.")
		h.loop("travel", fmt.Sprintf(`{"to":"waypoint_%d"}`, turn), "arrived")
		h.loop("mine", "{}", `{"mined":3}`)
		h.text(fmt.Sprintf("Leg %d done.", turn))
	}
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("get_status", "{}", `{"credits":150,"location":"vega"}`)
	h.loop("mine", "{}", `{"mined":1}`) // the boundary may pass the newer get_status, so the older one is superseded there
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	p.HighWater = 400                          // force the compaction boundary past the earlier turns
	p.Compaction = compose.CompactionWatermark // composition v2's marks
	p.CompactStep = 4
	res := v2(t, &h, missionOf(&h, mid), p)
	out := sent(res)
	for _, want := range []string{`{"iron":{"buy":10}}`, `{"iron_ore":30}`, `{"credits":150,"location":"vega"}`, "Commander: trade iron"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s\n%s", want, dump(res.Messages))
		}
	}
	if strings.Contains(out, `{"credits":100,"location":"sol"}`) {
		t.Errorf("the superseded get_status of the first turn is still sent in full")
	}
	// Every distinct travel destination is its own call: the newest of each is carried (within CarryLimit).
	for turn := range 12 {
		if !strings.Contains(out, fmt.Sprintf(`waypoint_%d`, turn)) {
			t.Errorf("travel to waypoint_%d not carried", turn)
		}
	}
	if res.Manifest.Tokens.Carried == 0 || res.Manifest.Boundary == 0 {
		t.Errorf("manifest: carried %d tokens, boundary %d", res.Manifest.Tokens.Carried, res.Manifest.Boundary)
	}
	// A carried result is listed with its reason.
	items := reasonsByID(res)
	if it := items[h.rows[6].ID]; it.Reason != compose.ReasonCarried || it.Disposition != compose.Included {
		t.Errorf("view_market of turn 1: %+v", it)
	}
}

// Under a tight carry_tokens, carried state goes where it buys the most: the newest result of every tool called in
// the compaction's newest turn first, then the other tools' newest results smallest first, so one large earlier
// result cannot crowd out several small ones; what does not fit is dropped with the reason saying so.
func TestCarryRanksTurnThenSmallest(t *testing.T) {
	var h hist
	mid := tradingStart(&h)
	big := strings.Repeat(`{"item":"iron_ore","buy":10,"sell":12},`, 40) // ~600 tokens, newest of the earlier turn
	h.loop("view_market", `{"station":"sol"}`, "["+big+"]")
	marketID := h.rows[len(h.rows)-1].ID
	h.text("Bought iron at Sol.")
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("scan_belt", "{}", `[{"asteroid":"a","ore":"iron","yield":3}]`)
	scanID := h.rows[len(h.rows)-1].ID
	for i := range 8 {
		h.loop("mine", "{}", fmt.Sprintf(`{"mined":%d}`, i))
	}
	p := compose.DefaultPolicy()
	p.ScanWindow = 20
	p.HighWater = 300                          // force the compaction boundary past everything but the newest loop
	p.Compaction = compose.CompactionWatermark // composition v2's marks
	p.LowWater = 300
	p.CompactStep = 1
	// Room for the scan, the market and one small result — or for the scan and all three small ones. Newest first
	// would spend it on the market; every tool's state counts the same, so the small ones go first.
	p.CarryTokens = 660
	res := v2(t, &h, missionOf(&h, mid), p)
	carriesSmallNotMarket(t, res, marketID)
	if it := reasonsByID(res)[scanID]; it.Disposition != compose.Included {
		t.Errorf("scan_belt of the newest turn: %+v, want included", it)
	}
	if err := chatvalid.Strict.Validate(res.Messages); err != nil {
		t.Fatal(err)
	}
}

// tradingStart begins the trading history of TestCarryRanksTurnThenSmallest and
// TestPricedCarryRanksEveryToolSmallestFirst: the commander's order and three small results (cargo, skills, ship). It
// returns the order's memory id.
func tradingStart(h *hist) int64 {
	mid := h.user(compose.SourceBroadcast, "Commander: trade iron between Sol and Vega.")
	h.loop("get_cargo", "{}", `{"iron_ore":30}`)
	h.loop("get_skills", "{}", `{"mining":3,"trading":1}`)
	h.loop("get_ship", "{}", `{"hull":"shuttle","slots":2}`)
	return mid
}

// carriesSmallNotMarket fails t unless res carries the cargo, skills, ship and belt scan results of the trading
// history TestCarryRanksTurnThenSmallest and TestPricedCarryRanksEveryToolSmallestFirst build, and drops its market
// listing (marketID) beyond the carry limit.
func carriesSmallNotMarket(t *testing.T, res compose.Result, marketID int64) {
	t.Helper()
	out := sent(res)
	for _, want := range []string{`{"iron_ore":30}`, `{"mining":3,"trading":1}`, `{"hull":"shuttle","slots":2}`, `"yield":3`} {
		if !strings.Contains(out, want) {
			t.Errorf("not carried: %s\n%s", want, dump(res.Manifest.Items))
		}
	}
	if it := reasonsByID(res)[marketID]; it.Disposition != compose.Dropped || it.Reason != compose.ReasonOverCarryLimit {
		t.Errorf("view_market: %+v, want dropped beyond the carry limit", it)
	}
}

// Carried state takes at most half the room the budget leaves the messages once the system prompt and the tool
// schemas are counted: with large schemas a request still grows as a pure extension between compactions instead of
// compacting on every request. At the default budget with small schemas the bound is CarryTokens itself. A young
// objective (priced compaction, up to YoungObjectiveRows seqs) may carry 1.5 times that, at most 65% of the room; one
// past LongObjectiveRows 45% of it.
func TestCarryBoundFollowsRoom(t *testing.T) {
	schema := compose.Tool{Name: "scan_system", Description: strings.Repeat("Scans a system and lists its planets. ", 40),
		Parameters: `{"type":"object","properties":{"system":{"type":"string"}}}`}
	carried := func(loops int, tools []compose.Tool, budget int) (carried, room int) {
		var h hist
		mid := h.user(compose.SourceBroadcast, "Commander: map the sector.")
		for i := range loops {
			h.loop("scan_system", fmt.Sprintf(`{"system":"s%d"}`, i), strings.Repeat(fmt.Sprintf("planet p%d ", i), 120))
		}
		h.user(compose.SourceNudge, "Continue your mission.")
		h.loop("mine", "{}", `{"mined":1}`)
		p := compose.DefaultPolicy()
		p.TokenBudget = budget
		w := histgen.ComposeWindow(h.rows, p, h.rows[0].Seq)
		res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Mission: missionOf(&h, mid), Window: w.Rows,
			RecentStartSeq: w.RecentStartSeq, ObjectiveSeq: w.ObjectiveSeq, Tools: tools}, p)
		if err := chatvalid.Strict.Validate(res.Messages); err != nil {
			t.Fatal(err)
		}
		return res.Manifest.Tokens.Carried, budget - res.Manifest.Tokens.Tools - res.Manifest.Tokens.System
	}
	tools := slices.Repeat([]compose.Tool{schema}, 12)
	for i := range tools {
		tools[i].Name = fmt.Sprintf("tool_%d", i)
	}
	// 70 loops: past YoungObjectiveRows, short of LongObjectiveRows.
	if c, _ := carried(70, nil, 8192); c < 2000 || c > 2500 {
		t.Errorf("default budget, no schemas: %d tokens carried, want up to CarryTokens (2500)", c)
	}
	c, room := carried(70, tools, 8192)
	if room > 5000 {
		t.Fatalf("the schemas leave %d tokens: too many for this test", room)
	}
	if c > room/2 || c < room/4 {
		t.Errorf("large schemas: %d tokens carried with %d tokens of room, want at most half of it", c, room)
	}
	// 30 loops: a young objective.
	if c, room := carried(30, nil, 8192); c <= 2500 || c > 3750 || float64(c) > 0.65*float64(room) {
		t.Errorf("young objective, no schemas: %d tokens carried with %d tokens of room, want more than CarryTokens (2500), up to 1.5 times it and 65%% of the room", c, room)
	}
	if c, room := carried(30, tools, 8192); c <= room/2 || float64(c) > 0.65*float64(room) {
		t.Errorf("young objective, large schemas: %d tokens carried with %d tokens of room, want more than half of it, at most 65%%", c, room)
	}
	// 110 loops: past LongObjectiveRows, a long objective carries the lean share (45%) of the bound.
	if c, _ := carried(110, nil, 8192); c > 1125 || c < 1125/2 {
		t.Errorf("long objective, no schemas: %d tokens carried, want up to 45%% of CarryTokens (1125)", c)
	}
}

// Earlier turns' final replies are kept (newest ReplyLimit, each capped); reasoning is never sent.
func TestEarlierConclusionsKept(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceDirect, "Commander: scout three systems and report.")
	long := strings.Repeat("The northern route is blocked by pirates near Vega; ", 60)
	var replies []int64
	for i := range 5 {
		if i > 0 {
			h.user(compose.SourceNudge, "Continue your mission.")
		}
		h.loop("scan", fmt.Sprintf(`{"system":"s%d"}`, i), "scanned")
		content := fmt.Sprintf("Conclusion %d: system s%d has iron.", i, i)
		if i == 3 {
			content = long
		}
		replies = append(replies, h.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: content, Reasoning: "secret reasoning"}))
	}
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("get_status", "{}", "{}")
	p := compose.DefaultPolicy()
	p.ScanWindow = 6
	p.HighWater = 200
	p.Compaction = compose.CompactionWatermark // composition v2's marks
	p.CompactStep = 2
	res := v2(t, &h, missionOf(&h, mid), p)
	out := sent(res)
	if strings.Contains(out, "secret reasoning") {
		t.Fatal("reasoning was sent")
	}
	items := reasonsByID(res)
	for i, id := range replies {
		it := items[id]
		switch {
		case i < 2: // beyond ReplyLimit 3: not in the window, or dropped
			if it.Disposition != compose.Dropped && it.Disposition != "" {
				t.Errorf("reply %d: %+v", i, it)
			}
		case i == 3:
			if it.Disposition != compose.Truncated || it.Reason != compose.ReasonReplyCapped || it.Tokens > p.ReplyCap+8 {
				t.Errorf("long reply: %+v", it)
			}
		default:
			if it.Disposition != compose.Included || !strings.Contains(out, fmt.Sprintf("Conclusion %d", i)) {
				t.Errorf("reply %d: %+v", i, it)
			}
		}
	}
}

// Tool definitions count against the budget, as the provider receives them.
func TestToolsCountedInBudget(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "survey")
	for i := range 12 {
		h.loop("get_system", fmt.Sprintf(`{"id":"s%d"}`, i), strings.Repeat(fmt.Sprintf(`{"poi":"p%d","kind":"belt"},`, i), 40))
	}
	var tools []compose.Tool
	for i := range 30 {
		tools = append(tools, compose.Tool{Name: fmt.Sprintf("tool_%d", i), Description: strings.Repeat("Does a SpaceMolt thing. ", 6),
			Parameters: `{"type":"object","properties":{"target":{"type":"string","description":"where"}},"required":["target"]}`})
	}
	p := compose.DefaultPolicy()
	p.TokenBudget = 4000
	p.CompactStep = 1                          // fine steps, so the difference the tools make shows in a history this short
	p.Compaction = compose.CompactionWatermark // v2's marks follow the room the tools leave
	without := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows}, p)
	with := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows, Tools: tools}, p)
	tok, err := o200k.Load()
	if err != nil {
		t.Fatal(err)
	}
	if want := histgen.ToolTokens(tok, tools); with.Manifest.Tokens.Tools != want || want < 1000 {
		t.Fatalf("tools %d tokens, recount %d", with.Manifest.Tokens.Tools, want)
	}
	if with.Manifest.Tokens.Total > p.TokenBudget || with.Manifest.Tokens.Total != histgen.RequestTokens(tok, with.Messages)+with.Manifest.Tokens.Tools {
		t.Fatalf("total %d with tools %d", with.Manifest.Tokens.Total, with.Manifest.Tokens.Tools)
	}
	if histgen.RequestTokens(tok, with.Messages) >= histgen.RequestTokens(tok, without.Messages) {
		t.Fatal("the tools' tokens did not make room in the messages")
	}
}

// Over budget, tokens are taken where they are worth least, one stage after another: superseded results, loops of
// superseded results, text, older state, the current turn's early loops, pinned results, the newest loop.
func TestBudgetOrderOfSacrifice(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: mine and sell.")
	h.loop("login", `{"username":"m7"}`, `{"session_id":"s-keep-me","welcome":"`+strings.Repeat("w", 300)+`"}`)
	body := func(tag string) string { return `{"tag":"` + tag + `","data":"` + strings.Repeat(tag+" ", 120) + `"}` }
	h.loop("view_market", `{"station":"a"}`, body("marketA1"))
	h.loop("get_cargo", "{}", body("cargo1"))
	h.text("Earlier conclusion: " + strings.Repeat("sell at a. ", 30))
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("view_market", `{"station":"b"}`, body("marketB"))
	h.loop("get_cargo", "{}", body("cargo2"))
	h.loop("get_skills", "{}", body("skills1")) // the newest of its tool, from an earlier turn
	h.text("Second conclusion: " + strings.Repeat("b is worse. ", 30))
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("view_market", `{"station":"a"}`, body("marketA2"))
	h.loop("mine", "{}", body("mine1"))
	h.loop("get_cargo", "{}", body("cargo3"))
	h.loop("mine", "{}", body("mine2"))

	stage := map[compose.Reason]int{
		compose.ReasonBudgetSuperseded: 1, compose.ReasonBudgetSupersededLoop: 2, compose.ReasonBudgetText: 3,
		compose.ReasonBudgetOtherCall: 4, compose.ReasonBudgetOlderState: 5, compose.ReasonBudgetTurnLoop: 6,
		compose.ReasonBudgetPinned: 7,
		// The compaction boundary takes the first two stages' share when it moves: superseded results and loops
		// that carry nothing below it go first there too.
		compose.ReasonSuperseded: 1, compose.ReasonAllSuperseded: 2,
	}
	p := reducerOnlyPolicy()
	first := map[int]int{}
	for budget := 6000; budget >= 700; budget -= 50 {
		p.TokenBudget = budget
		res, err := compose.Compose(compose.Input{SystemPrompt: systemPrompt, Mission: missionOf(&h, mid), Window: h.rows}, p)
		if err != nil {
			break
		}
		if err := chatvalid.Strict.Validate(res.Messages); err != nil || res.Manifest.Tokens.Total > budget {
			t.Fatalf("budget %d: %v, %d tokens", budget, err, res.Manifest.Tokens.Total)
		}
		maxStage := 0
		for _, it := range res.Manifest.Items {
			if s := stage[it.Reason]; s > 0 {
				maxStage = max(maxStage, s)
				if _, ok := first[s]; !ok {
					first[s] = budget
				}
			}
		}
		out := sent(res)
		if !strings.Contains(out, "Commander: mine and sell.") || !strings.Contains(out, "mine2 mine2") {
			t.Fatalf("budget %d: the mission or the newest loop was sacrificed", budget)
		}
		if maxStage < 7 && !strings.Contains(out, "s-keep-me") {
			t.Fatalf("budget %d: pinned login lost before stage 7", budget)
		}
		// The newest result of each tool outlives the older calls of a tool (marketB: view_market of another
		// station, older than marketA2), which outlive text.
		if maxStage < 4 && !strings.Contains(out, "marketB marketB") {
			t.Fatalf("budget %d: an older call's result lost at stage %d\n%s", budget, maxStage, dump(res.Manifest.Items))
		}
		if maxStage < 5 && !(strings.Contains(out, "cargo3 cargo3") && strings.Contains(out, "marketA2 marketA2") &&
			strings.Contains(out, "skills1 skills1")) {
			t.Fatalf("budget %d: newest state lost at stage %d\n%s", budget, maxStage, dump(res.Manifest.Items))
		}
	}
	// Stage 1 (a superseded result stubbed in a loop that stays) needs a loop with another result worth keeping:
	// here every loop has one call, so the boundary drops superseded loops whole (stage 2).
	for s := 2; s <= 6; s++ {
		if _, ok := first[s]; !ok {
			t.Errorf("stage %d never applied (first appearances %v)", s, first)
		}
	}
	for s := 2; s <= 7; s++ {
		if a, b := first[s-1], first[s]; a != 0 && b != 0 && b > a {
			t.Errorf("stage %d began at budget %d, before stage %d (%d)", s, b, s-1, a)
		}
	}
}

// A window whose first rows are results of a call just outside it (a v1 window cut mid-loop) is no repair.
func TestCutLoopAtWindowStartIsNoRepair(t *testing.T) {
	var h hist
	h.user(compose.SourceDirect, "go")
	h.calls(chat.ToolCall{ID: "a", Name: "mine", Arguments: "{}"}, chat.ToolCall{ID: "b", Name: "get_cargo", Arguments: "{}"})
	h.result("a", "mine", "ok")
	rid := h.result("b", "get_cargo", `{"iron":3}`)
	h.loop("sell", "{}", "sold")
	res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Window: h.rows[3:]}, compose.DefaultPolicy())
	if len(res.Manifest.Repairs) != 0 {
		t.Fatalf("repairs %+v", res.Manifest.Repairs)
	}
	if it := reasonsByID(res)[rid]; it.Reason != compose.ReasonCallOutsideWindow || it.Disposition != compose.Dropped {
		t.Fatalf("%+v", it)
	}
}

// A carried assistant memory whose other results were not carried sends only the calls it can answer.
func TestCarriedCallWithoutItsSiblings(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: mine.")
	h.calls(chat.ToolCall{ID: "a", Name: "get_cargo", Arguments: "{}"}, chat.ToolCall{ID: "b", Name: "get_status", Arguments: "{}"})
	h.result("a", "get_cargo", `{"iron":3}`)
	h.result("b", "get_status", `{"fuel":1}`)
	for range 30 {
		h.loop("get_status", "{}", `{"fuel":2}`)
	}
	p := compose.DefaultPolicy()
	p.ScanWindow = 10
	res := v2(t, &h, missionOf(&h, mid), p)
	if len(res.Manifest.Repairs) != 0 || len(res.Manifest.Synthetic) > 1 {
		t.Fatalf("repairs %+v synthetic %+v", res.Manifest.Repairs, res.Manifest.Synthetic)
	}
	if !strings.Contains(sent(res), `{"iron":3}`) {
		t.Fatalf("carried get_cargo missing\n%s", dump(res.Messages))
	}
}

// Prompt-cache stability: composing every request of a long generated session (v2 windows), most requests are a
// pure message-by-message extension of the previous one; the rest are the compaction steps.
func TestCacheStability(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		s := histgen.Play(histgen.PlayOptions{Calls: 400, Seed: seed, TextReplies: seed != 1})
		p := compose.DefaultPolicy()
		var prev []chat.Message
		var boundary, compactSeq int64 // the previous request's, as the composer remembers them per mysis
		var prevBoundary int64
		stayBreaks := 0 // requests that are no extension although the boundary stayed
		var ext, total, maxTokens int
		var share float64
		for _, at := range s.Requests {
			w := histgen.ComposeWindowFrom(s.Rows[:at], p, s.ObjectiveAt(at), boundary)
			res := mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Mission: s.MissionAt(at), Window: w.Rows,
				RecentStartSeq: w.RecentStartSeq, ObjectiveSeq: w.ObjectiveSeq, Tools: s.Tools, PrevBoundary: boundary, PrevCompactSeq: compactSeq}, p)
			prevBoundary = boundary
			boundary, compactSeq = res.Manifest.Boundary, res.Manifest.CompactSeq
			maxTokens = max(maxTokens, res.Manifest.Tokens.Total)
			if prev != nil {
				total++
				extends := len(res.Messages) >= len(prev) && equalMessages(prev, res.Messages[:len(prev)])
				if extends {
					ext++
				} else if res.Manifest.Boundary == prevBoundary {
					stayBreaks++
				}
				d := 0
				for d < len(prev) && d < len(res.Messages) && equalMessages(prev[d:d+1], res.Messages[d:d+1]) {
					d++
				}
				share += float64(d) / float64(len(res.Messages))
			}
			prev = res.Messages
		}
		ratio := float64(ext) / float64(total)
		t.Logf("seed %d: %d of %d requests extend the previous one (%.1f%%); mean shared message prefix %.1f%%; max %d tokens; %d breaks with the boundary staying",
			seed, ext, total, 100*ratio, 100*share/float64(total), maxTokens, stayBreaks)
		// Floors measured on 2026-11-24 with hysteresis (84%, 86%, 88%; 66%, 59%, 56% before), with a margin: a
		// regression guard. Between two moves of the boundary a request extends the previous one (COMPOSITION.md,
		// rule 10); the few exceptions are the budget reducer at work.
		if ratio < 0.75 {
			t.Errorf("seed %d: only %.1f%% of requests are pure extensions (floor 75%%)", seed, 100*ratio)
		}
		if stayBreaks > total/50 {
			t.Errorf("seed %d: %d requests are no extension although the boundary stayed (at most %d)", seed, stayBreaks, total/50)
		}
	}
}

func equalMessages(a, b []chat.Message) bool {
	return slices.EqualFunc(a, b, func(x, y chat.Message) bool {
		return x.Role == y.Role && x.Content == y.Content && x.ToolCallID == y.ToolCallID && x.Name == y.Name &&
			slices.Equal(x.ToolCalls, y.ToolCalls)
	})
}

// Determinism holds for v2 windows too (byte-identical output, nudge persistence).
func TestDeterminismV2(t *testing.T) {
	s := histgen.Play(histgen.PlayOptions{Calls: 150, Seed: 9, TextReplies: true})
	p := compose.DefaultPolicy()
	for i, at := range s.Requests {
		if i%7 != 0 {
			continue
		}
		w := histgen.ComposeWindow(s.Rows[:at], p, s.ObjectiveAt(at))
		c := histgen.Case{Input: compose.Input{SystemPrompt: systemPrompt, Mission: s.MissionAt(at), Window: w.Rows,
			RecentStartSeq: w.RecentStartSeq, ObjectiveSeq: w.ObjectiveSeq, Tools: s.Tools, BeginTurn: i%2 == 0}, Policy: p}
		if err := histgen.CheckDeterminism(c); err != nil {
			t.Fatal(err)
		}
	}
}

// The distinct-call key ignores key order, insignificant whitespace and number spelling; snapshot tools are keyed by
// name alone. Empty arguments are not {}: memory keys them apart (its key for a result whose call it cannot find),
// and the composer keys calls as memory does (TestCallKeyAgreesWithMemory).
func TestCallKey(t *testing.T) {
	p := compose.DefaultPolicy()
	same := [][2]string{
		{`{"a":1,"b":"x"}`, `{ "b": "x", "a": 1 }`},
		{`{"station":"sol"}`, ` {"station":"sol"} `},
		{`{"n":{"y":2,"x":[1, 2]}}`, `{"n":{"x":[1,2],"y":2}}`},
		{`{"qty":1e2}`, `{"qty":100}`}, // numbers as memory's key writes them (libs/callkey)
	}
	for _, c := range same {
		if p.CallKey("view_market", c[0]) != p.CallKey("view_market", c[1]) {
			t.Errorf("%s and %s differ", c[0], c[1])
		}
	}
	if p.CallKey("view_market", `{"station":"sol"}`) == p.CallKey("view_market", `{"station":"vega"}`) ||
		p.CallKey("view_market", `{}`) == p.CallKey("catalog", `{}`) {
		t.Error("different calls share a key")
	}
	if p.CallKey("get_status", `{"verbose":true}`) != p.CallKey("get_status", `{}`) {
		t.Error("a snapshot tool is keyed by its name")
	}
}

// Soak case 3·1000003+14 (budget 2299, compaction grid 2) once made the reducer apply a stub that its byte-length
// shortcut then refused, forever: a step that changes nothing must hand over to the next stage.
func TestReducerAlwaysEnds(t *testing.T) {
	tok, err := o200k.Load()
	if err != nil {
		t.Fatal(err)
	}
	gen := histgen.NewGenerator()
	for _, i := range []uint64{14, 15, 16} {
		c := gen.Case(histgen.NewRand(3*1_000_003 + i))
		if out, err := histgen.Check(c, tok); out == histgen.Invalid || out == histgen.OverBudget {
			t.Fatalf("case %d: outcome %d: %v", i, out, err)
		}
	}
}

// reducerOnlyPolicy leaves every compression to the budget reducer, one grid cell per row, so what each stage does
// shows at every budget of a shrinking history.
func reducerOnlyPolicy() compose.Policy {
	p := compose.DefaultPolicy()
	p.HighWater = 0                            // the budget alone: every compression here is the reducer's
	p.Compaction = compose.CompactionWatermark // composition v2's marks
	p.CarryTokens = 0                          // no carry bound either (it would take half the shrinking room: TestCarryBoundFollowsRoom)
	p.CompactStep = 1                          // one grid cell per row: the order shows at every budget
	return p
}

// A tool result whose loop the budget drops is named where the loop was (tool and memory id: zoea_recall returns
// it), at every budget of the order-of-sacrifice history; the note is counted, so the request stays valid and within
// the budget. Before, a dropped loop left nothing: a fact only it held was gone from the model's view for good.
func TestBudgetDroppedResultsAreNamed(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: mine and sell.")
	body := func(tag string) string { return `{"tag":"` + tag + `","data":"` + strings.Repeat(tag+" ", 120) + `"}` }
	h.loop("view_market", `{"station":"a"}`, body("marketA1"))
	h.loop("get_cargo", "{}", body("cargo1"))
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("view_market", `{"station":"b"}`, body("marketB"))
	h.loop("get_skills", "{}", body("skills1"))
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("view_market", `{"station":"c"}`, body("marketC"))
	h.loop("mine", "{}", body("mine1"))
	h.loop("get_cargo", "{}", body("cargo3"))
	h.loop("mine", "{}", body("mine2"))
	p := reducerOnlyPolicy()
	named := 0
	for budget := 5000; budget >= 700; budget -= 50 {
		p.TokenBudget = budget
		res, err := compose.Compose(compose.Input{SystemPrompt: systemPrompt, Mission: missionOf(&h, mid), Window: h.rows}, p)
		if err != nil {
			break
		}
		if err := chatvalid.Strict.Validate(res.Messages); err != nil || res.Manifest.Tokens.Total > budget {
			t.Fatalf("budget %d: %v, %d tokens", budget, err, res.Manifest.Tokens.Total)
		}
		var sent strings.Builder
		for _, m := range res.Messages {
			sent.WriteString(m.Content + "\n")
		}
		for _, it := range res.Manifest.Items {
			switch it.Reason {
			case compose.ReasonBudgetOtherCall, compose.ReasonBudgetOlderState, compose.ReasonBudgetTurnLoop:
			default:
				continue
			}
			if it.Disposition != compose.Dropped || h.rows[it.Seq-1].Role != chat.RoleTool {
				continue
			}
			if !strings.Contains(sent.String(), fmt.Sprintf("#%d", it.MemoryID)) {
				t.Fatalf("budget %d: memory #%d dropped (%s) and nothing sent names it", budget, it.MemoryID, it.Reason)
			}
			named++
		}
	}
	if named == 0 {
		t.Fatal("no budget shrank the history enough to drop a loop: the test shows nothing")
	}
	t.Logf("%d dropped results named over the budgets", named)
}
