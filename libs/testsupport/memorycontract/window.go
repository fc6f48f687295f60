package memorycontract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// The ComposeWindow capability: GetComposeWindow as the real service answers it (services/memory/README.md,
// "GetComposeWindow").
//
// v1 (none of carry_limit, reply_limit, pinned_tools, max_turn_rows set): the newest `window` memories;
// recent_start_seq is the first one's seq.
//
// v2: the recent part [recent_start_seq, last_seq] holds at least the newest `window` rows and reaches back to the
// current turn's opener (the newest user row from a direct message, broadcast or nudge) — or, with recent_from_seq
// set, starts at that seq instead — never more than max_turn_rows rows (turn_truncated says it was cut). It then
// moves onto a loop boundary: when the first call-or-result row at or after its start is a tool result, it moves
// back to the assistant row with tool calls before it, or, when that row lies beyond max_turn_rows, forward past
// the loop's results. Before it come the carried rows, all before recent_start_seq: the newest result of each
// distinct call since the objective (the mission's seq), keyed by tool name and canonical arguments, or by tool name
// alone for snapshot_tools, the carry_limit newest such calls; the newest result of each pinned tool however old;
// each with the nearest earlier assistant row with tool calls (the call); and the reply_limit newest assistant text
// replies since the objective. The mission is the newest commander (sender '') direct message or broadcast;
// objective_seq is its seq. Tool results longer than max_result_bytes are cut and point at the full memory.
// carry_bytes is the size of the rows below recent_start_seq as the response bound counts it (content, reasoning,
// tool call ids, names and arguments, after the cut). carry_known naming the window's objective_seq and
// recent_start_seq leaves those rows out (carry_omitted; carry_bytes is then carry_known.bytes), unless they and the
// rest would not fit the response bound.

// history is one mysis's memories for the window cases, appended in one call; seqs are 1-based indexes.
type history []*memoryv1.NewMemory

func commander(content string) *memoryv1.NewMemory {
	return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: content}
}

func nudge(content string) *memoryv1.NewMemory {
	return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_NUDGE, Content: content}
}

// call is an assistant memory making one tool call.
func call(id, tool, args string) *memoryv1.NewMemory {
	return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM,
		ToolCalls: []*memoryv1.ToolCall{{Id: id, Name: tool, ArgumentsJson: args}}}
}

// result answers a call; its arguments come from the call (the service finds them).
func result(id, tool, content string) *memoryv1.NewMemory {
	return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: id, ToolName: tool, Content: content}
}

func reply(content string) *memoryv1.NewMemory {
	return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: content}
}

// missionHistory: a commander order (the mission, seq 1) worked through in turn 1 — get_status twice, travel once —
// a final reply, then a nudged turn 2 that travels to the same place (the same call, other whitespace) and mines.
var missionHistory = history{
	commander("Mine iron ore at Sol."),       // 1, turn 1: the mission
	call("c1", "get_status", `{}`),           // 2
	result("c1", "get_status", "status: A"),  // 3
	call("c2", "travel", `{"to":"sol"}`),     // 4
	result("c2", "travel", "arrived at sol"), // 5
	call("c3", "get_status", `{}`),           // 6
	result("c3", "get_status", "status: B"),  // 7
	reply("At Sol; ready to mine."),          // 8
	nudge("Continue your mission."),          // 9, turn 2
	call("c4", "travel", `{ "to" : "sol" }`), // 10
	result("c4", "travel", "already at sol"), // 11
	call("c5", "mine", `{}`),                 // 12
	result("c5", "mine", "mined 5 iron ore"), // 13
}

// windowMysis creates a mysis with h appended and returns its id and the stored rows by seq (rows[seq-1]).
func windowMysis(t *testing.T, c memoryv1.MemoryServiceClient, h history) (string, []*memoryv1.Memory) {
	t.Helper()
	m := newMysis(t, c, uniqueName("window"))
	if len(h) == 0 {
		return m.GetId(), nil
	}
	return m.GetId(), appendOK(t, c, m.GetId(), h...)
}

func window(t *testing.T, c memoryv1.MemoryServiceClient, req *memoryv1.GetComposeWindowRequest) *memoryv1.GetComposeWindowResponse {
	t.Helper()
	resp, err := c.GetComposeWindow(ctxT(t), req)
	if err != nil {
		t.Fatalf("GetComposeWindow(%v): %v", req, err)
	}
	return resp
}

// wantWindow checks the rows (by seq, oldest first), the recent part's start, the objective and truncation.
func wantWindow(t *testing.T, what string, resp *memoryv1.GetComposeWindowResponse, seqs []int64, recentStart, objective int64, truncated bool) {
	t.Helper()
	got := make([]int64, len(resp.GetMemories()))
	for i, m := range resp.GetMemories() {
		got[i] = m.GetSeq()
	}
	if fmt.Sprint(got) != fmt.Sprint(seqs) {
		t.Errorf("%s: rows %v, want %v", what, got, seqs)
	}
	if resp.GetRecentStartSeq() != recentStart || resp.GetObjectiveSeq() != objective || resp.GetTurnTruncated() != truncated {
		t.Errorf("%s: recent_start_seq %d, objective_seq %d, turn_truncated %v; want %d, %d, %v", what,
			resp.GetRecentStartSeq(), resp.GetObjectiveSeq(), resp.GetTurnTruncated(), recentStart, objective, truncated)
	}
}

// wantCarryBytes checks the window's carry_bytes.
func wantCarryBytes(t *testing.T, what string, resp *memoryv1.GetComposeWindowResponse, want int64) {
	t.Helper()
	if got := resp.GetCarryBytes(); got != want {
		t.Errorf("%s: carry_bytes %d, want %d", what, got, want)
	}
}

// span is the seqs from..to.
func span(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func testWindowEmpty(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, nil)
	for _, req := range []*memoryv1.GetComposeWindowRequest{
		{MysisId: id, Window: 5},
		{MysisId: id, Window: 5, CarryLimit: 10, ReplyLimit: 3, PinnedTools: []string{"login"}},
	} {
		resp := window(t, c, req)
		wantWindow(t, "a mysis without memories", resp, nil, 0, 0, false)
		wantCarryBytes(t, "a mysis without memories", resp, 0)
		if resp.GetMysis().GetId() != id || resp.GetMission() != nil {
			t.Errorf("a mysis without memories: mysis %v, mission %v", resp.GetMysis(), resp.GetMission())
		}
	}
}

func testWindowV1(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, rows := windowMysis(t, c, missionHistory)
	resp := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 3})
	// The newest three, even though they start on a tool result: v1 has no loop boundary.
	wantWindow(t, "v1, window 3", resp, span(11, 13), 11, 1, false)
	wantCarryBytes(t, "v1, window 3", resp, 0)
	for i, m := range resp.GetMemories() {
		want := rows[10+i]
		if m.GetId() != want.GetId() || m.GetContent() != want.GetContent() || m.GetRole() != want.GetRole() ||
			m.GetToolCallId() != want.GetToolCallId() || m.GetToolName() != want.GetToolName() || m.GetTurn() != want.GetTurn() {
			t.Errorf("window row %d = %v, want the stored row %v", i, m, want)
		}
	}
	if got := resp.GetMysis(); got.GetId() != id || got.GetLastSeq() != 13 || got.GetCurrentTurn() != 2 || got.GetSystemPrompt() == "" {
		t.Errorf("window mysis = %v; want it with last_seq 13, current_turn 2 and its system prompt", got)
	}
	// Omitted, the window is 20; it never reaches before seq 1.
	wantWindow(t, "v1, default window", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id}), span(1, 13), 1, 1, false)
}

func testWindowRecentAndCarried(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, rows := windowMysis(t, c, missionHistory)
	// Turns: a user row from the commander, the swarm or a nudge opens one; everything else joins the current one.
	for i, want := range []int64{1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2} {
		if rows[i].GetTurn() != want {
			t.Errorf("seq %d: turn %d, want %d", i+1, rows[i].GetTurn(), want)
		}
	}
	// Tool results know their call: arguments taken from the assistant row, and a key that ignores whitespace.
	if rows[4].GetCallArgumentsJson() != `{"to":"sol"}` || rows[10].GetCallArgumentsJson() != `{ "to" : "sol" }` ||
		rows[4].GetCallKey() == "" || rows[4].GetCallKey() != rows[10].GetCallKey() || rows[2].GetCallKey() == rows[4].GetCallKey() {
		t.Errorf("call arguments/keys: seq 5 %q/%q, seq 11 %q/%q, seq 3 key %q", rows[4].GetCallArgumentsJson(), rows[4].GetCallKey(),
			rows[10].GetCallArgumentsJson(), rows[10].GetCallKey(), rows[2].GetCallKey())
	}
	resp := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 2, CarryLimit: 10, ReplyLimit: 5})
	// Recent: back from the newest two to turn 2's nudge (9). Carried: the newest get_status (7) and travel (5)
	// results since the mission, each with its call (6, 4) — the state as of seq 9, although travel was repeated
	// after it — and the final reply (8). The first get_status result (3) is superseded by 7.
	wantWindow(t, "v2", resp, append([]int64{4, 5, 6, 7, 8}, span(9, 13)...), 9, 1, false)
	if m := resp.GetMission().GetMemory(); m.GetSeq() != 1 || m.GetId() != rows[0].GetId() || m.GetContent() != rows[0].GetContent() || resp.GetMission().GetGlobalFallback() {
		t.Errorf("mission = %v, want the commander's order (seq 1)", resp.GetMission())
	}
	// Without a reply limit the reply stays out; a window reaching past the turn's start wins over it.
	wantWindow(t, "v2, no replies", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 2, CarryLimit: 10}),
		append([]int64{4, 5, 6, 7}, span(9, 13)...), 9, 1, false)
	wantWindow(t, "v2, window 8", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 8, CarryLimit: 10, ReplyLimit: 5}),
		append([]int64{2, 3, 4, 5}, span(6, 13)...), 6, 1, false)
	// A window of 9 would start on a result (5): it moves back to the call (4).
	wantWindow(t, "v2, window 9", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 9, CarryLimit: 10}),
		append([]int64{2, 3}, span(4, 13)...), 4, 1, false)
	// reply_limit counts replies: with a second one (14) before a new turn (15), a limit of 1 carries only it.
	appendOK(t, c, id, reply("Mined; more to go."), nudge("Go on."))
	wantWindow(t, "v2, reply_limit 1", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10, ReplyLimit: 1}),
		[]int64{6, 7, 10, 11, 12, 13, 14, 15}, 15, 1, false)
	wantWindow(t, "v2, reply_limit 2", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10, ReplyLimit: 2}),
		[]int64{6, 7, 8, 10, 11, 12, 13, 14, 15}, 15, 1, false)
}

func testWindowCarryLimitAndSnapshots(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, history{
		commander("Scout the belt."),                    // 1
		call("s1", "get_status", `{}`),                  // 2
		result("s1", "get_status", "hull 100"),          // 3
		call("s2", "get_status", `{"verbose":true}`),    // 4
		result("s2", "get_status", "hull 100, cargo 0"), // 5
		call("s3", "scan", `{"range":2}`),               // 6
		result("s3", "scan", "asteroids"),               // 7
		nudge("Go on."),                                 // 8
		call("s4", "mine", `{}`),                        // 9
		result("s4", "mine", "mined"),                   // 10
	})
	// Three distinct calls before the turn: all carried.
	wantWindow(t, "carry 10", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10}),
		append(span(2, 7), span(8, 10)...), 8, 1, false)
	// The newest one only.
	wantWindow(t, "carry 1", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 1}),
		[]int64{6, 7, 8, 9, 10}, 8, 1, false)
	// get_status as a snapshot tool: keyed by name, so its newest result stands for both.
	wantWindow(t, "snapshot get_status", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10,
		SnapshotTools: []string{"get_status"}}), []int64{4, 5, 6, 7, 8, 9, 10}, 8, 1, false)
}

func testWindowPinned(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, history{
		nudge("Begin."),                            // 1, turn 1 (a nudge is no mission)
		call("p1", "login", `{"user":"m1"}`),       // 2
		result("p1", "login", "welcome back"),      // 3
		commander("Sell the ore."),                 // 4, turn 2: the mission
		call("p2", "get_status", `{}`),             // 5
		result("p2", "get_status", "cargo: 5 ore"), // 6
		reply("Heading to market."),                // 7
		nudge("Continue."),                         // 8, turn 3
		call("p3", "sell", `{"item":"ore"}`),       // 9
		result("p3", "sell", "sold"),               // 10
	})
	// The login result is older than the mission: carried only when pinned.
	wantWindow(t, "not pinned", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10}),
		[]int64{5, 6, 8, 9, 10}, 8, 4, false)
	wantWindow(t, "login pinned", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10,
		PinnedTools: []string{"login"}}), []int64{2, 3, 5, 6, 8, 9, 10}, 8, 4, false)
	// Pinned alone makes the window v2: no carry-over, but the recent part still reaches the turn's start.
	wantWindow(t, "pinned, no carry", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1,
		PinnedTools: []string{"login", "never_called"}}), []int64{2, 3, 8, 9, 10}, 8, 4, false)
}

func testWindowRecentFrom(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, missionHistory)
	base := func(from int64) *memoryv1.GetComposeWindowRequest {
		return &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 2, CarryLimit: 10, ReplyLimit: 5, RecentFromSeq: from}
	}
	// Earlier than the turn's start: the recent part starts there (on a result, so at its call, 4), and only what
	// came before it is carried.
	wantWindow(t, "recent from 5", window(t, c, base(5)), append([]int64{2, 3}, span(4, 13)...), 4, 1, false)
	// Later than the turn's start: it replaces the turn rule too (11 is a result: its call, 10), and the state as of
	// 10 is carried — travel's newest result before it is still 5.
	wantWindow(t, "recent from 11", window(t, c, base(11)), []int64{4, 5, 6, 7, 8, 10, 11, 12, 13}, 10, 1, false)
	// Beyond the newest row: the newest row, a result, so from its call (12); travel's newest result is now 11.
	wantWindow(t, "recent from 99", window(t, c, base(99)), []int64{6, 7, 8, 10, 11, 12, 13}, 12, 1, false)
	// max_turn_rows bounds it too: from 5 with three rows allowed the part would start at 11, a result whose call
	// (10) lies beyond the bound, so it moves forward past the loop to 12, and the turn is truncated.
	bounded := base(5)
	bounded.MaxTurnRows = 3
	wantWindow(t, "recent from 5, max_turn_rows 3", window(t, c, bounded), []int64{6, 7, 8, 10, 11, 12, 13}, 12, 1, true)
}

func testWindowTruncated(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, missionHistory)
	// Turn 2 is five rows; three may be recent. They would start on a result (11) whose call (10) is beyond the
	// bound, so the recent part moves forward past the loop to 12; the cut loop is carried like any other call.
	wantWindow(t, "max_turn_rows 3", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10,
		ReplyLimit: 5, MaxTurnRows: 3}), []int64{6, 7, 8, 10, 11, 12, 13}, 12, 1, true)
	// max_turn_rows never cuts below the window.
	wantWindow(t, "max_turn_rows 1, window 5", window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 5, MaxTurnRows: 1}),
		span(9, 13), 9, 1, false)
}

func testWindowMissions(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	sender := newMysis(t, c, uniqueName("sender"))
	id, _ := windowMysis(t, c, history{
		nudge("Begin."),
		{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, SenderId: sender.GetId(), Content: "Meet me at Sol."},
	})
	// A mysis's broadcast is no mission either.
	if _, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{SenderId: sender.GetId(), Content: "Anyone at Sol?",
		TargetMysisIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	resp := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 10, CarryLimit: 10})
	if resp.GetMission() != nil || resp.GetObjectiveSeq() != 0 {
		t.Errorf("nudges and myses' messages made a mission: %v, objective %d", resp.GetMission(), resp.GetObjectiveSeq())
	}
	// A commander broadcast to another mysis is the swarm's latest: this mysis's mission only as the fallback.
	other := newMysis(t, c, uniqueName("other"))
	text := "All myses: regroup at Sol " + uuid.NewString()[:8]
	if _, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{Content: text, TargetMysisIds: []string{other.GetId()}}); err != nil {
		t.Fatal(err)
	}
	resp = window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 10, GlobalMissionFallback: true})
	mi := resp.GetMission()
	if !mi.GetGlobalFallback() || mi.GetMemory().GetContent() != text || mi.GetMemory().GetId() != 0 || mi.GetMemory().GetSeq() != 0 ||
		mi.GetMemory().GetRole() != memoryv1.Role_ROLE_USER || mi.GetMemory().GetSource() != memoryv1.Source_SOURCE_BROADCAST ||
		resp.GetObjectiveSeq() != 0 {
		t.Errorf("fallback mission = %v, objective %d; want the commander's broadcast as a synthetic memory", mi, resp.GetObjectiveSeq())
	}
	if resp := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 10}); resp.GetMission() != nil {
		t.Errorf("without global_mission_fallback: mission %v", resp.GetMission())
	}
	// A commander broadcast delivered to the mysis is its own mission (no fallback), the newest commander prompt.
	if _, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{Content: "Mine iron.", TargetMysisIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	resp = window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 10, GlobalMissionFallback: true, CarryLimit: 10})
	if m := resp.GetMission(); m.GetGlobalFallback() || m.GetMemory().GetSeq() != 4 || m.GetMemory().GetContent() != "Mine iron." ||
		m.GetMemory().GetSource() != memoryv1.Source_SOURCE_BROADCAST || resp.GetObjectiveSeq() != 4 {
		t.Errorf("own mission = %v, objective %d; want the delivered broadcast (seq 4)", m, resp.GetObjectiveSeq())
	}
	appendOK(t, c, id, commander("Now sell it."))
	if resp := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 10}); resp.GetMission().GetMemory().GetSeq() != 5 || resp.GetObjectiveSeq() != 5 {
		t.Errorf("after a direct order: mission %v, objective %d; want seq 5", resp.GetMission(), resp.GetObjectiveSeq())
	}
}

func testWindowCut(t *testing.T, c memoryv1.MemoryServiceClient) {
	long := strings.Repeat("é", 1000) // 2000 bytes
	id, rows := windowMysis(t, c, history{
		commander(strings.Repeat("o", 3000)),
		call("k1", "scan", `{}`),
		result("k1", "scan", long),
	})
	resp := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 3, MaxResultBytes: 1025})
	ms := resp.GetMemories()
	if len(ms) != 3 {
		t.Fatalf("window = %d rows, want 3", len(ms))
	}
	if ms[0].GetContent() != rows[0].GetContent() {
		t.Errorf("a prompt was cut to %d bytes; only tool results are", len(ms[0].GetContent()))
	}
	// Cut at a UTF-8 boundary (1024 bytes: 512 characters) with a pointer to the full memory.
	want := strings.Repeat("é", 512) + fmt.Sprintf("…[cut: %d bytes more; full result is memory #%d, search for it]", 2000-1024, rows[2].GetId())
	if got := ms[2].GetContent(); got != want {
		t.Errorf("cut result = %d bytes ending %q, want %d bytes ending %q", len(got), got[max(0, len(got)-80):], len(want), want[len(want)-80:])
	}
	if got := window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 3}); got.GetMemories()[2].GetContent() != long {
		t.Errorf("with the default cut (256 KiB) a 2000-byte result was changed")
	}
	// Carried (a new turn starts after it), the result counts in carry_bytes as cut: the call's "k1", "scan" and
	// "{}" (8 bytes) and the cut content.
	appendOK(t, c, id, nudge("Go on."))
	carried := &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 1, CarryLimit: 10, MaxResultBytes: 1025}
	resp = window(t, c, carried)
	wantWindow(t, "carried cut result", resp, []int64{2, 3, 4}, 4, 1, false)
	wantCarryBytes(t, "carried cut result", resp, int64(8+len(want)))
	carried.MaxResultBytes = 0
	wantCarryBytes(t, "carried whole result", window(t, c, carried), 8+2000)
}

func testWindowRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	id, _ := windowMysis(t, c, history{commander("x")})
	_, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: "nope"})
	wantInvalid(t, "a malformed mysis id", err, "mysis_id")
	_, err = c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{})
	wantInvalid(t, "no mysis id", err, "mysis_id")
	_, err = c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: uuid.NewString(), CarryLimit: 5})
	wantCode(t, "an unknown mysis", err, codes.NotFound)
	for _, tc := range []struct {
		field string
		req   *memoryv1.GetComposeWindowRequest
	}{
		{"window", &memoryv1.GetComposeWindowRequest{Window: -1}},
		{"carry_limit", &memoryv1.GetComposeWindowRequest{CarryLimit: -1}},
		{"reply_limit", &memoryv1.GetComposeWindowRequest{ReplyLimit: -1}},
		{"max_turn_rows", &memoryv1.GetComposeWindowRequest{MaxTurnRows: -1}},
		{"max_result_bytes", &memoryv1.GetComposeWindowRequest{MaxResultBytes: 10}},
		{"recent_from_seq", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, RecentFromSeq: -1}},
		{"carry_known.objective_seq", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{ObjectiveSeq: -1, RecentStartSeq: 3}}},
		{"carry_known.recent_start_seq", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: -3}}},
		{"carry_known.bytes", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: 3, Bytes: -1}}},
		{"carry_known.seqs[1]", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: 3, Seqs: []int64{2, 3}}}},
		{"carry_known.seqs[0]", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: 3, Seqs: []int64{-2}}}},
		{"carry_known.seqs", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: 3, Seqs: make([]int64, 4097)}}},
		{"carry_known.recent_through_seq", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: 3, RecentThroughSeq: 2}}},
		{"carry_known.recent_bytes", &memoryv1.GetComposeWindowRequest{CarryLimit: 5, CarryKnown: &memoryv1.CarryKnown{RecentStartSeq: 3, RecentThroughSeq: 3, RecentBytes: -1}}},
		{"snapshot_tools[0]", &memoryv1.GetComposeWindowRequest{SnapshotTools: []string{""}}},
		{"pinned_tools[1]", &memoryv1.GetComposeWindowRequest{PinnedTools: []string{"login", ""}}},
		{"pinned_tools", &memoryv1.GetComposeWindowRequest{PinnedTools: make([]string, 101)}},
	} {
		tc.req.MysisId = id
		_, err := c.GetComposeWindow(ctx, tc.req)
		wantInvalid(t, "GetComposeWindow with a bad "+tc.field, err, tc.field)
	}
	// Larger limits are lowered to the maximum, not refused.
	if _, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 5000, CarryLimit: 5000,
		ReplyLimit: 5000, MaxTurnRows: 50000, MaxResultBytes: 1 << 30}); err != nil {
		t.Errorf("over-large limits: %v, want them lowered to the maximum", err)
	}
}

// carryOf is what a caller holds from a whole window: the rows below its recent part's start and the carry_known
// naming them, with the window's carry_bytes echoed as their size and their seqs.
func carryOf(resp *memoryv1.GetComposeWindowResponse) ([]*memoryv1.Memory, *memoryv1.CarryKnown) {
	k := &memoryv1.CarryKnown{ObjectiveSeq: resp.GetObjectiveSeq(), RecentStartSeq: resp.GetRecentStartSeq(), Bytes: resp.GetCarryBytes()}
	var rows []*memoryv1.Memory
	for _, m := range resp.GetMemories() {
		if m.GetSeq() >= resp.GetRecentStartSeq() {
			break
		}
		rows = append(rows, m)
		k.Seqs = append(k.Seqs, m.GetSeq())
	}
	return rows, k
}

// missionCarryBytes is the size of missionHistory's carried rows 4–8 as the response bound counts it: the travel
// call ("c2" "travel" `{"to":"sol"}`, 20), its result (14), the get_status call ("c3" "get_status" `{}`, 14), its
// result (9) and the reply (22).
const missionCarryBytes = 20 + 14 + 14 + 9 + 22

// missionRecentBytes is the size of missionHistory's recent rows 9–13 as the response bound counts it: the nudge
// (22), the travel call ("c4" "travel" `{ "to" : "sol" }`, 24), its result (14), the mine call ("c5" "mine" `{}`,
// 8) and its result (16).
const missionRecentBytes = 22 + 24 + 14 + 8 + 16

func testWindowCarryKnown(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, missionHistory)
	req := func(k *memoryv1.CarryKnown) *memoryv1.GetComposeWindowRequest {
		return &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 2, CarryLimit: 10, ReplyLimit: 5, RecentFromSeq: 9, CarryKnown: k}
	}
	whole := window(t, c, req(nil))
	wantWindow(t, "whole", whole, append([]int64{4, 5, 6, 7, 8}, span(9, 13)...), 9, 1, false)
	if whole.GetCarryOmitted() || whole.GetCarryCut() {
		t.Errorf("whole window: carry_omitted %v, carry_cut %v", whole.GetCarryOmitted(), whole.GetCarryCut())
	}
	wantCarryBytes(t, "whole", whole, missionCarryBytes)
	rows, known := carryOf(whole)
	// The same objective and start, the size echoed: only the recent part comes back, and the held rows before it
	// are the window; its carry_bytes is the held rows' size as the request gave it.
	resp := window(t, c, req(known))
	wantWindow(t, "carry known", resp, span(9, 13), 9, 1, false)
	if !resp.GetCarryOmitted() {
		t.Errorf("carry known (objective 1, start 9): carry_omitted false")
	}
	wantCarryBytes(t, "carry known", resp, missionCarryBytes)
	wantCarryBytes(t, "carry known, another size given", window(t, c, req(&memoryv1.CarryKnown{ObjectiveSeq: 1, RecentStartSeq: 9, Bytes: 5})), 5)
	appendOK(t, c, id, call("c6", "scan", `{}`), result("c6", "scan", "nothing"))
	resp = window(t, c, req(known))
	wantWindow(t, "carry known, the turn grown", resp, span(9, 15), 9, 1, false)
	if !resp.GetCarryOmitted() {
		t.Errorf("carry known, the turn grown: carry_omitted false")
	}
	spliced := append(append([]*memoryv1.Memory(nil), rows...), resp.GetMemories()...)
	now := window(t, c, req(nil))
	for i, m := range now.GetMemories() {
		if i >= len(spliced) || m.GetId() != spliced[i].GetId() || m.GetContent() != spliced[i].GetContent() {
			t.Fatalf("held rows + omitted window differ from the whole window at row %d", i)
		}
	}
	// The whole window read now counts the same carried rows: what the caller holds stays valid.
	wantCarryBytes(t, "whole, the turn grown", now, resp.GetCarryBytes())
	// The start moved up under the same objective (recent_from 12): the carried rows are the state as of 12 — the
	// newest get_status (6, 7), the reply (8), travel to sol in its newest spelling (10, 11) — whether the server
	// derives them from the held rows' seqs or reads them whole; the held rows are never left out.
	moved := func(k *memoryv1.CarryKnown) *memoryv1.GetComposeWindowResponse {
		return window(t, c, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 2, CarryLimit: 10, ReplyLimit: 5, RecentFromSeq: 12, CarryKnown: k})
	}
	movedWhole := moved(nil)
	for what, k := range map[string]*memoryv1.CarryKnown{"start moved, seqs held": known, "start moved, none held": nil} {
		resp := moved(k)
		wantWindow(t, what, resp, append([]int64{6, 7, 8, 10, 11}, span(12, 15)...), 12, 1, false)
		if resp.GetCarryOmitted() || resp.GetCarryCut() {
			t.Errorf("%s: carry_omitted %v, carry_cut %v", what, resp.GetCarryOmitted(), resp.GetCarryCut())
		}
		wantCarryBytes(t, what, resp, movedWhole.GetCarryBytes())
	}
	// Another objective, another start, or a held carry too large to fit the bound with the rest: the whole window.
	for what, k := range map[string]*memoryv1.CarryKnown{
		"another objective": {ObjectiveSeq: 2, RecentStartSeq: 9, Bytes: known.GetBytes()},
		"another start":     {ObjectiveSeq: 1, RecentStartSeq: 8, Bytes: known.GetBytes()},
		"over the bound":    {ObjectiveSeq: 1, RecentStartSeq: 9, Bytes: 16 << 20},
		"none held":         {},
	} {
		resp = window(t, c, req(k))
		wantWindow(t, what, resp, append([]int64{4, 5, 6, 7, 8}, span(9, 15)...), 9, 1, false)
		if resp.GetCarryOmitted() {
			t.Errorf("%s: carry_omitted", what)
		}
		wantCarryBytes(t, what, resp, missionCarryBytes)
	}
	// A new commander order is a new objective.
	appendOK(t, c, id, commander("Now sell it."))
	if resp = window(t, c, req(known)); resp.GetCarryOmitted() || resp.GetObjectiveSeq() != 16 {
		t.Errorf("after a new order: carry_omitted %v, objective %d", resp.GetCarryOmitted(), resp.GetObjectiveSeq())
	}
	wantCarryBytes(t, "after a new order (nothing carried since it)", resp, 0)
}

// testWindowRecentKnown: a caller holding the previous window whole — its carried rows and its recent rows through
// the newest (carry_known.recent_through_seq, recent_bytes as that window reported them) — gets back only the rows
// stored since, while the objective and the start stay; recent_bytes counts the whole recent part. Held recent rows
// the window does not contain, or too large for the bound, come back.
func testWindowRecentKnown(t *testing.T, c memoryv1.MemoryServiceClient) {
	id, _ := windowMysis(t, c, missionHistory)
	req := func(k *memoryv1.CarryKnown) *memoryv1.GetComposeWindowRequest {
		return &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 2, CarryLimit: 10, ReplyLimit: 5, RecentFromSeq: 9, CarryKnown: k}
	}
	whole := window(t, c, req(nil))
	if got := whole.GetRecentBytes(); got != missionRecentBytes {
		t.Fatalf("recent_bytes %d, want %d (rows 9-13)", got, missionRecentBytes)
	}
	rows, known := carryOf(whole)
	recent := whole.GetMemories()[len(rows):]
	known.RecentThroughSeq, known.RecentBytes = 13, whole.GetRecentBytes()
	resp := window(t, c, req(known))
	if !resp.GetCarryOmitted() || resp.GetRecentOmittedThrough() != 13 || len(resp.GetMemories()) != 0 || resp.GetRecentBytes() != whole.GetRecentBytes() {
		t.Fatalf("nothing new: carry_omitted %v, recent_omitted_through %d, %d rows, recent_bytes %d (want %d)",
			resp.GetCarryOmitted(), resp.GetRecentOmittedThrough(), len(resp.GetMemories()), resp.GetRecentBytes(), whole.GetRecentBytes())
	}
	appendOK(t, c, id, call("c6", "scan", `{}`), result("c6", "scan", "nothing"))
	now := window(t, c, req(nil))
	resp = window(t, c, req(known))
	wantWindow(t, "recent rows held", resp, span(14, 15), 9, 1, false)
	if !resp.GetCarryOmitted() || resp.GetRecentOmittedThrough() != 13 || resp.GetRecentBytes() != now.GetRecentBytes() || resp.GetCarryBytes() != now.GetCarryBytes() {
		t.Errorf("recent rows held: carry_omitted %v, recent_omitted_through %d, recent_bytes %d (want %d), carry_bytes %d (want %d)",
			resp.GetCarryOmitted(), resp.GetRecentOmittedThrough(), resp.GetRecentBytes(), now.GetRecentBytes(), resp.GetCarryBytes(), now.GetCarryBytes())
	}
	spliced := append(append(append([]*memoryv1.Memory(nil), rows...), recent...), resp.GetMemories()...)
	for i, m := range now.GetMemories() {
		if i >= len(spliced) || m.GetId() != spliced[i].GetId() || m.GetContent() != spliced[i].GetContent() {
			t.Fatalf("held rows + the rows returned differ from the whole window at row %d", i)
		}
	}
	for what, k := range map[string]*memoryv1.CarryKnown{
		"held through beyond the newest row": {ObjectiveSeq: 1, RecentStartSeq: 9, Bytes: known.GetBytes(), RecentThroughSeq: 16, RecentBytes: known.GetRecentBytes()},
		"held recent rows over the bound":    {ObjectiveSeq: 1, RecentStartSeq: 9, Bytes: known.GetBytes(), RecentThroughSeq: 13, RecentBytes: 16 << 20},
	} {
		resp = window(t, c, req(k))
		if resp.GetRecentOmittedThrough() != 0 || resp.GetRecentBytes() != now.GetRecentBytes() {
			t.Errorf("%s: recent_omitted_through %d, recent_bytes %d (want %d)", what, resp.GetRecentOmittedThrough(), resp.GetRecentBytes(), now.GetRecentBytes())
		}
		wantSeqs := span(9, 15)
		if !resp.GetCarryOmitted() {
			wantSeqs = append([]int64{4, 5, 6, 7, 8}, wantSeqs...)
		}
		wantWindow(t, what, resp, wantSeqs, 9, 1, false)
	}
}
