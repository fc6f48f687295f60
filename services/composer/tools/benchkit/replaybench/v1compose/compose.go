package v1compose

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
	searchHint        = "use zoea_search_messages"
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
)

type section int

const (
	secSystem section = iota
	secMission
	secHistory
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
	// bodyTokens and sentTokens (-1: not counted yet) spare the call memo the biggest strings of a compose: the
	// body is needed by capResult and, when it is sent whole, by render.
	bodyTokens int
	sentTokens int
	sentFor    string // the content sentTokens counts
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
	// promptFor is set on a history prompt kept only because loop promptFor follows it.
	promptFor *unit
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

func (c *composer) run(in Input) (Result, error) {
	window := c.intake(in.Window)
	mission := c.mission(in.Mission)

	enc := Encouragement{Decision: DecisionNone, Count: in.EncouragementCount}
	var nudge *Nudge
	level := NudgeNone
	newest := newestTurn(window)
	begin := in.BeginTurn && !(newest.realPrompt && !newest.answered)
	switch {
	case begin && mission != nil:
		nudge = &Nudge{Level: NudgeGentle, Content: c.p.Nudges.Gentle}
		enc = Encouragement{Decision: DecisionReset, Count: 0}
	case begin && in.EncouragementCount >= IdleAfter:
		return Result{
			Manifest:      Manifest{Items: c.finishItems(window)},
			Encouragement: Encouragement{Decision: DecisionIdle, Count: in.EncouragementCount},
		}, nil
	case begin:
		l := NudgeLevel(max(in.EncouragementCount, 0) + 1)
		nudge = &Nudge{Level: l, Content: c.p.Nudges.Text(l)}
		enc = Encouragement{Decision: DecisionIncrement, Count: max(in.EncouragementCount, 0) + 1}
	case newest.realPrompt:
		enc = Encouragement{Decision: DecisionReset, Count: 0}
	}
	if nudge != nil {
		// Exactly what the memory service will return once the nudge is stored: the newest ScanWindow rows.
		if len(window) >= c.p.ScanWindow {
			c.preItems = append(c.preItems, itemOf(&window[0], Dropped, ReasonOutsideWindow))
			window = window[1:]
			c.items = c.items[1:]
		}
		var lastSeq, lastTurn int64
		if len(window) > 0 {
			lastSeq, lastTurn = window[len(window)-1].Seq, window[len(window)-1].Turn
		}
		window = append(slices.Clip(window), Memory{
			Seq: lastSeq + 1, Turn: lastTurn + 1, Role: chat.RoleUser, Source: SourceNudge, Content: nudge.Content,
		})
		c.items = append(c.items, Item{})
		level = nudge.Level
	}

	units := c.pair(window)
	if nudge != nil {
		units[len(units)-1].virtual = true
	}
	currentStart := trailingTurnStart(units)
	hasOpener := currentStart < len(units) && units[currentStart].isOpener()

	// The mission, in chronological position, unless it is the current turn's own prompt.
	var missionUnit *unit
	missionBefore := false // the mission is sent before the current turn
	if mission != nil {
		if mission.MemoryID != 0 {
			for _, u := range units {
				if u.kind == kindUser && u.mem != nil && u.mem.ID == mission.MemoryID && !u.virtual {
					missionUnit = u
					break
				}
			}
		}
		if missionUnit == nil {
			missionUnit = &unit{kind: kindMission, idx: -1, seq: mission.Seq, turn: -1, source: mission.Source, content: mission.Content}
			pos := 0
			if mission.MemoryID != 0 {
				for pos < currentStart && units[pos].seq < mission.Seq {
					pos++
				}
			}
			units = slices.Insert(units, pos, missionUnit)
			currentStart++
		}
		missionBefore = slices.Index(units, missionUnit) < currentStart
	}
	if !hasOpener && !missionBefore {
		l := NudgeLevel(min(max(in.EncouragementCount, 1), IdleAfter))
		units = slices.Insert(units, currentStart, &unit{kind: kindNudge, idx: -1, turn: -1, content: c.p.Nudges.Text(l)})
		level = l
	}

	c.selectUnits(units, currentStart, missionUnit)
	c.compactSnapshots(units)
	for _, u := range units {
		if u.keep {
			for _, r := range u.results {
				c.capResult(r, c.p.ToolResultCap, ReasonOverCap)
			}
		}
	}

	red := reducer{c: c, units: units}
	for {
		r := c.render(in.SystemPrompt, units)
		if r.tokens.Total <= c.p.TokenBudget {
			c.repairs = append(c.repairs, r.repairs...)
			return Result{
				Messages: r.msgs,
				Manifest: Manifest{
					Items:      c.finishUnits(units, r.memTokens),
					Mission:    outOfWindowMission(missionUnit, mission, r.missionTokens),
					Tokens:     r.tokens,
					Synthetic:  r.synthetic,
					NudgeLevel: level,
					Repairs:    c.repairs,
				},
				Encouragement: enc,
				Nudge:         nudge,
			}, nil
		}
		if !red.step() {
			return Result{}, &BudgetError{Budget: c.p.TokenBudget, Need: r.tokens.Total}
		}
		needPromptBefore(units)
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
	if len(out) > c.p.ScanWindow {
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
	type callRef struct {
		u *unit
		k int
	}
	pending := make(map[string][]callRef, len(window)/2)
	called := make(map[string]bool, len(window)/2)
	units := make([]*unit, 0, len(window))
	for i := range window {
		m := &window[i]
		switch m.Role {
		case chat.RoleSystem:
			c.items[i] = itemOf(m, Dropped, ReasonSystemOnce)
		case chat.RoleUser:
			content := sanitize(m.Content)
			if strings.TrimSpace(content) == "" {
				c.items[i] = itemOf(m, Dropped, ReasonEmpty)
				continue
			}
			units = append(units, &unit{kind: kindUser, mem: m, idx: i, seq: m.Seq, turn: m.Turn, source: m.Source, content: content})
		case chat.RoleAssistant:
			content := sanitize(m.Content)
			if strings.TrimSpace(content) == "" {
				content = ""
			}
			calls := make([]chat.ToolCall, 0, len(m.ToolCalls))
			for k, tc := range m.ToolCalls {
				name := sanitize(tc.Name)
				if strings.TrimSpace(name) == "" {
					c.repair(m.ID, "dropped-call", fmt.Sprintf("tool call %d has no name", k))
					continue
				}
				calls = append(calls, chat.ToolCall{ID: sanitize(tc.ID), Name: name, Arguments: c.arguments(m.ID, k, tc.Arguments)})
			}
			u := &unit{mem: m, idx: i, seq: m.Seq, turn: m.Turn, source: m.Source, content: content}
			switch {
			case len(calls) > 0:
				u.kind, u.calls, u.results = kindLoop, calls, make([]*toolResult, len(calls))
				for k, tc := range calls {
					pending[tc.ID] = append(pending[tc.ID], callRef{u, k})
					called[tc.ID] = true
				}
			case content != "":
				u.kind = kindText
			case len(m.ToolCalls) > 0:
				c.items[i] = itemOf(m, Dropped, ReasonNoCalls)
				continue
			default:
				c.items[i] = itemOf(m, Dropped, ReasonEmpty)
				continue
			}
			units = append(units, u)
		case chat.RoleTool:
			id := sanitize(m.ToolCallID)
			q := pending[id]
			if len(q) == 0 {
				reason := ReasonOrphanResult
				if called[id] {
					reason = ReasonDuplicateResult
				}
				c.items[i] = itemOf(m, Dropped, reason)
				c.repair(m.ID, "dropped-result", fmt.Sprintf("%s (tool_call_id %q)", reason, id))
				continue
			}
			ref := q[0]
			pending[id] = q[1:]
			name := sanitize(m.ToolName)
			if name == "" {
				name = ref.u.calls[ref.k].Name
			}
			if units[len(units)-1] != ref.u {
				c.repair(m.ID, "moved-result", fmt.Sprintf("result for %q moved back next to its call in memory #%d", id, ref.u.mem.ID))
			}
			body := sanitize(m.Content)
			ref.u.results[ref.k] = &toolResult{mem: m, idx: i, name: name, body: body, content: body,
				pinned: slices.Contains(c.p.PinnedTools, name), bodyTokens: -1, sentTokens: -1}
		default:
			c.items[i] = itemOf(m, Dropped, ReasonUnknownRole)
		}
	}
	for _, u := range units {
		for k, r := range u.results {
			if r == nil {
				u.results[k] = &toolResult{idx: -1, name: u.calls[k].Name, content: interruptedResult, state: resSynthetic,
					bodyTokens: -1, sentTokens: -1}
				c.repair(u.mem.ID, "interrupted", fmt.Sprintf("tool call %q has no recorded result", u.calls[k].ID))
			}
		}
	}
	return units
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

// selectUnits decides what is sent: the mission, the current turn complete, and from earlier turns only the latest
// complete tool loop(s), each after the prompt of its turn.
func (c *composer) selectUnits(units []*unit, currentStart int, missionUnit *unit) {
	for i, u := range units {
		if i >= currentStart {
			u.keep, u.section, u.reason = true, secCurrent, ReasonCurrentTurn
			if u.kind == kindNudge || u.virtual {
				u.section = secSynthetic // nudges are the composer's words until the runner stores one
			}
		} else {
			u.section, u.reason = secHistory, ReasonCompressed
		}
	}
	if missionUnit != nil && missionUnit.section != secCurrent {
		missionUnit.keep, missionUnit.section, missionUnit.reason = true, secMission, ReasonMission
	}
	kept := 0
	for i := currentStart - 1; i >= 0 && kept < c.p.HistoryLoops; i-- {
		u := units[i]
		if u.kind != kindLoop || !u.complete() {
			continue
		}
		u.keep, u.reason = true, ReasonHistoryLoop
		kept++
		// The prompt that opened the loop's turn gives it its meaning (and a user message to follow).
		first := -1
		for j := i; j >= 0; j-- {
			if units[j].kind == kindMission {
				continue
			}
			if units[j].turn != u.turn {
				break
			}
			first = j
		}
		if p := units[first]; p.isOpener() && !p.keep {
			p.keep, p.reason, p.promptFor = true, ReasonHistoryPrompt, u
		}
	}
	needPromptBefore(units)
}

// needPromptBefore drops kept earlier-turn replies and loops that no user message precedes: the first message after
// the system prompt must be a user message (for both providers), and a loop whose prompt scrolled out of the window
// (or was dropped for the budget) has nothing to follow.
func needPromptBefore(units []*unit) {
	sawUser := false
	for _, u := range units {
		if !u.keep {
			continue
		}
		switch u.kind {
		case kindUser, kindMission, kindNudge:
			sawUser = true
		case kindLoop, kindText:
			if !sawUser && u.section == secHistory {
				u.keep, u.reason = false, ReasonNoPromptBefore
			}
		}
	}
}

// compactSnapshots keeps the body of only the newest result of each snapshot tool among the kept units.
func (c *composer) compactSnapshots(units []*unit) {
	seen := make(map[string]bool)
	for i := len(units) - 1; i >= 0; i-- {
		u := units[i]
		if !u.keep {
			continue
		}
		for k := len(u.results) - 1; k >= 0; k-- {
			r := u.results[k]
			if r.state == resSynthetic || !slices.Contains(c.p.SnapshotTools, r.name) {
				continue
			}
			if seen[r.name] {
				r.content = fmt.Sprintf("[superseded: a newer %s result follows; this one is memory #%d]", r.name, r.mem.ID)
				r.state, r.reason = resStub, ReasonSuperseded
				continue
			}
			seen[r.name] = true
		}
	}
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
