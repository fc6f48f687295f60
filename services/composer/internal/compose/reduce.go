package compose

import (
	"cmp"
	"math"
	"slices"
)

// The budget reducer takes tokens where they are worth least. Its stages run in order; a stage that has nothing left
// hands over to the next one. The mission, the current turn's prompt and the newest loop are never dropped; the
// newest loop's results are only cut shorter, last.
//
// Within a stage, sacrifices go oldest first and in steps of the seq grid (Policy.CompactStep): a step applies the
// stage to everything below the lowest grid point that saves what the request is over plus a margin (budgetSlack).
// Successive requests of a growing history then pick the same grid point until the margin is used up, so they
// extend each other instead of each compressing one more result (prompt caches stay warm).
type budgetStage struct {
	reason Reason
	// state: the stage compresses the newest result of some tool (or a pinned one); see stageOrder.
	state bool
	// actions lists what the stage may sacrifice now.
	actions func(r *reducer, reason Reason) []action
}

var budgetStages = []budgetStage{
	{ReasonBudgetSuperseded, false, (*reducer).supersededResults},   // superseded results become stubs
	{ReasonBudgetSupersededLoop, false, (*reducer).supersededLoops}, // loops whose every result is superseded
	{ReasonBudgetText, false, (*reducer).text},                      // replies and earlier prompts
	{ReasonBudgetOtherCall, false, (*reducer).otherCallStubs},       // results a newer call of their tool follows:
	{ReasonBudgetOtherCall, false, (*reducer).otherCallLoops},       // stubbed, then their loops dropped
	{ReasonBudgetOlderState, true, (*reducer).olderStateStubs},      // earlier turns' state: stubbed,
	{ReasonBudgetOlderState, true, (*reducer).olderStateLoops},      // then dropped
	{ReasonBudgetTurnLoop, true, (*reducer).turnStubs},              // the current turn's early loops: stubbed,
	{ReasonBudgetTurnLoop, true, (*reducer).turnLoops},              // then dropped
	{ReasonBudgetPinned, true, (*reducer).pinnedStubs},              // login/session results: stubbed,
	{ReasonBudgetPinned, true, (*reducer).pinnedLoops},              // then dropped
}

// budgetSlack is the margin a reduction step frees beyond what the request is over, as a share of the budget.
const budgetSlack = 8

// action is one possible sacrifice: it is applied when the step's grid point is above seq.
type action struct {
	seq   int64
	save  int
	apply func() bool // reports whether it changed anything
	// anyCell: the action may run in the first pass even inside the newest grid cell (a superseded result of the
	// current turn: the newest state of every call goes before its older results, however recent they are).
	anyCell bool
}

type reducer struct {
	c         *composer
	units     []*unit
	pos       int // index in stageOrder
	pass      int
	shrinkCap int
}

// step runs the stages twice: first leaving alone the newest grid cell (where each new loop lands, so what it
// supersedes waits for the cell to close), then, if that was not enough, everything.
func (r *reducer) step(need int) bool {
	for r.pos < len(stageOrder) {
		sp := stageOrder[r.pos]
		st := budgetStages[sp.stage]
		r.pass = sp.pass
		if r.applyStep(st.actions(r, st.reason), need) {
			return true
		}
		r.pos++
	}
	return r.shrinkNewest()
}

// stageOrder is the order the reducer tries (stage, pass) pairs in: the stages that take no newest state
// (superseded results, text, older calls of a tool) first outside the newest grid cell, then everywhere; only then the
// state stages, each first outside the newest cell, then everywhere. So the newest result of a tool is never
// compressed while an older call, a superseded result or text is left anywhere, and what a new loop supersedes
// waits for its cell to close when older material can pay.
var stageOrder = func() []stagePass {
	var o []stagePass
	for pass := range 2 {
		for i, st := range budgetStages {
			if !st.state {
				o = append(o, stagePass{i, pass})
			}
		}
	}
	for i, st := range budgetStages {
		if st.state {
			o = append(o, stagePass{i, 0}, stagePass{i, 1})
		}
	}
	return o
}()

type stagePass struct{ stage, pass int }

// applyStep applies every action below the lowest grid point whose actions save need plus the slack (all of them
// when none does). It reports whether anything changed.
func (r *reducer) applyStep(acts []action, need int) bool {
	if len(acts) == 0 {
		return false
	}
	step := int64(r.c.p.CompactStep)
	grid := func(a action) int64 { return (a.seq/step + 1) * step }
	slices.SortStableFunc(acts, func(a, b action) int { return cmp.Compare(grid(a), grid(b)) })
	ceiling := int64(math.MaxInt64)
	if r.pass == 0 {
		cell := r.newestCell(step)
		acts = slices.DeleteFunc(acts, func(a action) bool { return grid(a) > cell && !a.anyCell })
		if len(acts) == 0 {
			return false
		}
		ceiling = max(cell, grid(acts[len(acts)-1]))
	}
	limit := lowestSufficient(acts, grid, need+r.c.p.TokenBudget/budgetSlack, ceiling)
	changed := false
	for _, a := range acts {
		if grid(a) <= limit && a.apply() {
			changed = true
		}
	}
	return changed // a step that changes nothing hands over to the next stage: the reducer always ends
}

// newestCell returns the start of the newest grid cell: the grid point at or below the newest unit's seq.
func (r *reducer) newestCell(step int64) int64 {
	var newest int64
	for _, u := range r.units {
		newest = max(newest, u.seq)
	}
	return newest / step * step
}

// lowestSufficient returns the lowest grid point whose actions (acts, sorted by grid point) together save want
// tokens, or ceiling when none does.
func lowestSufficient(acts []action, grid func(action) int64, want int, ceiling int64) int64 {
	saved := 0
	for i, a := range acts {
		saved += a.save
		if saved >= want && (i+1 == len(acts) || grid(acts[i+1]) != grid(a)) {
			return grid(a)
		}
	}
	return ceiling
}

// protected reports units no stage may drop: prompts that frame the request and the newest loop.
func (r *reducer) protected(u *unit) bool {
	switch u.kind {
	case kindMission, kindNudge, kindHeader, kindIndex:
		return true
	case kindUser:
		return u.section == secMission || u.section == secSynthetic || (u.section == secCurrent && u.isOpener())
	}
	return u == r.newestLoop()
}

func (r *reducer) newestLoop() *unit {
	var last, lastCurrent *unit
	for _, u := range r.units {
		if u.keep && u.kind == kindLoop {
			last = u
			if u.section == secCurrent {
				lastCurrent = u
			}
		}
	}
	if lastCurrent != nil {
		return lastCurrent
	}
	return last
}

func isCurrent(u *unit) bool { return u.section == secCurrent || u.section == secSynthetic }

func (r *reducer) dropAction(u *unit, reason Reason) action {
	return action{seq: u.seq, save: r.c.unitTokens(u), apply: func() bool {
		if !u.keep {
			return false
		}
		u.keep, u.reason = false, reason
		return true
	}}
}

// stubActions lists the stubs shorter than the results they replace, for the results ok selects.
func (r *reducer) stubActions(acts []action, u *unit, reason Reason, superseded bool, ok func(*toolResult) bool) []action {
	for _, res := range u.results {
		if res.mem == nil || res.state == resStub || res.state == resSynthetic || !ok(res) {
			continue
		}
		text := budgetStub(res)
		seq := res.mem.Seq
		if superseded {
			text, seq = supersededStub(res), max(seq, res.nextSeq)
		}
		if !r.c.stubShorter(res, text) {
			continue
		}
		save := r.c.resultTokens(res) - r.c.count(text)
		acts = append(acts, action{seq: seq, save: save, apply: func() bool { return r.c.stubIfShorter(res, text, reason) }})
	}
	return acts
}

// supersededResults: a result is stubbed once the grid point is above the newer result that supersedes it, so the
// stub and what supersedes it move below the boundary together. In the current turn it is stubbed even when what
// supersedes it lies in the newest grid cell: a turn longer than the room gives up its older results of a call
// before the newest result of any other call, however recent those older results are.
func (r *reducer) supersededResults(reason Reason) []action {
	var acts []action
	for _, u := range r.units {
		if u.keep {
			n := len(acts)
			acts = r.stubActions(acts, u, reason, true, func(res *toolResult) bool { return !res.newest })
			if isCurrent(u) {
				for i := n; i < len(acts); i++ {
					acts[i].anyCell = true
				}
			}
		}
	}
	return acts
}

func (r *reducer) supersededLoops(reason Reason) []action {
	var acts []action
	for _, u := range r.units {
		if !u.keep || u.kind != kindLoop || r.protected(u) {
			continue
		}
		all, last := true, u.seq
		for _, res := range u.results {
			if res.newest || res.carry {
				all = false
			}
			last = max(last, res.nextSeq)
		}
		if all {
			a := r.dropAction(u, reason)
			a.seq = last
			acts = append(acts, a)
		}
	}
	return acts
}

func (r *reducer) text(reason Reason) []action {
	var acts []action
	sawUser := false
	for _, u := range r.units {
		if !u.keep {
			continue
		}
		switch {
		case u.kind == kindText && !r.protected(u):
			acts = append(acts, r.dropAction(u, reason))
		case u.kind == kindUser && sawUser && !r.protected(u):
			acts = append(acts, r.dropAction(u, reason)) // an earlier prompt, after another user message
		case u.kind == kindUser || u.kind == kindMission || u.kind == kindNudge || u.kind == kindHeader || u.kind == kindIndex:
			sawUser = true
		}
	}
	return acts
}

func (r *reducer) loopStubs(reason Reason, pinned bool, pick func(*unit) bool) []action {
	var acts []action
	for _, u := range r.units {
		if u.keep && u.kind == kindLoop && !r.protected(u) && pick(u) {
			acts = r.stubActions(acts, u, reason, false, func(res *toolResult) bool { return res.pinned == pinned })
		}
	}
	return acts
}

func (r *reducer) loopDrops(reason Reason, pinned bool, pick func(*unit) bool) []action {
	var acts []action
	for _, u := range r.units {
		if u.keep && u.kind == kindLoop && !r.protected(u) && pick(u) && (pinned || !u.hasPinned()) {
			acts = append(acts, r.dropAction(u, reason))
		}
	}
	return acts
}

// otherCallStubs: results that are the newest of their call but not of their tool (an earlier get_system of another
// system, say) — the model's latest view of each tool is worth more per token, so these go before any of it.
func (r *reducer) otherCallStubs(reason Reason) []action {
	var acts []action
	for _, u := range r.units {
		if u.keep && u.kind == kindLoop && !r.protected(u) {
			// A superseded result (same call) is the first stage's, stubbed as superseded when its cell closes.
			acts = r.stubActions(acts, u, reason, false, func(res *toolResult) bool {
				return !res.pinned && !res.toolNewest && res.newest
			})
		}
	}
	return acts
}

// otherCallLoops drops the loops none of whose results is the newest of its tool or pinned.
func (r *reducer) otherCallLoops(reason Reason) []action {
	var acts []action
	for _, u := range r.units {
		if !u.keep || u.kind != kindLoop || r.protected(u) {
			continue
		}
		all, superseded := true, true
		for _, res := range u.results {
			if res.toolNewest || res.pinned {
				all = false
			}
			if res.newest {
				superseded = false
			}
		}
		if all && !superseded { // a loop of superseded results only is the second stage's
			acts = append(acts, r.dropAction(u, reason))
		}
	}
	return acts
}

func notCurrent(u *unit) bool { return !isCurrent(u) }
func anyUnit(*unit) bool      { return true }

func (r *reducer) olderStateStubs(reason Reason) []action {
	return r.loopStubs(reason, false, notCurrent)
}
func (r *reducer) olderStateLoops(reason Reason) []action {
	return r.loopDrops(reason, false, notCurrent)
}
func (r *reducer) turnStubs(reason Reason) []action   { return r.loopStubs(reason, false, isCurrent) }
func (r *reducer) turnLoops(reason Reason) []action   { return r.loopDrops(reason, false, isCurrent) }
func (r *reducer) pinnedStubs(reason Reason) []action { return r.loopStubs(reason, true, anyUnit) }
func (r *reducer) pinnedLoops(reason Reason) []action { return r.loopDrops(reason, true, anyUnit) }

// shrinkNewest cuts the newest loop's results ever shorter, the last resort.
func (r *reducer) shrinkNewest() bool {
	last := r.newestLoop()
	if last == nil {
		return false
	}
	if r.shrinkCap == 0 {
		r.shrinkCap = r.c.p.ToolResultCap
	}
	r.shrinkCap /= 2
	if r.shrinkCap < MinToolResultCap {
		return false
	}
	for _, res := range last.results {
		r.c.capResult(res, r.shrinkCap, ReasonBudget)
	}
	return true
}
