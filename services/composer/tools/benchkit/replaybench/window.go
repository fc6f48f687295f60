package replaybench

import (
	"encoding/json"
	"slices"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// The memory service's GetComposeWindow, simulated over an in-memory history so that the replay needs no database.
// V1Window is the v1 contract (the newest rows plus the mission); V2Window follows the v2 contract in
// proto/zoea/memory/v1/memory.proto (carried rows before a recent part that holds the whole current turn), with the
// memory service's rules (services/memory/README.md, GetComposeWindow v2) for a well-formed history.

// Mission returns the mysis's mission: its newest commander prompt, or nil.
func Mission(rows []compose.Memory) *compose.Mission {
	for i := len(rows) - 1; i >= 0; i-- {
		if m := rows[i]; IsCommanderPrompt(m) {
			return &compose.Mission{MemoryID: m.ID, Seq: m.Seq, Source: m.Source, SenderID: m.SenderID, Content: m.Content}
		}
	}
	return nil
}

// V1Window is the v1 compose window: the newest n rows.
func V1Window(rows []compose.Memory, n int) []compose.Memory {
	return rows[max(0, len(rows)-n):]
}

// WindowOptions are GetComposeWindowRequest's v2 fields.
type WindowOptions struct {
	Window        int      // recent rows at least
	CarryLimit    int      // distinct calls since the objective whose newest result is carried; 0 = none
	SnapshotTools []string // keyed by tool name alone
	PinnedTools   []string // newest result carried even from before the objective
	ReplyLimit    int      // earlier final text replies since the objective
	MaxTurnRows   int      // bound on the recent part when it is extended to the whole current turn; 0 = 2000
	RecentFrom    int64    // the composer's previous compaction boundary: the recent part reaches back to it too
}

// V2Result is GetComposeWindowResponse's v2 content.
type V2Result struct {
	Memories       []compose.Memory // carried rows, then the recent part, by seq
	Mission        *compose.Mission
	RecentStartSeq int64
	ObjectiveSeq   int64
	TurnTruncated  bool
}

// CallKey is the distinct-call key: tool name, a space and the arguments with object keys sorted and no
// insignificant whitespace (the generator's arguments are plain JSON objects; others are keyed by their text).
func CallKey(name, args string) string {
	var v map[string]any
	if json.Unmarshal([]byte(args), &v) != nil {
		return name + " " + args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return name + " " + args
	}
	return name + " " + string(b)
}

// V2Window returns what the v2 GetComposeWindow returns for a history.
func V2Window(rows []compose.Memory, o WindowOptions) V2Result {
	n := len(rows)
	res := V2Result{Mission: Mission(rows)}
	if n == 0 {
		return res
	}
	if res.Mission != nil {
		res.ObjectiveSeq = res.Mission.Seq
	}
	maxTurn := o.MaxTurnRows
	if maxTurn <= 0 {
		maxTurn = 2000
	}
	start := max(0, n-o.Window)
	first := n - 1 // first row of the current turn
	for first > 0 && rows[first-1].Turn == rows[n-1].Turn {
		first--
	}
	if o.RecentFrom > 0 {
		// The composer's previous boundary replaces the window and turn rules, so the recent part stays put
		// between compactions (bounded by max turn rows like them).
		start = n - 1
		for start > 0 && rows[start-1].Seq >= o.RecentFrom {
			start--
		}
		first = start
	}
	if first < start {
		start = first
		if start < n-maxTurn {
			start, res.TurnTruncated = n-maxTurn, true
		}
	}
	// Start on a loop boundary: back to the call of a result the part would begin with — or, when the turn was cut
	// (the bound is hard), forward past that loop's results, as the memory service does.
	if res.TurnTruncated {
		for start < n-1 && rows[start].Role == chat.RoleTool {
			start++
		}
	}
	for start > 0 && rows[start].Role == chat.RoleTool {
		start--
	}
	res.RecentStartSeq = rows[start].Seq

	carry := map[int]bool{}
	// The newest result of each distinct call since the objective, with the assistant row that made the call.
	callRow := map[string]int{}     // tool_call_id → assistant row index
	callArgs := map[string]string{} // tool_call_id → the call's arguments
	for i := range rows {
		for _, tc := range rows[i].ToolCalls {
			callRow[tc.ID], callArgs[tc.ID] = i, tc.Arguments
		}
	}
	// Carried rows are the state as of the recent part's start: the newest of each call among the rows before it.
	seen := map[string]bool{}
	distinct := 0
	pinned := map[string]bool{}
	for i := start - 1; i >= 0; i-- {
		r := rows[i]
		if r.Role != chat.RoleTool {
			continue
		}
		if slices.Contains(o.PinnedTools, r.ToolName) && !pinned[r.ToolName] {
			pinned[r.ToolName] = true
			carry[i] = true
		}
		if r.Seq <= res.ObjectiveSeq || o.CarryLimit == 0 {
			continue
		}
		key := r.ToolName
		if !slices.Contains(o.SnapshotTools, r.ToolName) {
			key = CallKey(r.ToolName, callArgs[r.ToolCallID])
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if distinct < o.CarryLimit {
			carry[i] = true
			distinct++
		}
	}
	replies := 0
	for i := start - 1; i >= 0 && replies < o.ReplyLimit; i-- {
		r := rows[i]
		if r.Seq <= res.ObjectiveSeq {
			break
		}
		if r.Role == chat.RoleAssistant && len(r.ToolCalls) == 0 && r.Content != "" {
			carry[i] = true
			replies++
		}
	}
	for i := range carry { // with the assistant row that made each carried call
		if rows[i].Role == chat.RoleTool {
			if a, ok := callRow[rows[i].ToolCallID]; ok {
				carry[a] = true
			}
		}
	}
	idx := make([]int, 0, len(carry))
	for i := range carry {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		res.Memories = append(res.Memories, rows[i])
	}
	res.Memories = append(res.Memories, rows[start:]...)
	return res
}
