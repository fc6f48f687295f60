package compose

import (
	"fmt"
	"math"
	"slices"
)

// Text of the stubs and notes the composer writes itself.
const (
	headerText = "[State carried over from earlier in this session.]"
)

func supersededStub(r *toolResult) string {
	return fmt.Sprintf("[superseded: a newer %s result follows; this one is memory #%d]", r.name, r.mem.ID)
}

func budgetStub(r *toolResult) string {
	return fmt.Sprintf("[compacted to fit the token budget: %s result is memory #%d, %s]", r.name, r.mem.ID, searchHint)
}

// stubIfShorter replaces r's content with stub when the stub has fewer tokens: a stub never makes a message longer.
func (c *composer) stubIfShorter(r *toolResult, stub string, reason Reason) bool {
	if !c.stubShorter(r, stub) {
		return false
	}
	r.content, r.state, r.reason = stub, resStub, reason
	return true
}

// stubShorter reports whether stub would replace r: r is a stored result not yet stubbed, and stub has fewer tokens.
func (c *composer) stubShorter(r *toolResult, stub string) bool {
	if r.mem == nil || r.state == resStub || r.state == resSynthetic {
		return false
	}
	return c.count(stub) < c.resultTokens(r)
}

// classify keys every result by its call and marks, over the whole window, the newest result of each call and of
// each tool, and what would be carried (the newest result of each distinct call since the objective, CarryLimit of
// them newest first, and the newest result of each pinned tool however old): the budget reducer's value order.
func (c *composer) classify(units []*unit, objective int64) {
	c.objective = objective
	seen := make(map[string]int64, 2*len(units)) // key → seq of the loop of the newest result seen so far
	var seenPinned map[string]bool
	seenTool := make(map[string]bool)
	carried := 0
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		for k := len(u.results) - 1; k >= 0; k-- {
			r := u.results[k]
			if r.state == resSynthetic {
				continue
			}
			r.key = c.p.CallKey(r.name, u.calls[k].Arguments)
			if !seenTool[r.tool] {
				seenTool[r.tool], r.toolNewest = true, true
			}
			next, ok := seen[r.key]
			seen[r.key], r.nextSeq = u.seq, next
			if !ok {
				r.newest, r.nextSeq = true, math.MaxInt64
				if r.mem.Seq >= objective && carried < c.p.CarryLimit {
					r.carry = true
					carried++
				}
			}
			if r.pinned {
				if seenPinned == nil {
					seenPinned = make(map[string]bool)
				}
				if !seenPinned[r.pinAs] {
					seenPinned[r.pinAs], r.carry = true, true
				}
			}
		}
	}
}

// loopTokens estimates a loop's tokens with each result's tokens given by result (after the per-result cap).
func (c *composer) loopTokens(u *unit, result func(r *toolResult) int) int {
	n := framingPerMessage + c.count(u.content)
	for k, tc := range u.calls {
		c.capResult(u.results[k], c.p.ToolResultCap, ReasonOverCap)
		n += framingPerCall + c.count(tc.ID) + c.count(tc.Name) + c.count(tc.Arguments)
		n += framingPerMessage + result(u.results[k]) + c.count(u.results[k].name) + c.count(tc.ID)
	}
	return n
}

func (c *composer) unitTokens(u *unit) int {
	if u.kind == kindLoop {
		return c.loopTokens(u, c.resultTokens)
	}
	return framingPerMessage + c.count(u.content)
}

// selectUnits decides what is sent. Units at or above the compaction boundary are sent as they were in the
// previous request; below it, every turn is compacted to what it carries: the mission, carried results with the
// calls that made them, pinned results and the newest replies — decided at the last compaction (boundary.go), so the
// compacted past does not change while the boundary stays. The boundary stays where the previous request had it
// until the request outgrows the high-water mark, then moves up the seq grid (multiples of CompactStep) to the lowest
// point at which the request fits the low-water mark.
func (c *composer) selectUnits(units []*unit, currentStart int, missionUnit *unit, system string) {
	fixedUnit := func(u *unit) bool {
		return u == missionUnit || u.kind == kindNudge || u.virtual || u.kind == kindMission
	}
	firstSeq, fixed := c.fixedTokens(units, fixedUnit)
	// Only rows of the contiguous recent part can be sent as they were: carried rows come and go as newer results
	// supersede them. So the boundary starts at the first grid point of the recent part, and what lies below it is
	// only ever compacted (its full size is never needed, nor counted).
	g0 := firstSeq // the first candidate is where the window starts; the next ones sit on the grid
	if c.recentStart > 0 {
		g0 = max(g0, c.recentStart)
	}
	step := int64(c.p.CompactStep)
	ceiling := compactCeiling(units, currentStart) / step * step // the last candidate
	high, low := c.waterMarks(system)
	var choice boundaryChoice
	if firstSeq != math.MaxInt64 {
		c.carryTokens = c.carryBound(units, units[len(units)-1].seq)
		choice = c.chooseBoundary(boundarySearch{units: units, fixedUnit: fixedUnit, fixed: fixed, g0: g0, ceiling: ceiling,
			high: high, low: low, growth: c.growth(units, fixedUnit, g0), turnStart: turnStart(units, currentStart),
			turnReplies: turnReplies(units, g0)})
	}
	// Recorded even when nothing lies below it: the next request starts from it.
	c.boundary, c.compactSeq = choice.boundary, choice.compactSeq
	c.carryTokens = c.carryBound(units, choice.compactSeq) // as of the compaction, so it holds until the next one
	c.markAsOf(units, choice)
	c.keepUnits(units, currentStart, missionUnit, choice.boundary)
}

// fixedTokens returns the lowest seq of the units that are not fixed (math.MaxInt64: none) and the tokens of those
// that are (the mission, nudges, a virtual prompt), which every request sends whatever the boundary.
func (c *composer) fixedTokens(units []*unit, fixedUnit func(*unit) bool) (firstSeq, fixed int64) {
	firstSeq = math.MaxInt64
	for _, u := range units {
		if fixedUnit(u) {
			fixed += int64(c.unitTokens(u))
		} else {
			firstSeq = min(firstSeq, u.seq)
		}
	}
	return firstSeq, fixed
}

// compactCeiling is the highest seq the boundary may reach (before rounding down to the grid): it may pass
// everything but the current turn's newest loop (or the current turn, when it has none).
func compactCeiling(units []*unit, currentStart int) int64 {
	var lastLoopSeq int64
	for _, u := range units[currentStart:] {
		if u.kind == kindLoop {
			lastLoopSeq = u.seq
		}
	}
	if lastLoopSeq != 0 {
		return lastLoopSeq
	}
	for _, u := range units[currentStart:] {
		if u.seq > 0 {
			return u.seq
		}
	}
	if len(units) > 0 {
		return units[len(units)-1].seq + 1 // only a synthetic nudge: everything before it may be compacted
	}
	return 0
}

// waterMarks returns the high- and low-water marks of the request's history: the boundary stays where the previous
// request had it while the request stays under high (so requests extend each other); else it moves to the lowest
// grid point at or above it whose request fits low. Both leave room for the system prompt, the tools and the reply.
func (c *composer) waterMarks(system string) (high, low int) {
	c.fixedReq = c.count(system) + framingPerMessage + c.toolTokens + framingReply
	room := c.p.TokenBudget - c.fixedReq
	c.room = room
	high = room
	if c.priced() {
		// v3: the boundary stays while the request fits; the price decides the rest. The estimate is a little
		// short of the rendered request (joins, renamed ids), and a request the reducer must trim is no extension
		// either: 1/16 of the room is left for that.
		room -= room / 16
		return room, room
	}
	if c.p.HighWater > 0 {
		high = min(high, c.p.HighWater)
	}
	low = high
	if c.p.LowWater > 0 {
		low = min(low, c.p.LowWater)
	}
	return high, low
}

// keepUnits decides, newest first, which units are sent, in which section and why. Below the boundary every unit
// follows the same rules whichever turn it belongs to, so a new turn beginning does not change the compacted past;
// and what is kept there is exactly what the memory service returns for the memories before the recent part once
// that part starts at the boundary (carried results with their calls, pinned results, the newest replies), so the
// compacted past stays the same when the window moves up to it.
func (c *composer) keepUnits(units []*unit, currentStart int, missionUnit *unit, boundary int64) {
	replies := 0
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		current := i >= currentStart
		switch {
		case u == missionUnit && !current:
			u.keep, u.section, u.reason = true, secMission, ReasonMission
		case u == missionUnit:
			u.keep, u.section, u.reason = true, secCurrent, ReasonCurrentTurn
		case u.kind == kindNudge || u.virtual:
			u.keep, u.section, u.reason = true, secSynthetic, ReasonCurrentTurn // nudges are the composer's words until stored
		case u.seq >= boundary && current:
			u.keep, u.section, u.reason = true, secCurrent, ReasonCurrentTurn
		case u.seq >= boundary:
			u.keep, u.section, u.reason = true, secHistory, ReasonLive
		default:
			c.noteUncarried(u)
			replies = c.compactUnit(u, current, replies)
		}
	}
}

// compactUnit decides what u, below the boundary, carries: a loop its carried results with their calls (or
// nothing), a reply since the objective itself (the newest ReplyLimit of them, cut to the reply cap), anything else
// nothing. replies counts the replies kept so far, newest first; it returns the new count.
func (c *composer) compactUnit(u *unit, current bool, replies int) int {
	sec := secCarried
	if current {
		sec = secCurrent
	}
	switch {
	case u.kind == kindLoop && u.carriesB():
		u.keep, u.section, u.reason = true, sec, ReasonCarriedCall
		c.keepCarriedCalls(u)
	case u.kind == kindLoop:
		u.section, u.reason = secHistory, u.dropReason(c.objective)
	case u.kind == kindText && u.seq >= c.objective && replies < c.p.ReplyLimit:
		replies++
		u.keep, u.section, u.reason = true, sec, ReasonEarlierReply
		c.capReply(u)
	case !u.keep: // a prompt kept for a history loop keeps its reason
		u.section, u.reason = secHistory, ReasonCompressed
	}
	return replies
}

// carriesB reports whether u, below the boundary, carries a result (markAsOf).
func (u *unit) carriesB() bool {
	for _, r := range u.results {
		if r.carryB {
			return true
		}
	}
	return false
}

// dropReason says why an earlier loop below the boundary is not sent: none of its results is the newest of its
// call, or those that are come from before the objective, or are beyond the carry limit.
func (u *unit) dropReason(objective int64) Reason {
	reason := ReasonAllSuperseded
	for _, r := range u.results {
		switch {
		case !r.newestB || r.mem == nil:
		case r.mem.Seq < objective:
			reason = ReasonBeforeObjective
		default:
			return ReasonOverCarryLimit
		}
	}
	if reason == ReasonAllSuperseded && !u.complete() {
		return ReasonCompressed // an interrupted loop: nothing to carry
	}
	return reason
}

// keepCarriedCalls leaves in u, a loop below the boundary, only the calls whose results are carried: what the memory
// service returns for it once the window starts at the boundary (a carried result with the assistant memory that
// made the call). The other results are dropped with their calls, so no stub is needed to answer them.
func (c *composer) keepCarriedCalls(u *unit) {
	calls, results := u.calls[:0:0], u.results[:0:0]
	for k, r := range u.results {
		switch {
		case r.carryB:
			r.reason = ReasonCarried
			if r.pinned {
				r.reason = ReasonCarriedPinned
			}
			calls, results = append(calls, u.calls[k]), append(results, r)
		case r.mem != nil:
			reason := ReasonSuperseded
			if r.newestB {
				reason = ReasonOverCarryLimit
			}
			c.items[r.idx] = itemOf(r.mem, Dropped, reason)
		}
	}
	u.calls, u.results = calls, results
	if c.priced() {
		u.content = "" // v3: below the boundary a loop carries state, not the words the model wrote with its calls
	}
}

// capReply cuts an earlier reply to the reply cap, pointing at the memory that holds it whole.
func (c *composer) capReply(u *unit) {
	n := c.count(u.content)
	if n <= c.p.ReplyCap {
		return
	}
	notice := fmt.Sprintf("…[cut: the whole reply is memory #%d]", u.mem.ID)
	keep := c.p.ReplyCap - c.count(notice) - 1
	for range 8 {
		keep = max(keep, 0)
		content := u.content[:c.tok.PrefixLen(u.content, keep)] + notice
		if m := c.count(content); m <= c.p.ReplyCap || keep == 0 {
			u.content, u.capped = content, true
			return
		} else {
			keep -= m - c.p.ReplyCap
		}
	}
	u.content, u.capped = notice, true
}

// promptBefore puts a synthetic user line first when kept earlier units would otherwise come before any user
// message (carried state from before the mission, a window that starts inside an earlier turn): the first message
// after the system prompt must be a user message.
func (c *composer) promptBefore(units []*unit) []*unit {
	for _, u := range units {
		if !u.keep {
			continue
		}
		switch u.kind {
		case kindUser, kindMission, kindNudge, kindIndex:
			return units
		case kindLoop, kindText:
			h := &unit{kind: kindHeader, idx: -1, turn: -1, content: headerText, keep: true, section: secSynthetic}
			out := make([]*unit, 0, len(units)+1)
			return append(append(out, h), units...)
		}
	}
	return units
}

// needPromptBefore drops kept earlier-turn replies and loops that no user message precedes (after the budget took
// their prompt): the first message after the system prompt must be a user message.
func needPromptBefore(units []*unit) {
	sawUser := false
	for _, u := range units {
		if !u.keep {
			continue
		}
		switch u.kind {
		case kindUser, kindMission, kindNudge, kindHeader, kindIndex:
			sawUser = true
		case kindLoop, kindText:
			if !sawUser && (u.section == secHistory || u.section == secCarried) {
				u.keep, u.reason = false, ReasonNoPromptBefore
			}
		}
	}
}

// priced reports whether the boundary's moves are decided by price (composition v3).
func (c *composer) priced() bool { return c.p.Compaction != CompactionWatermark }

// growth is the mysis's own growth per request: the tokens of the window's recent units (from g0 on) per LLM
// reply among them (each loop or text reply is one request's output, with the results it brought). With no reply
// in view, a typical loop's size.
func (c *composer) growth(units []*unit, fixedUnit func(*unit) bool, g0 int64) int {
	const typical = 200
	if !c.priced() {
		return 0
	}
	tokens, replies := 0, 0
	for _, u := range units {
		// Replies (with the results they brought) only: a prompt is the same request's whether it is stored yet
		// (a persisted nudge) or not (the composer's own), and the price must not depend on which.
		if fixedUnit(u) || u.seq < g0 || (u.kind != kindLoop && u.kind != kindText) {
			continue
		}
		tokens += c.unitTokens(u)
		if u.kind == kindLoop || u.kind == kindText {
			replies++
		}
	}
	if replies == 0 {
		return typical
	}
	return max(tokens/replies, 1)
}

// turnStart reports whether the request is the first of its turn: the current turn holds no reply yet.
func turnStart(units []*unit, currentStart int) bool {
	for _, u := range units[currentStart:] {
		if u.kind == kindLoop || u.kind == kindText {
			return false
		}
	}
	return true
}

// turnReplies is the mean number of replies (LLM requests) per turn among the window's turns from g0 on that are
// over, at least 1; with none in view, 10.
func turnReplies(units []*unit, g0 int64) int {
	var turns, replies int
	last := int64(-1)
	for _, u := range units {
		if u.seq < g0 || u.idx < 0 {
			continue
		}
		if u.turn != last {
			turns++
			last = u.turn
		}
		if u.kind == kindLoop || u.kind == kindText {
			replies++
		}
	}
	if turns <= 1 {
		return 10
	}
	return max(replies/turns, 1)
}

// LongObjectiveRows is the age (in memory seqs since the objective) past which priced compaction carries the lean
// share of the carry bound: an objective that old has gathered more state than the budget can carry and still let
// requests grow as extensions of each other for long, and every carried token is re-read on every request and
// rewritten at every compaction, which comes the sooner the more is carried.
const LongObjectiveRows = 200

// leanCarryShare is the share of the carry bound a long objective carries (priced compaction). The carried results
// are the smallest tools' first, so less than half the bound still holds most tools' state.
const leanCarryShare = 0.45

// turnCarryShare is how far from the lean share towards the full bound a long objective's bound rises to carry the
// state of the compaction's newest turn: the newest result of each tool called in it. That state is what the model
// is working with; dropping it is expensive (the model has to call for it again, and meanwhile the request may still
// send an older, superseded result of the same turn), while superseded results cost a compaction nothing to drop.
const turnCarryShare = 0.5

// YoungObjectiveRows is the age (in memory seqs since the objective) up to which priced compaction carries the young
// bound: an objective that young has gathered little state, all of which a compaction the budget forces can keep
// (youngCarryFactor times the carry bound, at most youngRoomShare of the room) — so short objectives, the usual ones
// in recorded play, lose none of their state to the carry bound, while at least 35% of the room is left for the
// requests to grow as extensions of each other (half under the full bound).
const YoungObjectiveRows = 120

const (
	// youngCarryFactor is how many times Policy.CarryTokens a young objective may carry.
	youngCarryFactor = 1.5
	// youngRoomShare is the most of the room a young objective's carried state may take.
	youngRoomShare = 0.65
)

// carryBound is the carry bound of a compaction decided as of seq asOf (0: no bound). The full bound is
// Policy.CarryTokens, at most half the room the budget leaves the messages, so however little the tool schemas leave,
// requests can still grow as pure extensions between two compactions instead of compacting on every request. Under
// priced compaction an objective at most YoungObjectiveRows old has the young bound instead, and one older than
// LongObjectiveRows the lean share of the full bound plus the newest turn's state (turnState), at most
// turnCarryShare of the way to the full bound. The bound follows what is still true: the turn's state counts, what
// it superseded does not.
func (c *composer) carryBound(units []*unit, asOf int64) int {
	if c.p.CarryTokens == 0 {
		return 0
	}
	full := max(min(c.p.CarryTokens, c.room/2), 1)
	if !c.priced() {
		return full
	}
	switch age := replyAsOf(units, asOf) - c.objective; {
	case age <= YoungObjectiveRows:
		return max(min(int(youngCarryFactor*float64(c.p.CarryTokens)), int(youngRoomShare*float64(c.room))), 1)
	case age <= LongObjectiveRows:
		return full
	}
	lean := max(int(leanCarryShare*float64(full)), 1)
	return min(lean+c.turnState(units, asOf), lean+int(turnCarryShare*float64(full-lean)))
}

// turnState is what carrying the newest turn's state as of seq asOf costs against the carry bound: the newest result
// of each tool called in that turn (the newest turn with a tool loop), with its call; pinned results, which the bound
// does not count, aside. Only the newest result of a tool counts, so a tool called again and again in the turn counts
// once. A result below the boundary that the newest as of asOf supersedes is not in a later request's window, and
// does not count either: the bound holds while the compaction does.
func (c *composer) turnState(units []*unit, asOf int64) int {
	turn := compactTurn(units, asOf)
	var buf [16]string
	seen := buf[:0] // the tools counted so far: a turn calls a handful, so a slice beats a map
	n := 0
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		if u.seq > asOf || u.kind != kindLoop {
			continue
		}
		if u.turn != turn {
			break
		}
		for k := len(u.results) - 1; k >= 0; k-- {
			r := u.results[k]
			if r.state == resSynthetic || r.pinned || slices.Contains(seen, r.tool) {
				continue
			}
			seen = append(seen, r.tool)
			n += c.boundTokens(u, k, r)
		}
	}
	return n
}

// replyAsOf is the seq of the newest reply (loop or text) at or before seq asOf: the objective's age does not depend
// on whether the prompt after it is stored yet.
func replyAsOf(units []*unit, asOf int64) int64 {
	var seq int64
	for _, u := range units {
		if (u.kind == kindLoop || u.kind == kindText) && u.seq <= asOf {
			seq = max(seq, u.seq)
		}
	}
	return seq
}
