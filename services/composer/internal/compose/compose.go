package compose

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
)

// Counter counts o200k_base tokens; o200k.Counter implements it. Tests may substitute another counter, but
// production composition always uses the real tokenizer.
type Counter interface {
	Count(s string) int
	// PrefixLen is the byte length of the longest prefix of s with at most n tokens, on a rune boundary.
	PrefixLen(s string, n int) int
}

// Compose builds the request for one LLM call. See the package comment for the rules and the runner contract.
func Compose(in Input, p Policy) (Result, error) {
	tok, err := o200k.Load()
	if err != nil {
		return Result{}, err
	}
	return ComposeWith(in, p, tok.NewCounter())
}

// ComposeWith is Compose with an explicit token counter (reused across calls by a caller that wants to keep its
// piece memo warm, or replaced in tests).
func ComposeWith(in Input, p Policy, tok Counter) (Result, error) {
	if err := p.validate(); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.SystemPrompt) == "" {
		return Result{}, ErrNoSystemPrompt
	}
	c := &composer{p: p, tok: tok, counts: make(map[string]int, 4*min(len(in.Window), p.ScanWindow)+16)}
	return c.run(in)
}

// Text the composer writes itself.
const (
	interruptedResult = "[no result recorded: interrupted]"
	searchHint        = "zoea_recall returns it"
	framingPerMessage = 4 // role and delimiters of one message in the provider's chat template
	framingPerCall    = 4 // function-call wrapper of one tool call
	framingReply      = 3 // priming of the assistant reply
)

type composer struct {
	p        Policy
	tok      Counter
	counts   map[string]int // token count per string, for this call only
	items    []Item         // indexed like the trimmed window
	preItems []Item         // rows dropped before indexing: duplicates and rows outside the scan window
	repairs  []Repair
	// missionID is the memory id of a mission sent outside the window (0: a swarm-wide fallback).
	missionID int64
	// recentStart is Input.RecentStartSeq: rows before it are carried rows of a v2 window.
	recentStart int64
	toolTokens  int
	tools       []ToolTokens // each tool's share of toolTokens
	boundary    int64
	objective   int64
	// prevBoundary and prevCompactSeq are Input's; compactSeq is the compaction seq of this request's boundary.
	prevBoundary, prevCompactSeq, compactSeq int64
	// carryTokens is the carry bound in effect (carryBound, as of the compaction); room is what the budget leaves the
	// request's messages once the system prompt, the tool schemas and the reply's framing are counted (waterMarks).
	carryTokens int
	room        int
	// cache is the policy's cache model (the default filled in); cold says the provider's cache has expired since
	// the previous request; note is why the boundary moved in this request (nil: it did not).
	cache CacheModel
	cold  bool
	note  *CompactionNote
	// fixedReq is the request's part that every request sends first: system prompt, tools, framing.
	fixedReq int
	// uncarried lists, newest first, the newest results of their calls below the boundary that the carry bound
	// left out (priced compaction names them in the carried index).
	uncarried []indexEntry
}

func (c *composer) count(s string) int {
	if s == "" {
		return 0
	}
	if n, ok := c.counts[s]; ok {
		return n
	}
	n := c.tok.Count(s)
	c.counts[s] = n
	return n
}

// ---- units: the window regrouped into atomic pieces of conversation ----

type unitKind int

const (
	kindUser    unitKind = iota // a user memory
	kindText                    // an assistant memory without tool calls
	kindLoop                    // an assistant memory with tool calls, plus one result per call
	kindMission                 // a mission that is not one of the window's memories
	kindNudge                   // a synthetic nudge, not to be persisted
	kindHeader                  // a synthetic user line before carried state that no prompt precedes
	kindIndex                   // v3: a synthetic user line naming the state below the boundary that is not carried
)

type section int

const (
	secSystem section = iota
	secMission
	secHistory
	secCarried
	secCurrent
	secSynthetic
)

type resultState int

const (
	resBody resultState = iota
	resStub
	resTruncated
	resSynthetic
)

type toolResult struct {
	mem     *Memory // nil for a synthetic result
	idx     int     // window index of mem
	name    string
	body    string // the stored content
	content string // what is sent
	state   resultState
	reason  Reason
	pinned  bool
	// pinAs is the policy entry that pins the result (the tool, or "tool.action"); "" when not pinned.
	pinAs string
	// tool is what "the same tool" means for the budget's value order and the carry ranks: the tool name, or
	// "tool.action" for a call of an action-dispatched tool (SpaceMolt's MCP v2), whose actions are different
	// commands.
	tool string
	// bodyTokens and sentTokens (-1: not counted yet) spare the call memo the biggest strings of a compose: the
	// body is needed by capResult and, when it is sent whole, by render.
	bodyTokens int
	sentTokens int
	sentFor    string // the content sentTokens counts
	// key is the distinct-call key (Policy.CallKey); newest says no later result in the window has it.
	key    string
	newest bool
	// carry: the newest result of its call since the objective (within CarryLimit), or the newest of a pinned tool.
	carry bool
	// nextSeq is the seq of the loop holding the next newer result with the same key (MaxInt64 when newest).
	nextSeq int64
	// newestB and carryB are newest and carry as of the compaction boundary: among the results below it (markAsOf).
	newestB, carryB bool
	// inHorizon: the result is among the calls the compaction may carry or name (carryHorizon).
	inHorizon bool
	// toolNewest: no later result in the window comes from the same tool (whatever its arguments) — the state the
	// model last saw from that tool, worth more per token than an older call's result with other arguments.
	toolNewest bool
}

// resultTokens returns the tokens of r.content.
func (c *composer) resultTokens(r *toolResult) int {
	if r.sentTokens >= 0 && r.sentFor == r.content {
		return r.sentTokens
	}
	var n int
	if r.content == r.body && r.mem != nil {
		if r.bodyTokens < 0 {
			r.bodyTokens = c.tok.Count(r.body)
		}
		n = r.bodyTokens
	} else {
		n = c.count(r.content)
	}
	r.sentTokens, r.sentFor = n, r.content
	return n
}

type unit struct {
	kind    unitKind
	mem     *Memory
	idx     int // window index of mem; -1 if none
	virtual bool
	seq     int64
	turn    int64
	source  Source
	content string
	calls   []chat.ToolCall
	results []*toolResult
	section section
	keep    bool
	reason  Reason
	capped  bool // an earlier reply cut to the reply cap
}

func (u *unit) isOpener() bool {
	return u.kind == kindUser && u.source.opensTurn()
}

func (u *unit) hasPinned() bool {
	for _, r := range u.results {
		if r.pinned {
			return true
		}
	}
	return false
}

func (u *unit) complete() bool {
	for _, r := range u.results {
		if r.state == resSynthetic {
			return false
		}
	}
	return true
}

// ---- the pipeline ----

// request is one compose's state as it passes through the phases of run.
type request struct {
	in      Input
	window  []Memory // the trimmed window, plus a new turn's nudge once placed
	mission *Mission // nil: none to send
	enc     Encouragement
	nudge   *Nudge     // the nudge that opens a new turn; the runner stores it
	level   NudgeLevel // the nudge level sent: the new turn's, or a fallback nudge's
	units   []*unit
	// currentStart indexes the first unit of the current turn.
	currentStart int
	missionUnit  *unit // the unit that sends the mission, nil without one
}

// run composes one request in phases: intake, encouragement and nudge, units and mission placement, classification
// and selection, then the budget loop, which renders and builds the manifest.
func (c *composer) run(in Input) (Result, error) {
	q := c.takeIn(in) // on the stack: the phases take its address
	if idle := c.encourage(&q); idle {
		return Result{
			Manifest:      Manifest{Items: c.finishItems(q.window), TurnTruncated: in.TurnTruncated, Tools: c.tools},
			Encouragement: Encouragement{Decision: DecisionIdle, Count: in.EncouragementCount},
		}, nil
	}
	c.placeNudge(&q)
	c.buildUnits(&q)
	c.placeMission(&q)
	c.fallbackNudge(&q)
	c.choose(&q)
	return c.fit(&q)
}

// takeIn is the intake phase: it orders and trims the window, cleans the mission and counts the tool definitions.
func (c *composer) takeIn(in Input) request {
	c.recentStart = in.RecentStartSeq
	c.prevBoundary, c.prevCompactSeq = in.PrevBoundary, in.PrevCompactSeq
	c.cache = c.p.Cache
	if c.cache.Name == "" {
		c.cache = CacheAnthropic
	}
	c.cold = c.cache.Lifetime > 0 && in.SincePrevious > c.cache.Lifetime
	q := request{in: in, window: c.intake(in.Window), mission: c.mission(in.Mission), level: NudgeNone}
	for _, t := range in.Tools {
		n := framingPerMessage + c.count(t.JSON())
		c.toolTokens += n
		c.tools = append(c.tools, ToolTokens{Name: t.Name, Tokens: n})
	}
	return q
}

// encourage decides the encouragement and, when the call begins a turn that no real prompt opened, the nudge that
// opens it. It reports whether the mysis goes idle instead (it was encouraged IdleAfter times with nothing to do).
func (c *composer) encourage(q *request) (idle bool) {
	in := q.in
	q.enc = Encouragement{Decision: DecisionNone, Count: in.EncouragementCount}
	newest := newestTurn(q.window)
	begin := in.BeginTurn && !(newest.realPrompt && !newest.answered)
	switch {
	case begin && q.mission != nil:
		q.nudge = &Nudge{Level: NudgeGentle, Content: c.p.Nudges.Gentle}
		q.enc = Encouragement{Decision: DecisionReset, Count: 0}
	case begin && in.EncouragementCount >= IdleAfter:
		return true
	case begin:
		l := NudgeLevel(max(in.EncouragementCount, 0) + 1)
		q.nudge = &Nudge{Level: l, Content: c.p.Nudges.Text(l)}
		q.enc = Encouragement{Decision: DecisionIncrement, Count: max(in.EncouragementCount, 0) + 1}
	case newest.realPrompt:
		q.enc = Encouragement{Decision: DecisionReset, Count: 0}
	}
	return false
}

// placeNudge appends a new turn's nudge to the window as the row the memory service will store.
func (c *composer) placeNudge(q *request) {
	if q.nudge == nil {
		return
	}
	window := q.window
	// Exactly what the memory service will return once the nudge is stored: for a v1 window the newest
	// ScanWindow rows. (A v2 window keeps its rows; see COMPOSITION.md on nudge persistence.)
	if c.recentStart == 0 && len(window) >= c.p.ScanWindow {
		c.preItems = append(c.preItems, itemOf(&window[0], Dropped, ReasonOutsideWindow))
		window = window[1:]
		c.items = c.items[1:]
	}
	var lastSeq, lastTurn int64
	if len(window) > 0 {
		lastSeq, lastTurn = window[len(window)-1].Seq, window[len(window)-1].Turn
	}
	q.window = append(slices.Clip(window), Memory{
		Seq: lastSeq + 1, Turn: lastTurn + 1, Role: chat.RoleUser, Source: SourceNudge, Content: q.nudge.Content,
	})
	c.items = append(c.items, Item{})
	q.level = q.nudge.Level
}

// buildUnits regroups the window into units (pair) and finds where the current turn starts.
func (c *composer) buildUnits(q *request) {
	q.units = c.pair(q.window)
	if q.nudge != nil {
		q.units[len(q.units)-1].virtual = true
	}
	q.currentStart = trailingTurnStart(q.units)
}

// placeMission finds or inserts the unit that sends the mission, in chronological position, unless it is the
// current turn's own prompt.
func (c *composer) placeMission(q *request) {
	mission := q.mission
	if mission == nil {
		return
	}
	if mission.MemoryID != 0 {
		for _, u := range q.units {
			if u.kind == kindUser && u.mem != nil && u.mem.ID == mission.MemoryID && !u.virtual {
				q.missionUnit = u
				return
			}
		}
	}
	q.missionUnit = &unit{kind: kindMission, idx: -1, seq: mission.Seq, turn: -1, source: mission.Source, content: mission.Content}
	pos := 0
	if mission.MemoryID != 0 {
		for pos < q.currentStart && q.units[pos].seq < mission.Seq {
			pos++
		}
	}
	q.units = slices.Insert(q.units, pos, q.missionUnit)
	q.currentStart++
}

// fallbackNudge gives a current turn that neither a prompt opens nor the mission precedes a nudge to answer.
func (c *composer) fallbackNudge(q *request) {
	if q.currentStart < len(q.units) && q.units[q.currentStart].isOpener() {
		return
	}
	if q.missionUnit != nil && slices.Index(q.units, q.missionUnit) < q.currentStart {
		return // the mission is sent before the current turn
	}
	l := NudgeLevel(min(max(q.in.EncouragementCount, 1), IdleAfter))
	q.units = slices.Insert(q.units, q.currentStart, &unit{kind: kindNudge, idx: -1, turn: -1, content: c.p.Nudges.Text(l)})
	q.level = l
}

// choose classifies the units against the objective, selects what is sent (the compaction boundary included), caps
// the kept results and makes sure a prompt comes first.
func (c *composer) choose(q *request) {
	objective := q.in.ObjectiveSeq
	if objective == 0 && q.mission != nil && q.mission.MemoryID != 0 {
		objective = q.mission.Seq
	}
	c.classify(q.units, objective)
	c.selectUnits(q.units, q.currentStart, q.missionUnit, q.in.SystemPrompt)
	for _, u := range q.units {
		if u.keep {
			for _, r := range u.results {
				c.capResult(r, c.p.ToolResultCap, ReasonOverCap)
			}
		}
	}
	q.units = c.promptBefore(c.placeIndex(q.units))
}

// fit renders the request and, while it is over the budget, lets the reducer sacrifice one more step; the first
// rendering within the budget becomes the result with its manifest.
func (c *composer) fit(q *request) (Result, error) {
	red := reducer{c: c, units: q.units}
	for {
		r := c.render(q.in.SystemPrompt, q.units)
		if r.tokens.Total <= c.p.TokenBudget {
			return c.result(q, r), nil
		}
		if !red.step(r.tokens.Total - c.p.TokenBudget) {
			return Result{}, &BudgetError{Budget: c.p.TokenBudget, Need: r.tokens.Total}
		}
		needPromptBefore(q.units)
	}
}

// result is the composed request r with its manifest.
func (c *composer) result(q *request, r rendered) Result {
	c.repairs = append(c.repairs, r.repairs...)
	return Result{
		Messages: r.msgs,
		Manifest: Manifest{
			Items:         c.finishUnits(q.units, r.memTokens, r.memIndex),
			Mission:       outOfWindowMission(q.missionUnit, q.mission, r.missionTokens),
			Tokens:        r.tokens,
			Synthetic:     r.synthetic,
			NudgeLevel:    q.level,
			Repairs:       c.repairs,
			Boundary:      c.boundary,
			CompactSeq:    c.compactSeq,
			Compaction:    c.note,
			TurnTruncated: q.in.TurnTruncated,
			Tools:         c.tools,
		},
		Encouragement: q.enc,
		Nudge:         q.nudge,
	}
}

// intake orders the window, drops repeated rows and keeps the newest ScanWindow memories.
func (c *composer) intake(in []Memory) []Memory {
	w := slices.Clone(in)
	bySeq := func(a, b Memory) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	}
	if !slices.IsSortedFunc(w, bySeq) {
		slices.SortStableFunc(w, bySeq)
	}
	var dropped []Item
	out := w
	if !increasingIDs(w) { // the memory service's windows have none; only then look for repeated rows
		out = w[:0]
		seen := make(map[int64]bool, len(w))
		for _, m := range w {
			if m.ID != 0 && seen[m.ID] {
				dropped = append(dropped, itemOf(&m, Dropped, ReasonDuplicateRow))
				continue
			}
			seen[m.ID] = true
			out = append(out, m)
		}
	}
	if c.recentStart == 0 && len(out) > c.p.ScanWindow { // a v2 window's recent part is as long as its turn
		for i := range out[:len(out)-c.p.ScanWindow] {
			dropped = append(dropped, itemOf(&out[i], Dropped, ReasonOutsideWindow))
		}
		out = out[len(out)-c.p.ScanWindow:]
	}
	c.items = make([]Item, len(out))
	c.preItems = dropped
	return out
}

// increasingIDs reports whether every id is non-zero and larger than the one before, so no row repeats.
func increasingIDs(w []Memory) bool {
	for i := range w {
		if w[i].ID == 0 || (i > 0 && w[i].ID <= w[i-1].ID) {
			return false
		}
	}
	return true
}

func (c *composer) mission(m *Mission) *Mission {
	if m == nil || strings.TrimSpace(m.Content) == "" || (m.MemoryID == 0 && c.p.DisableMissionFallback) {
		return nil
	}
	cp := *m
	cp.Content = sanitize(cp.Content)
	c.missionID = cp.MemoryID
	return &cp
}

type turnInfo struct {
	realPrompt bool // the newest turn starts with a direct message or broadcast
	answered   bool // the newest turn has an assistant message
}

func newestTurn(w []Memory) turnInfo {
	if len(w) == 0 {
		return turnInfo{}
	}
	last := w[len(w)-1].Turn
	start := len(w) - 1
	for start > 0 && w[start-1].Turn == last {
		start--
	}
	var t turnInfo
	first := w[start]
	t.realPrompt = first.Role == chat.RoleUser && (first.Source == SourceDirect || first.Source == SourceBroadcast) &&
		strings.TrimSpace(first.Content) != ""
	for _, m := range w[start:] {
		if m.Role == chat.RoleAssistant {
			t.answered = true
		}
	}
	return t
}

func trailingTurnStart(units []*unit) int {
	if len(units) == 0 {
		return 0
	}
	last := units[len(units)-1].turn
	i := len(units) - 1
	for i > 0 && units[i-1].turn == last {
		i--
	}
	return i
}

// pair turns rows into units. Each tool result is attached to the earliest unanswered call with its id that precedes
// it, wherever it sits in the window, so results separated from their call are moved back next to it; results with
// no such call are dropped; calls left without a result get a synthetic one.
func (c *composer) pair(window []Memory) []*unit {
	p := pairing{c: c, pending: make(map[string][]callRef, len(window)/2), called: make(map[string]bool, len(window)/2)}
	units := make([]*unit, 0, len(window))
	for i := range window {
		m := &window[i]
		var u *unit
		switch m.Role {
		case chat.RoleSystem:
			c.items[i] = itemOf(m, Dropped, ReasonSystemOnce)
		case chat.RoleUser:
			u = c.userUnit(i, m)
		case chat.RoleAssistant:
			u = p.assistant(i, m)
		case chat.RoleTool:
			var last *unit
			if len(units) > 0 {
				last = units[len(units)-1]
			}
			p.result(i, m, last)
		default:
			c.items[i] = itemOf(m, Dropped, ReasonUnknownRole)
		}
		if u != nil {
			units = append(units, u)
		}
	}
	out := units[:0]
	for _, u := range units {
		if !c.trimCarried(u) {
			continue
		}
		c.interrupted(u)
		out = append(out, u)
	}
	return out
}

// pairing is pair's state: the calls still waiting for their result (by call id, oldest first) and every call id
// seen.
type pairing struct {
	c       *composer
	pending map[string][]callRef
	called  map[string]bool
}

// callRef is call k of loop u.
type callRef struct {
	u *unit
	k int
}

// userUnit makes a user memory (window index i) a unit; an empty one is dropped (nil).
func (c *composer) userUnit(i int, m *Memory) *unit {
	content := sanitize(m.Content)
	if strings.TrimSpace(content) == "" {
		c.items[i] = itemOf(m, Dropped, ReasonEmpty)
		return nil
	}
	return &unit{kind: kindUser, mem: m, idx: i, seq: m.Seq, turn: m.Turn, source: m.Source, content: content}
}

// assistant makes an assistant memory a loop (its named calls wait for their results) or a text reply; a memory
// with neither is dropped (nil).
func (p *pairing) assistant(i int, m *Memory) *unit {
	c := p.c
	content := sanitize(m.Content)
	if strings.TrimSpace(content) == "" {
		content = ""
	}
	calls := c.namedCalls(m)
	u := &unit{mem: m, idx: i, seq: m.Seq, turn: m.Turn, source: m.Source, content: content}
	switch {
	case len(calls) > 0:
		u.kind, u.calls, u.results = kindLoop, calls, make([]*toolResult, len(calls))
		for k, tc := range calls {
			p.pending[tc.ID] = append(p.pending[tc.ID], callRef{u, k})
			p.called[tc.ID] = true
		}
	case content != "":
		u.kind = kindText
	case len(m.ToolCalls) > 0:
		c.items[i] = itemOf(m, Dropped, ReasonNoCalls)
		return nil
	default:
		c.items[i] = itemOf(m, Dropped, ReasonEmpty)
		return nil
	}
	return u
}

// namedCalls returns m's tool calls, cleaned; calls without a name are dropped with a repair note.
func (c *composer) namedCalls(m *Memory) []chat.ToolCall {
	calls := make([]chat.ToolCall, 0, len(m.ToolCalls))
	for k, tc := range m.ToolCalls {
		name := sanitize(tc.Name)
		if strings.TrimSpace(name) == "" {
			c.repair(m.ID, "dropped-call", fmt.Sprintf("tool call %d has no name", k))
			continue
		}
		calls = append(calls, chat.ToolCall{ID: sanitize(tc.ID), Name: name, Arguments: c.arguments(m.ID, k, tc.Arguments)})
	}
	return calls
}

// result attaches a tool result to the earliest call with its id still waiting for one, or drops it. last is the
// newest unit so far (nil: none).
func (p *pairing) result(i int, m *Memory, last *unit) {
	c := p.c
	id := sanitize(m.ToolCallID)
	q := p.pending[id]
	if len(q) == 0 && !p.called[id] && (last == nil || m.Seq < c.recentStart) {
		// The window starts inside a loop whose call is just outside it, or a carried row lost its call:
		// nothing is broken, the result is simply not composable.
		c.items[i] = itemOf(m, Dropped, ReasonCallOutsideWindow)
		return
	}
	if len(q) == 0 {
		reason := ReasonOrphanResult
		if p.called[id] {
			reason = ReasonDuplicateResult
		}
		c.items[i] = itemOf(m, Dropped, reason)
		c.repair(m.ID, "dropped-result", fmt.Sprintf("%s (tool_call_id %q)", reason, id))
		return
	}
	ref := q[0]
	p.pending[id] = q[1:]
	name := sanitize(m.ToolName)
	if name == "" {
		name = ref.u.calls[ref.k].Name
	}
	if last != ref.u {
		c.repair(m.ID, "moved-result", fmt.Sprintf("result for %q moved back next to its call in memory #%d", id, ref.u.mem.ID))
	}
	body := sanitize(m.Content)
	args := ref.u.calls[ref.k].Arguments
	pinAs := c.p.pinnedAs(name, args)
	tool := name
	if a := actionOf(args); a != "" {
		tool = name + "." + a
	}
	ref.u.results[ref.k] = &toolResult{mem: m, idx: i, name: name, body: body, content: body,
		pinned: pinAs != "", pinAs: pinAs, tool: tool, bodyTokens: -1, sentTokens: -1}
}

// trimCarried keeps, of a carried assistant memory, only the calls whose results were carried. It reports whether
// anything of u is left to send.
func (c *composer) trimCarried(u *unit) bool {
	if u.kind != kindLoop || u.seq >= c.recentStart || !slices.Contains(u.results, nil) {
		return true
	}
	calls, results := u.calls[:0:0], u.results[:0:0]
	for k, r := range u.results {
		if r != nil {
			calls, results = append(calls, u.calls[k]), append(results, r)
		}
	}
	if len(calls) == 0 {
		c.items[u.idx] = itemOf(u.mem, Dropped, ReasonNotCarried)
		return false
	}
	u.calls, u.results = calls, results
	return true
}

// interrupted gives each call of u left without a result a synthetic one, with a repair note.
func (c *composer) interrupted(u *unit) {
	for k, r := range u.results {
		if r == nil {
			u.results[k] = &toolResult{idx: -1, name: u.calls[k].Name, content: interruptedResult, state: resSynthetic,
				bodyTokens: -1, sentTokens: -1}
			c.repair(u.mem.ID, "interrupted", fmt.Sprintf("tool call %q has no recorded result", u.calls[k].ID))
		}
	}
}

// arguments returns the call's arguments as a JSON object text. Valid objects pass through byte for byte (LESSONS 5);
// an empty string becomes {} silently (providers send it for no-argument calls); anything else becomes {} with a
// repair note, because providers reject the whole request over one malformed argument string.
func (c *composer) arguments(memID int64, k int, args string) string {
	t := strings.TrimSpace(args)
	if t == "" {
		return "{}"
	}
	if t[0] == '{' && json.Valid([]byte(t)) {
		return sanitize(args)
	}
	c.repair(memID, "bad-arguments", fmt.Sprintf("tool call %d arguments are not a JSON object; sent as {}", k))
	return "{}"
}

func (c *composer) repair(memID int64, kind, detail string) {
	c.repairs = append(c.repairs, Repair{MemoryID: memID, Kind: kind, Detail: detail})
}

// capResult cuts r's body to at most limit tokens (notice included), pointing at the memory that holds it all.
func (c *composer) capResult(r *toolResult, limit int, reason Reason) {
	if r.state != resBody && r.state != resTruncated {
		return
	}
	if c.resultTokens(r) <= limit {
		return
	}
	if r.bodyTokens < 0 {
		r.bodyTokens = c.tok.Count(r.body)
	}
	total := r.bodyTokens
	notice := func(omitted int) string {
		return fmt.Sprintf("…[truncated: %d tokens omitted; full result is memory #%d, %s]", omitted, r.mem.ID, searchHint)
	}
	keep := limit - c.count(notice(total)) - 1
	for range 8 {
		if keep < 0 {
			keep = 0
		}
		prefix := r.body[:c.tok.PrefixLen(r.body, keep)]
		content := prefix + notice(total-c.count(prefix))
		if n := c.count(content); n <= limit || keep == 0 {
			r.content, r.state, r.reason = content, resTruncated, reason
			return
		} else {
			keep -= n - limit
		}
	}
	r.content, r.state, r.reason = notice(total), resTruncated, reason
}

func sanitize(s string) string {
	if utf8.ValidString(s) { // the common case, and several times faster than ToValidUTF8's rune loop
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func itemOf(m *Memory, d Disposition, r Reason) Item {
	return Item{MemoryID: m.ID, Seq: m.Seq, Disposition: d, Reason: r}
}

func outOfWindowMission(u *unit, m *Mission, tokens int) *Item {
	if u == nil || u.kind != kindMission || !u.keep {
		return nil
	}
	return &Item{MemoryID: m.MemoryID, Seq: m.Seq, Disposition: Included, Reason: ReasonMission, Tokens: tokens}
}
