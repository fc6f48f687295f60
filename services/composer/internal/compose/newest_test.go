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
