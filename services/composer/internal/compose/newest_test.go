package compose_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// turnState sorts the tool results of rows[from:] by their distinct call (tool and arguments): the newest result of
// each call, and the older, superseded ones.
func turnState(rows []compose.Memory, from int) (newest, superseded []compose.Memory) {
	args := map[string]string{}
	last := map[string]int{}
	var results []compose.Memory
	for _, m := range rows[from:] {
		for _, tc := range m.ToolCalls {
			args[tc.ID] = tc.Arguments
		}
		if m.Role == chat.RoleTool {
			key := m.ToolName + " " + args[m.ToolCallID]
			if i, ok := last[key]; ok {
				superseded = append(superseded, results[i])
			}
			last[key] = len(results)
			results = append(results, m)
		}
	}
	for _, i := range last {
		newest = append(newest, results[i])
	}
	return newest, superseded
}

// inFull reports the results of rows that res sends whole, answering their own call.
func inFull(res compose.Result, rows []compose.Memory) func(compose.Memory) bool {
	sent := map[string]string{}
	for _, m := range res.Messages {
		if m.Role == chat.RoleTool {
			sent[m.ToolCallID] = m.Content
		}
	}
	return func(m compose.Memory) bool { c, ok := sent[m.ToolCallID]; return ok && c == m.Content }
}

// Newest state first, inside a turn too: one turn longer than the room, in which several tools are each called
// several times with the same arguments (and one tool with two stations). Whatever the budget, a request that does
// not send some call's newest result in full sends no older, superseded result of the turn in full: the older
// result of a call is the first thing the budget takes, before the newest result of any other call — also when what
// supersedes it is the newest loop (on a grid of 8 rows the boundary leaves the turn's last loops live, and the
// reducer's first pass used to spare their superseded results while it stubbed an older station's market).
func TestTurnLongerThanRoomGivesUpSupersededFirst(t *testing.T) {
	body := func(tool string, n int) string {
		return fmt.Sprintf(`{"tool":"%s","call":%d,"data":"%s"}`, tool, n, strings.Repeat(tool+" reading ", 40))
	}
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: chart the sector and trade what you find.")
	turn := len(h.rows)
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("view_market", `{"station":"a"}`, body("view_market_a", 0))
	h.loop("view_market", `{"station":"b"}`, body("view_market_b", 1))
	for i := range 2 {
		h.loop("get_status", `{}`, body("get_status", 2+2*i))
		h.loop("get_cargo", `{}`, body("get_cargo", 3+2*i))
	}
	newest, superseded := turnState(h.rows, turn)
	if len(superseded) != 2 || len(newest) != 4 {
		t.Fatalf("%d newest, %d superseded results", len(newest), len(superseded))
	}
	for _, step := range []int{4, 8, 16} {
		for _, mode := range []compose.Compaction{compose.CompactionPriced, compose.CompactionWatermark} {
			p := compose.DefaultPolicy()
			p.Compaction, p.CompactStep = mode, step
			lostSome := false
			for budget := 4000; budget >= 700; budget -= 25 {
				p.TokenBudget = budget
				res, err := compose.Compose(compose.Input{SystemPrompt: systemPrompt, Mission: missionOf(&h, mid), Window: h.rows}, p)
				if err != nil {
					break
				}
				full := inFull(res, h.rows)
				var lost, stale []string
				for _, m := range newest {
					if !full(m) {
						lost = append(lost, fmt.Sprintf("%s #%d", m.ToolName, m.ID))
					}
				}
				for _, m := range superseded {
					if full(m) {
						stale = append(stale, fmt.Sprintf("%s #%d", m.ToolName, m.ID))
					}
				}
				lostSome = lostSome || len(lost) > 0
				if len(lost) > 0 && len(stale) > 0 {
					slices.Sort(lost)
					t.Errorf("grid %d, %s, budget %d: newest %v not sent in full while superseded %v are", step, mode, budget, lost, stale)
				}
			}
			if !lostSome {
				t.Errorf("grid %d, %s: no budget made the turn lose newest state: the test proves nothing", step, mode)
			}
		}
	}
}

// A carry bound that follows what is still true: on a long objective (the lean share of the bound), a compaction in
// the middle of a turn carries the newest result of every tool that turn called — its state, which the model is
// working with — beyond the lean share, while what the turn superseded costs the bound nothing: each tool is called
// three times in the turn, and its two older results are dropped.
func TestLongObjectiveCarriesItsTurnState(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: trade along the spine until told otherwise.")
	for i := range 110 { // 220 rows: past compose.LongObjectiveRows
		h.loop("mine", "{}", fmt.Sprintf(`{"mined":%d}`, i))
	}
	h.user(compose.SourceNudge, "Continue your mission.")
	state := func(tool string, n int) string {
		return fmt.Sprintf(`{"%s":%d,"data":"%s"}`, tool, n, strings.Repeat(tool+" value ", 55))
	}
	tools := []string{"get_status", "get_cargo", "get_ship", "get_skills", "get_missions", "view_orders"}
	for round := range 3 {
		for _, tl := range tools {
			h.loop(tl, "{}", state(tl, round))
		}
	}
	// The turn goes on, longer than the room: markets of station after station.
	for i := range 24 {
		h.loop("view_market", fmt.Sprintf(`{"station":"st_%d"}`, i), state(fmt.Sprintf("market_%d", i), 0))
	}
	p := compose.DefaultPolicy()
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	if n := res.Manifest.Compaction; n == nil || n.Why != "budget" {
		t.Fatalf("the turn did not outgrow the budget: %+v", n)
	}
	out := sent(res)
	for _, tl := range tools {
		if !strings.Contains(out, fmt.Sprintf(`{"%s":2,`, tl)) {
			t.Errorf("the turn's newest %s result is not sent", tl)
		}
		for _, old := range []int{0, 1} {
			if strings.Contains(out, fmt.Sprintf(`{"%s":%d,`, tl, old)) {
				t.Errorf("a superseded %s result is sent", tl)
			}
		}
	}
}
