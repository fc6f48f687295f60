package replaybench

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// hist builds a history from a compact script: "B text" commander broadcast, "N" nudge, "C name args" a call with
// its result "r<seq>", "T text" a text reply.
func hist(script ...string) []compose.Memory {
	var rows []compose.Memory
	var turn int64
	add := func(m compose.Memory) {
		m.Seq = int64(len(rows) + 1)
		m.ID = m.Seq * 10
		if m.Role == chat.RoleUser {
			turn++
		}
		m.Turn = turn
		rows = append(rows, m)
	}
	for _, s := range script {
		switch s[0] {
		case 'B':
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceBroadcast, Content: s[2:]})
		case 'N':
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceNudge, Content: seedNudge})
		case 'T':
			add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: s[2:]})
		case 'C':
			var name, args string
			fmt.Sscan(s[2:], &name, &args)
			id := fmt.Sprintf("c%d", len(rows)+1)
			add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, ToolCalls: []chat.ToolCall{{ID: id, Name: name, Arguments: args}}})
			add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: id, ToolName: name, Content: fmt.Sprintf("r%d", len(rows)+1)})
		}
	}
	return rows
}

func contents(msgs []chat.Message) []string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.Role == chat.RoleSystem:
			out = append(out, "sys")
		case len(m.ToolCalls) > 0:
			out = append(out, "call:"+m.ToolCalls[0].Name)
		default:
			out = append(out, m.Content)
		}
	}
	return out
}

func TestSeedLoopSlice(t *testing.T) {
	rows := hist("B mine", "C login {}", "C get_status {}", "T done", "N", "C mine {}")
	got := contents(must(SeedLoopSlice("S").Compose(rows)))
	// The stored nudge is not a prompt source in v0.4: the commander broadcast is; then the newest loop only.
	want := []string{"sys", "mine", "call:mine", "r9"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSeedTurnAware(t *testing.T) {
	rows := hist("B mine", "C login {}", "C get_status {}", "T done", "N", "C get_status {}", "C mine {}")
	got := contents(must(SeedTurnAware("S").Compose(rows)))
	// Before the nudge: only the newest loop (the first get_status, whose result the newest get_status then
	// removes, and with it its call); from the nudge on: everything.
	want := []string{"sys", seedNudge, "call:get_status", "r9", "call:mine", "r11"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The historical loop is placed before the prompt, as the seed coded it: assistant before any user message.
	rows = hist("B mine", "C login {}", "N", "C mine {}")
	got = contents(must(SeedTurnAware("S").Compose(rows)))
	want = []string{"sys", "call:login", "r3", seedNudge, "call:mine", "r6"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// No prompt in the 20-row window: the newest loop, then the newest broadcast from the whole history.
	script := []string{"B explore"}
	for range 11 {
		script = append(script, "C travel {}")
	}
	got = contents(must(SeedTurnAware("S").Compose(hist(script...))))
	want = []string{"sys", "call:travel", "r23", "explore"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func must(m []chat.Message, err error) []chat.Message {
	if err != nil {
		panic(err)
	}
	return m
}

func seqs(rows []compose.Memory) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r.Seq)
	}
	return out
}

func TestV2Window(t *testing.T) {
	rows := hist(
		"C login {}",                       // 1,2 pinned, before the objective
		"B mine",                           // 3 objective
		`C view_market {"item_id":"iron"}`, // 4,5 newest of its call before the recent part: carried
		`C view_market {}`,                 // 6,7 distinct call: carried
		"C get_status {}",                  // 8,9 snapshot: newest before the recent part: carried
		"T sold",                           // 10 earlier final reply: carried
		"N",                                // 11 turn 3
		"C mine {}",                        // 12,13
		`C view_market {"item_id":"iron"}`, // 14,15
		"C get_status {}",                  // 16,17
	)
	o := WindowOptions{Window: 4, CarryLimit: 10, SnapshotTools: []string{"get_status"}, PinnedTools: []string{"login"}, ReplyLimit: 5}
	w := V2Window(rows, o)
	// Recent part: the newest 4 rows extended back to the current turn's first row (11). Carried rows are the state
	// as of its start: 14,15 and 16,17 supersede 4,5 and 8,9 only from there on.
	want := []int64{1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	if got := seqs(w.Memories); !slices.Equal(got, want) {
		t.Fatalf("memories %v, want %v", got, want)
	}
	if w.RecentStartSeq != 11 || w.ObjectiveSeq != 3 || w.TurnTruncated || w.Mission == nil || w.Mission.Content != "mine" {
		t.Fatalf("window metadata %+v", w)
	}
	// A turn longer than MaxTurnRows is cut and says so; a cut part that would start on a tool result (15) starts
	// after that loop's results instead (16), since the bound is hard.
	o.MaxTurnRows = 3
	w = V2Window(rows, o)
	if !w.TurnTruncated || w.RecentStartSeq != 16 {
		t.Fatalf("truncated turn: start %d truncated %v", w.RecentStartSeq, w.TurnTruncated)
	}
	// A recent part that would start on a tool result starts on the call that made it.
	short := hist("B mine", "C get_status {}", "C mine {}", "N", "C mine {}")
	if w := V2Window(short, WindowOptions{Window: 4}); w.RecentStartSeq != 4 || w.TurnTruncated {
		t.Fatalf("loop boundary: recent part starts at %d", w.RecentStartSeq)
	}
	// CarryLimit 0 is the v1 window plus pinned results.
	o.CarryLimit, o.ReplyLimit, o.MaxTurnRows = 0, 0, 0
	if got := seqs(V2Window(rows, o).Memories); !slices.Equal(got, []int64{1, 2, 11, 12, 13, 14, 15, 16, 17}) {
		t.Fatalf("no carry: %v", got)
	}
}

func TestCallKey(t *testing.T) {
	if CallKey("sell", `{"quantity":3, "item_id":"iron"}`) != CallKey("sell", `{"item_id":"iron","quantity":3}`) {
		t.Fatal("key order or whitespace changes the call key")
	}
	if CallKey("sell", `{"item_id":"iron"}`) == CallKey("sell", `{"item_id":"gold"}`) {
		t.Fatal("other arguments give the same key")
	}
	if CallKey("x", "not json") != "x not json" {
		t.Fatal("non-object arguments are not keyed by their text")
	}
}

// TestReplayInvariants runs a short replay and checks what must hold whatever the algorithms: full history sends
// everything (all state, the mission, a valid conversation that only grows), no system is refused more often than
// it composes, v1 and v2 always send valid requests carrying the mission.
func TestReplayInvariants(t *testing.T) {
	res, err := Run(Options{Sessions: 2, Seed: 11, Calls: 120, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != 2 || res.Requests == 0 || len(res.Stats) != 9 {
		t.Fatalf("replay shape: %+v", res)
	}
	by := map[string]Stats{}
	for _, s := range res.Stats {
		by[s.System] = s
		if s.CovCases != res.StateCases {
			t.Errorf("%s has %d coverage cases, want %d", s.System, s.CovCases, res.StateCases)
		}
		if s.Requests != res.Requests {
			t.Errorf("%s composed %d requests of %d", s.System, s.Requests, res.Requests)
		}
	}
	full := by["full history"]
	if full.Covered != full.CovCases || full.MissionHave != full.MissionReqs || full.InvalidOAI+full.InvalidAnth != 0 {
		t.Errorf("full history: coverage %d/%d, mission %d/%d, invalid %d+%d", full.Covered, full.CovCases,
			full.MissionHave, full.MissionReqs, full.InvalidOAI, full.InvalidAnth)
	}
	// Every full-history request but each session's first extends the previous one.
	if want := float64(full.Sent() - 2); full.PrefixShare < want*0.9 {
		t.Errorf("full history prefix share sum %.1f, want about %.0f", full.PrefixShare, want)
	}
	for _, name := range []string{"Zoea v1", "Zoea v2", "Zoea v3", "keep everything, no budget", "keep everything, budget 8,192"} {
		s := by[name]
		if s.InvalidOAI+s.InvalidAnth != 0 || (s.Errors == 0 && s.MissionHave != s.MissionReqs) {
			t.Errorf("%s: invalid %d+%d, mission %d/%d", name, s.InvalidOAI, s.InvalidAnth, s.MissionHave, s.MissionReqs)
		}
	}
	n := 0
	for _, p := range res.ByPersonality {
		n += p.Stats[0].Requests
	}
	if n != res.Requests {
		t.Errorf("per-personality requests add up to %d, want %d", n, res.Requests)
	}
	// The packer without a budget sends the newest result of every call since the objective in full unless it is
	// above the result cap, and every planted fact; v3 keeps every fact in the request or names where it is (on
	// these sessions, which hold a few).
	if keep := by["keep everything, no budget"]; keep.Covered != keep.CovCases-res.Oversize || keep.FactPresent != keep.FactAsks || keep.FactAsks == 0 {
		t.Errorf("keep everything: coverage %d/%d (%d oversize), facts %d/%d", keep.Covered, keep.CovCases, res.Oversize, keep.FactPresent, keep.FactAsks)
	}
	if v3 := by["Zoea v3"]; v3.FactPresent+v3.FactPointer != v3.FactAsks || v3.OverBudget != 0 {
		t.Errorf("Zoea v3: facts %d+%d of %d, over budget %d", v3.FactPresent, v3.FactPointer, v3.FactAsks, v3.OverBudget)
	}
	if by["last-20"].InvalidOAI == 0 {
		t.Error("last-20 never cut a loop in half: the replay is not exercising windows")
	}
}

// TestReplicasWithoutPreviousCompaction: Zoea v2 composed by two replicas taking turns, none told the previous
// compaction, sends valid requests that extend each other less often than one composer's.
func TestReplicasWithoutPreviousCompaction(t *testing.T) {
	res, err := Run(Options{Sessions: 2, Seed: 11, Calls: 120, Parallel: 2, Only: "zoea v2", Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stats) != 2 || res.Stats[0].System != "Zoea v2" || res.Stats[1].System != "Zoea v2, 2 replicas without previous_compaction" {
		t.Fatalf("systems %+v", res.Stats)
	}
	one, two := res.Stats[0], res.Stats[1]
	if two.InvalidOAI+two.InvalidAnth+two.Errors != 0 || two.MissionHave != two.MissionReqs {
		t.Errorf("replicas: invalid %d+%d, refused %d, mission %d/%d", two.InvalidOAI, two.InvalidAnth, two.Errors, two.MissionHave, two.MissionReqs)
	}
	if two.PrefixShare >= one.PrefixShare {
		t.Errorf("prefix share sums: replicas %.1f, one composer %.1f; want the replicas' lower", two.PrefixShare, one.PrefixShare)
	}
	t.Logf("prefix share sums over %d requests: one composer %.1f, two forgetful replicas %.1f", one.Requests, one.PrefixShare, two.PrefixShare)
}
