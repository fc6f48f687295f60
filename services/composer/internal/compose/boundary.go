package compose

import (
	"math"
	"slices"
)

// The compaction boundary and the state it carries.
//
// A request is: system prompt, mission, the compacted past (everything below the boundary, reduced to the state it
// carries) and the live part (everything from the boundary on, as stored). The compacted past is decided when the
// boundary moves, by what was known then — the compaction seq, the newest memory at that moment: below the boundary
// it carries the newest result of each distinct call that nothing up to the compaction seq superseded. A result that
// arrives later does not change it; it lands in the live part. So while the boundary stays, each request is the
// previous one plus what happened since — a pure extension that providers serve from their prompt cache — and the
// boundary moves only when the request outgrows the high-water mark, in one step down to the low-water mark
// (hysteresis), where the next stretch of pure extensions begins. The caller remembers the pair (Manifest.Boundary,
// Manifest.CompactSeq) and passes it back (Input.PrevBoundary, Input.PrevCompactSeq).

// pinKey keys a pinned tool's results by the policy entry that pins them (a tool, or a tool and action): its newest
// result is carried however old, whatever its arguments.
func pinKey(name string) string { return "\x00pin " + name }

func (r *toolResult) asOfKey() string {
	if r.pinned {
		return pinKey(r.pinAs)
	}
	return r.key
}

// eligible reports whether r may be carried below the boundary: a stored result since the objective, or a pinned one.
func (c *composer) eligible(r *toolResult) bool {
	return r.mem != nil && r.state != resSynthetic && (r.mem.Seq >= c.objective || r.pinned)
}

// callTokens is what one call of a loop costs besides its result.
func (c *composer) callTokens(u *unit, k int) int {
	tc := u.calls[k]
	return framingPerCall + c.count(tc.ID) + c.count(tc.Name) + c.count(tc.Arguments) +
		framingPerMessage + c.count(u.results[k].name) + c.count(tc.ID)
}

// boundTokens is what carrying r, the result of u's call k, costs against the carry bound: the result and its call,
// an action-dispatched call (MCP v2's spacemolt with {"action":"get_status"}) counted as the flat call it stands for
// (get_status with {}). The call is sent as it was made; the bound only does not charge the dispatch, so the same
// play carries the same results on either endpoint.
func (c *composer) boundTokens(u *unit, k int, r *toolResult) int {
	n := c.resultTokens(r) + c.callTokens(u, k)
	if len(r.tool) <= len(r.name)+1 {
		return n
	}
	action, args := r.tool[len(r.name)+1:], u.calls[k].Arguments
	return n - 2*c.count(r.name) - c.count(args) + 2*c.count(action) + c.count(withoutAction(args))
}

// stubTokens is what r costs once superseded: its stub, unless the stub would be longer.
func (c *composer) stubTokens(r *toolResult) int {
	n := c.resultTokens(r)
	if r.mem == nil || r.state == resStub || r.state == resSynthetic {
		return n
	}
	return min(n, c.count(supersededStub(r)))
}

// newestAsOf marks, for every result, whether no result of the same call (pinned: of the same tool) up to seq
// asOf follows it. It returns the marks indexed like units and their results.
func newestAsOf(units []*unit, asOf int64) [][]bool {
	marks := make([][]bool, len(units))
	seen := make(map[string]bool, len(units))
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		marks[i] = make([]bool, len(u.results))
		if u.seq > asOf {
			continue
		}
		for k := len(u.results) - 1; k >= 0; k-- {
			r := u.results[k]
			if r.state == resSynthetic {
				continue
			}
			if key := r.asOfKey(); !seen[key] {
				seen[key], marks[i][k] = true, true
			}
		}
	}
	return marks
}

// compactCost is what unit u costs below the boundary, and how much of it is carried state that Policy.CarryTokens
// bounds (pinned results are not); newest marks u's results that are the newest of their call.
func (c *composer) compactCost(u *unit, newest []bool) (cost, state int) {
	switch u.kind {
	case kindLoop:
		pinned := false
		n := framingPerMessage
		if !c.priced() {
			n += c.count(u.content) // v3 sends a carried loop without its text (keepCarriedCalls)
		}
		for k, r := range u.results {
			switch {
			case newest[k] && r.pinned && c.eligible(r):
				pinned = true
				n += c.callTokens(u, k) + c.resultTokens(r)
			case newest[k] && c.eligible(r) && c.p.CarryLimit > 0:
				state += c.callTokens(u, k) + c.resultTokens(r)
			default:
				n += c.callTokens(u, k) + c.stubTokens(r)
			}
		}
		if !pinned && state == 0 {
			return 0, 0
		}
		return n + state, state
	case kindText:
		if u.seq >= c.objective && c.p.ReplyLimit > 0 {
			return min(c.unitTokens(u), framingPerMessage+c.p.ReplyCap), 0
		}
	}
	return 0, 0
}

// boundaryChoice is the boundary, the compaction seq the compacted past is decided by, and newestAsOf's marks for
// that seq when chooseBoundary computed them (nil: markAsOf computes them).
type boundaryChoice struct {
	boundary, compactSeq int64
	marks                [][]bool
}

// boundarySearch is what chooseBoundary weighs the candidates by.
type boundarySearch struct {
	units     []*unit
	fixedUnit func(*unit) bool // units every request sends whatever the boundary
	fixed     int64            // their tokens
	// g0 and ceiling are the lowest and the highest candidate.
	g0, ceiling int64
	// high and low are the high- and low-water marks (priced: both the room the budget leaves the history).
	high, low int
	// growth is the mysis's growth per request (priced compaction only); turnStart says the request is the first
	// of its turn, and turnReplies is how many requests a turn takes.
	growth      int
	turnStart   bool
	turnReplies int
}

// chooseBoundary returns the compaction boundary: the previous one (or, with none, the window's first row) while the
// request it gives stays within high, else the lowest candidate (grid points from g0 to ceiling) whose request fits
// low — or, failing that, the one with the smallest request — compacted by what is known now (the newest memory).
// The estimate of a request is the compacted past plus everything above the boundary in full plus the fixed units;
// the budget reducer deals with what an estimate misses.
func (c *composer) chooseBoundary(s boundarySearch) boundaryChoice {
	newestSeq := c.capResults(s.units, s.fixedUnit)
	if s.ceiling < s.g0 {
		return boundaryChoice{s.ceiling, newestSeq, nil}
	}
	// The previous boundary, compacted as it was.
	prev, prevSeq := c.prevBoundary, c.prevCompactSeq
	if prevSeq < prev || prevSeq > newestSeq {
		prevSeq = prev // unknown: decided as of the boundary itself
	}
	fresh := prev < s.g0 || prev > s.ceiling // no usable previous boundary: start from the window's first row
	if c.priced() {
		return c.pricedBoundary(&s, newestSeq, prev, prevSeq, fresh)
	}
	if !fresh {
		marks := newestAsOf(s.units, prevSeq)
		if c.estimateAt(&s, prev, marks) <= int64(s.high) {
			return boundaryChoice{prev, prevSeq, marks}
		}
		s.g0 = max(s.g0, prev)
	}
	return c.sweepBoundary(&s, newestSeq, fresh)
}

// pricedBoundary is chooseBoundary under CompactionPriced (composition v3). The boundary stays where it was while
// the request fits the budget and moving it does not pay; when it moves, it moves as far as it can (the smallest
// request: under any cache model the cheapest next stretch of requests starts from the smallest history) and the
// manifest says why. With no previous boundary, nothing is compacted while the request fits.
func (c *composer) pricedBoundary(s *boundarySearch, newestSeq, prev, prevSeq int64, fresh bool) boundaryChoice {
	room := int64(s.high)
	var stay boundaryChoice
	var before int64
	if fresh {
		stay = boundaryChoice{s.g0, newestSeq, nil}
		stay.marks = newestAsOf(s.units, newestSeq)
		before = c.estimateAt(s, s.g0, stay.marks)
	} else {
		stay = boundaryChoice{prev, prevSeq, newestAsOf(s.units, prevSeq)}
		before = c.estimateAt(s, prev, stay.marks)
		s.g0 = max(s.g0, prev)
	}
	// A compaction breaks the prompt cache in the middle of a turn; at a turn's first request the prompt is new
	// anyway. So within a turn the boundary moves only when the budget forces it; at a turn's start it also moves
	// when the turn would outgrow the budget before it ends, or when moving pays.
	turnWouldOverflow := s.turnStart && before+int64(s.growth*s.turnReplies) > room
	if before <= room && !turnWouldOverflow {
		// Would even compacting everything pay? (The smallest history gives the largest saving for the cheapest
		// rewrite.) If not, no candidate does, and the search is spared.
		if fresh || !s.turnStart || s.growth <= 0 {
			return stay
		}
		if _, ok := c.compactionPays(int(before), 0, c.fixedReq, s.growth, int(room)); !ok {
			return stay
		}
	}
	s.low = -1 // no mark: the smallest request
	moved := c.sweepBoundary(s, newestSeq, false)
	if moved.boundary == stay.boundary && moved.compactSeq == stay.compactSeq {
		return stay
	}
	after := c.estimateAt(s, moved.boundary, moved.marks)
	note, pays := c.compactionPays(int(before), int(after), c.fixedReq, s.growth, int(room))
	switch {
	case before > room:
		note.Why = "budget"
	case turnWouldOverflow && after+int64(s.growth*s.turnReplies) <= room:
		note.Why = "turn" // the turn would outgrow the budget, and fits once compacted: compact at its start
	case !pays:
		return stay // (a turn too long to fit even compacted gains nothing from an extra compaction at its start)
	}
	c.note = &note
	return moved
}

// capResults caps every stored result to the per-result cap and returns the newest seq of the units that are not
// fixed: what is known now.
func (c *composer) capResults(units []*unit, fixedUnit func(*unit) bool) (newestSeq int64) {
	for _, u := range units {
		if !fixedUnit(u) {
			newestSeq = max(newestSeq, u.seq)
		}
		for _, r := range u.results {
			if r.state != resSynthetic {
				c.capResult(r, c.p.ToolResultCap, ReasonOverCap)
			}
		}
	}
	return newestSeq
}

// capState bounds the carried state of a request estimate to the carry bound (carryTokens): total with state tokens
// of it carried becomes total with at most the bound carried.
func (c *composer) capState(total, state int64) int64 {
	if c.p.CarryTokens > 0 && state > int64(c.carryTokens) {
		return total - state + int64(c.carryTokens)
	}
	return total
}

// estimateAt estimates the request with the boundary at boundary, compacted by marks (newestAsOf's).
func (c *composer) estimateAt(s *boundarySearch, boundary int64, marks [][]bool) int64 {
	var total, state int64 = s.fixed, 0
	for i, u := range s.units {
		switch {
		case s.fixedUnit(u):
		case u.seq >= boundary:
			total += int64(c.unitTokens(u))
		default:
			n, st := c.compactCost(u, marks[i])
			total, state = total+int64(n), state+int64(st)
		}
	}
	return c.capState(total, state)
}

// pendingUnit is what a unit that is not fixed costs in full and compacted (and how much of that is carried state).
type pendingUnit struct {
	full, cost, state int
	seq               int64
}

// sweepBoundary chooses a new boundary, compacted as of now (newestSeq): it sweeps the candidates upwards from s.g0,
// moving units from full to compacted, and returns the first whose request fits the low-water mark (fresh, the first
// candidate already when it fits the high-water mark), else the one with the smallest request.
func (c *composer) sweepBoundary(s *boundarySearch, newestSeq int64, fresh bool) boundaryChoice {
	marks := newestAsOf(s.units, newestSeq)
	var total, state int64 = s.fixed, 0
	var order []pendingUnit
	for i, u := range s.units {
		if s.fixedUnit(u) {
			continue
		}
		full := c.unitTokens(u)
		n, st := c.compactCost(u, marks[i])
		order = append(order, pendingUnit{full, n, st, u.seq})
		total += int64(full)
	}
	next := 0
	best, bestEst := s.ceiling, int64(math.MaxInt64)
	for g := s.g0; g <= s.ceiling; g += c.stepFrom(g) {
		for ; next < len(order) && order[next].seq < g; next++ {
			p := order[next]
			total += int64(p.cost - p.full)
			state += int64(p.state)
		}
		est := c.capState(total, state)
		if fresh && g == s.g0 && est <= int64(s.high) {
			return boundaryChoice{g, newestSeq, marks} // nothing to compact yet: grow append-only from here
		}
		if est <= int64(s.low) {
			return boundaryChoice{g, newestSeq, marks}
		}
		if est < bestEst {
			best, bestEst = g, est
		}
	}
	return boundaryChoice{best, newestSeq, marks} // the low-water mark is out of reach: compact as far as it helps
}

// stepFrom is the distance from g to the next grid point (multiples of CompactStep); g itself may sit off the grid
// when it is the previous boundary or the recent part's start.
func (c *composer) stepFrom(g int64) int64 {
	step := int64(c.p.CompactStep)
	return (g/step+1)*step - g
}

// markAsOf decides, for the results below the boundary, which is the newest of its call as of the compaction seq
// (newestB) and which are carried (carryB). Candidates are the newest of each call since the objective (CarryLimit of
// them, newest first) and each pinned tool's newest however old. Pinned results are always carried; then, while
// they fit the carry bound (carryTokens): the newest result of each tool, smallest first — every tool's state counts
// the same, so the smallest buy the most of it (under watermark compaction, v2, the tools called in the compaction's
// newest turn come first, newest first) — and then other calls' newest results (another station's market), newest
// first. Results from the boundary on are all sent (newestB).
func (c *composer) markAsOf(units []*unit, ch boundaryChoice) {
	if ch.marks == nil {
		ch.marks = newestAsOf(units, ch.compactSeq)
	}
	cands := c.carryCandidates(units, ch)
	slices.SortStableFunc(cands, func(a, b carryCand) int {
		if a.rank != b.rank || a.rank == 0 || a.rank == 3 {
			return a.rank - b.rank // newest first
		}
		return a.tokens - b.tokens // smallest first: the most tools' state for the tokens
	})
	c.carryWithin(cands)
}

// carryCand is a result that may be carried below the boundary, with its rank (0: pinned; 1: the newest result of a
// tool called in the compaction's newest turn, under watermark compaction only; 2: the newest result of a tool; 3:
// another call of a tool) and what carrying it costs (the result with its call).
type carryCand struct {
	r      *toolResult
	rank   int
	tokens int
}

// carryCandidates marks newestB on every result from the boundary on and on the newest result of each call below it
// (as of the compaction seq), and returns the candidates to carry among the latter, newest first, ranked.
func (c *composer) carryCandidates(units []*unit, ch boundaryChoice) []carryCand {
	var cands []carryCand
	turn := compactTurn(units, ch.compactSeq)
	if c.priced() {
		// v3: the newest turn's tools get no rank of their own. Every tool's newest result competes smallest first,
		// which on long objectives carries 5–7 points more of the state for the same tokens
		// (docs/benchmarks/2026-11-28-composition-v3.md, "Every tool's state ranked alike").
		turn = noTurn
	}
	seenTool := make(map[string]bool)
	distinct := 0
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		if u.seq >= ch.boundary {
			markLive(u, ch.compactSeq, seenTool)
			continue
		}
		for k := len(u.results) - 1; k >= 0; k-- {
			r := u.results[k]
			if r.state == resSynthetic || !ch.marks[i][k] {
				continue
			}
			r.newestB = true
			rank := toolRank(r, u, turn, seenTool)
			switch {
			case r.pinned:
				rank = 0
			case !c.eligible(r) || distinct >= c.carryHorizon():
				continue
			default:
				distinct++
				r.inHorizon = true
			}
			cands = append(cands, carryCand{r, rank, c.boundTokens(u, k, r)})
		}
	}
	return cands
}

// carryHorizon is how many distinct calls below the boundary (newest first, as of the compaction) the compacted
// past may carry or name. The window holds the newest CarryLimit calls since the objective as of now, so calls made
// after the compaction push the oldest out of it; under priced compaction a quarter of the limit is left for them,
// so the compacted past (and the carried index) stays byte-stable until the next compaction.
func (c *composer) carryHorizon() int {
	if !c.priced() {
		return c.p.CarryLimit
	}
	return c.p.CarryLimit - c.p.CarryLimit/4
}

// noTurn is a turn no unit belongs to: with it, toolRank gives no tool rank 1.
const noTurn = math.MinInt64

// compactTurn is the newest turn with a tool loop as of the compaction seq (a prompt or nudge alone does not move it).
func compactTurn(units []*unit, compactSeq int64) int64 {
	var turn int64
	for _, u := range units {
		if u.kind == kindLoop && u.seq <= compactSeq {
			turn = max(turn, u.turn)
		}
	}
	return turn
}

// markLive marks the results of u, a unit from the boundary on, as sent (newestB), and their tools as seen when they
// were known at the compaction: a tool sent live then needs no carried result first.
func markLive(u *unit, compactSeq int64, seenTool map[string]bool) {
	for _, r := range u.results {
		r.newestB = true
		if u.seq <= compactSeq {
			seenTool[r.tool] = true
		}
	}
}

// toolRank ranks r, the newest result of its call in unit u, by its tool: 1 for the first (newest) result of a tool
// called in turn, 2 for the first result of another tool, 3 for any later one. It marks r's tool seen.
func toolRank(r *toolResult, u *unit, turn int64, seenTool map[string]bool) int {
	if seenTool[r.tool] {
		return 3
	}
	seenTool[r.tool] = true
	if u.turn == turn {
		return 1
	}
	return 2
}

// carryWithin carries the candidates, in order: pinned ones always, the others while they fit the carry bound
// (carryTokens; with no bound, all of them).
func (c *composer) carryWithin(cands []carryCand) {
	left := c.carryTokens
	for _, cd := range cands {
		if c.p.CarryTokens > 0 && cd.rank > 0 {
			if cd.tokens > left {
				continue
			}
			left -= cd.tokens
		}
		cd.r.carryB = true
	}
}
