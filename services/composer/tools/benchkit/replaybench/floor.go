package replaybench

import (
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// BreakFloor is the fewest in-turn prefix breaks any composer can make on a session within a token budget: a lower
// bound for issue 28's "prefix broken within a turn" that does not depend on how a composer compacts.
//
// Within a turn, a request that does not break its prefix is the previous request plus the rows stored since, so it
// grows by them (each tool result counted up to the result cap, as every budgeted composer cuts it). When that
// would exceed the budget, the prefix must break, and the smallest request the composer can then send is what it
// must keep. Breaking as late as possible and then shrinking as far as possible is optimal (a smaller request never
// forces an earlier break), so replaying that rule counts the fewest breaks. Two floors:
//   - None: the composer keeps only the system prompt and the newest loop (every earlier result dropped);
//   - State: it also keeps every state case Coverage counts (the newest result of each tool since the newest
//     commander prompt, with the call that made it), except results above the cap, which no budgeted composer sends
//     whole.
//
// A turn's first request may rewrite everything without counting as a break; the floor then starts the turn at its
// smallest request.
type BreakFloor struct {
	InTurn      int // requests within a turn (not a turn's first)
	None, State int // breaks forced within a turn under each floor
	// StateAfter sums the State floor's request (history rows, system prompt excluded) after each of its breaks.
	StateAfter int
}

func (f *BreakFloor) add(g BreakFloor) {
	f.InTurn += g.InTurn
	f.None += g.None
	f.State += g.State
	f.StateAfter += g.StateAfter
}

// breakFloor replays one session's requests under both floors, for requests of at most budget tokens with
// toolTokens of tool definitions, system prompt system and tool results cut to capTokens.
func breakFloor(s histgen.RealSession, tok Counter, system string, toolTokens, budget, capTokens int) BreakFloor {
	var f BreakFloor
	room := budget - toolTokens - framingReply - MessageTokens(tok, chat.Message{Role: chat.RoleSystem, Content: system})
	cost := make([]int, len(s.Rows))     // each row as a message, its result cut to the cap
	overCap := make([]bool, len(s.Rows)) // a result above the cap
	callCost := map[string]int{}         // a tool call alone in an assistant message, by call id
	for i, r := range s.Rows {
		m := toMessage(r)
		if m.Role == chat.RoleTool {
			n := tok.Count(m.Content)
			cost[i], overCap[i] = MessageTokens(tok, m)-n+min(n, capTokens), n > capTokens
			continue
		}
		cost[i] = MessageTokens(tok, m)
		for _, tc := range r.ToolCalls {
			callCost[tc.ID] = framingPerMessage + framingPerCall + tok.Count(tc.ID) + tok.Count(tc.Name) + tok.Count(tc.Arguments)
		}
	}
	// smallest is the smallest request before row at: the newest loop (the last assistant message with calls and
	// everything after it), and with state, each state case outside it with its call.
	smallest := func(at int, state bool) int {
		loop := at
		for loop > 0 {
			loop--
			if r := s.Rows[loop]; r.Role == chat.RoleAssistant && len(r.ToolCalls) > 0 {
				break
			}
		}
		n := 0
		for i := loop; i < at; i++ {
			n += cost[i]
		}
		if state {
			for _, i := range StateRows(s.Rows[:at]) {
				if i < loop && !overCap[i] {
					n += cost[i] + callCost[s.Rows[i].ToolCallID]
				}
			}
		}
		return n
	}
	var none, state int
	prevAt := -1
	for _, at := range s.Requests {
		if prevAt < 0 || opensTurn(s.Rows[prevAt:at]) {
			none, state = smallest(at, false), smallest(at, true)
			prevAt = at
			continue
		}
		f.InTurn++
		grow := 0
		for i := prevAt; i < at; i++ {
			grow += cost[i]
		}
		if none += grow; none > room {
			f.None++
			none = smallest(at, false)
		}
		if state += grow; state > room {
			f.State++
			state = smallest(at, true)
			f.StateAfter += state
		}
		prevAt = at
	}
	return f
}
