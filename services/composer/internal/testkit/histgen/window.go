package histgen

import (
	"slices"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Window is a v2 compose window as the memory service serves it (zoea.memory.v1.GetComposeWindowResponse).
type Window struct {
	Rows           []compose.Memory
	RecentStartSeq int64
	ObjectiveSeq   int64
	TurnTruncated  bool
}

// ComposeWindow emulates the memory service's v2 GetComposeWindow over a whole history (seq order, newest last), so
// tests and benchmarks can compose what production composes without a database: the recent, contiguous rows (the
// last p.ScanWindow, reaching back to the start of the current turn, at most p.MaxTurnRows, starting on a loop
// boundary), preceded by carried rows — for each distinct call since objectiveSeq (p.CarryLimit, newest first) the
// newest result with the assistant memory that made the call, the newest result of each pinned tool even from
// before the objective, and up to p.ReplyLimit earlier turns' final text replies since the objective.
func ComposeWindow(all []compose.Memory, p compose.Policy, objectiveSeq int64) Window {
	return ComposeWindowFrom(all, p, objectiveSeq, 0)
}

// ComposeWindowFrom is ComposeWindow with GetComposeWindowRequest.recent_from_seq: the recent part reaches back to
// from as well (the composer's previous boundary; 0 = none).
func ComposeWindowFrom(all []compose.Memory, p compose.Policy, objectiveSeq, from int64) Window {
	n := len(all)
	if n == 0 {
		return Window{ObjectiveSeq: objectiveSeq}
	}
	maxRows := p.MaxTurnRows
	if maxRows <= 0 {
		maxRows = 2000
	}
	r := max(0, n-p.ScanWindow)
	ts := n - 1
	for ts > 0 && all[ts-1].Turn == all[n-1].Turn {
		ts--
	}
	truncated := false
	r = min(r, ts)
	if from > 0 { // the composer's previous boundary replaces the window and turn rules
		r = n - 1
		for r > 0 && all[r-1].Seq >= from {
			r--
		}
	}
	if n-r > maxRows {
		r, truncated = n-maxRows, true
	}
	for r > 0 && all[r].Role == chat.RoleTool {
		r--
	}
	// The call each result answers: the newest earlier assistant call with its id.
	callAt := make(map[string]int)
	args := make([]string, n)
	caller := make([]int, n)
	for i, m := range all {
		caller[i] = -1
		switch m.Role {
		case chat.RoleAssistant:
			for _, tc := range m.ToolCalls {
				callAt[tc.ID] = i
			}
		case chat.RoleTool:
			if at, ok := callAt[m.ToolCallID]; ok {
				caller[i] = at
				for _, tc := range all[at].ToolCalls {
					if tc.ID == m.ToolCallID {
						args[i] = tc.Arguments
					}
				}
			}
		}
	}
	// The memory service keys calls by tool name (Policy.WindowTools): a superset of what the composer carries.
	wp := p
	wp.SnapshotTools, wp.PinnedTools = p.WindowTools()
	keep := make(map[int]bool)
	seenKey := make(map[string]bool)
	seenPinned := make(map[string]bool)
	carried := 0
	// The state as of the recent part's start: the newest of each call among the rows before it.
	for i := r - 1; i >= 0; i-- {
		m := all[i]
		if m.Role != chat.RoleTool || caller[i] < 0 {
			continue
		}
		if slices.Contains(wp.PinnedTools, m.ToolName) && !seenPinned[m.ToolName] {
			seenPinned[m.ToolName] = true
			keep[i], keep[caller[i]] = true, true
		}
		k := wp.CallKey(m.ToolName, args[i])
		if seenKey[k] || m.Seq < objectiveSeq {
			continue
		}
		seenKey[k] = true
		if carried >= p.CarryLimit {
			continue
		}
		carried++
		keep[i], keep[caller[i]] = true, true
	}
	// The newest ReplyLimit assistant text replies since the objective before the recent part, as the memory
	// service returns them.
	replies := 0
	for i := r - 1; i >= 0 && replies < p.ReplyLimit; i-- {
		m := all[i]
		if m.Seq <= objectiveSeq {
			break
		}
		if m.Role == chat.RoleAssistant && len(m.ToolCalls) == 0 && m.Content != "" {
			replies++
			keep[i] = true
		}
	}
	w := Window{RecentStartSeq: all[r].Seq, ObjectiveSeq: objectiveSeq, TurnTruncated: truncated}
	for i := range all[:r] {
		if keep[i] {
			w.Rows = append(w.Rows, all[i])
		}
	}
	w.Rows = append(w.Rows, all[r:]...)
	return w
}
