package compose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
)

type rendered struct {
	msgs      []chat.Message
	tokens    Tokens
	synthetic []Synthetic
	repairs   []Repair
	memTokens []int // tokens each window memory adds, indexed like composer.items
	memIndex  []int // index in msgs of the message carrying each window memory, indexed like composer.items
	// missionTokens is what a mission from outside the window adds.
	missionTokens int
}

// renderPart is one message of a request before merging, with what the request's accounting needs of it.
type renderPart struct {
	msg   chat.Message
	res   *toolResult // for a tool message
	sec   section
	idx   int // window index of the memory it renders; -1 for none
	kind  string
	synth string
}

// render turns the kept units into messages. It also makes tool call ids unique (a call whose id is empty or already
// used gets a new one derived from its memory's seq, and its result follows), and merges two messages that would
// otherwise stand next to each other with the same role: the mission before a nudge, a prompt after a lost reply.
func (c *composer) render(system string, units []*unit) rendered {
	parts := make([]renderPart, 1, 2*len(units)+1)
	parts[0] = renderPart{msg: chat.Message{Role: chat.RoleSystem, Content: system}, sec: secSystem, idx: -1}
	var repairs []Repair
	used := make(map[string]bool)
	var dropped []*unit // a run of loops the budget dropped, named where they were (droppedNote)
	for _, u := range units {
		if !u.keep {
			if u.kind == kindLoop && namesDropped(u.reason) {
				dropped = append(dropped, u)
			}
			continue
		}
		if len(dropped) > 0 {
			parts = append(parts, droppedNote(dropped))
			dropped = dropped[:0]
		}
		switch u.kind {
		case kindUser, kindMission, kindNudge, kindHeader, kindIndex:
			parts = append(parts, c.promptPart(u))
		case kindText:
			parts = append(parts, renderPart{msg: chat.Message{Role: chat.RoleAssistant, Content: u.content}, sec: u.section, idx: u.idx})
		case kindLoop:
			parts, repairs = loopParts(parts, repairs, u, used)
		}
	}
	if len(dropped) > 0 {
		parts = append(parts, droppedNote(dropped))
	}
	out := c.assemble(parts)
	out.repairs = repairs
	return out
}

// namesDropped: a loop the budget dropped for this reason leaves a note naming its results. A loop of superseded
// results only does not: a newer result of each of its calls is sent.
func namesDropped(r Reason) bool {
	switch r {
	case ReasonBudgetOtherCall, ReasonBudgetOlderState, ReasonBudgetTurnLoop, ReasonBudgetPinned:
		return true
	}
	return false
}

// droppedNote is the user line standing where a run of dropped loops was: each result by its tool and memory id, so
// nothing the budget drops is gone for good (zoea_recall returns a result by its id). The reducer counts it: it is
// rendered with the request, so a step that drops a loop pays for the loop's entry in the note.
func droppedNote(loops []*unit) renderPart {
	var b strings.Builder
	b.WriteString("[Dropped to fit the token budget; zoea_recall returns each result by its memory id:")
	last := ""
	for _, u := range loops {
		for _, r := range u.results {
			if r.mem == nil {
				continue
			}
			if r.tool != last {
				if last != "" {
					b.WriteString(";")
				}
				b.WriteString(" " + r.tool)
				last = r.tool
			} else {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " #%d", r.mem.ID)
		}
	}
	b.WriteString("]")
	return renderPart{msg: chat.Message{Role: chat.RoleUser, Content: b.String()}, sec: secSynthetic, idx: -1,
		kind: SynthDroppedIndex, synth: "results the budget dropped, each one recall away"}
}

// promptPart is the user message of u, a prompt, the mission, a nudge or the carried-state header, saying why the
// composer wrote it when it did.
func (c *composer) promptPart(u *unit) renderPart {
	p := renderPart{msg: chat.Message{Role: chat.RoleUser, Content: u.content}, sec: u.section, idx: u.idx}
	switch {
	case u.kind == kindHeader:
		p.kind, p.synth = SynthCarriedHeader, "carried state that no prompt precedes"
	case u.kind == kindIndex:
		p.kind, p.synth = SynthCarriedIndex, "results below the boundary that are not carried, each one search away"
	case u.kind == kindNudge:
		p.kind, p.synth = SynthNudge, "no prompt in the window and no mission: encouragement (not persisted)"
	case u.virtual:
		p.kind, p.synth, p.idx = SynthNudge, "prompt of the new autonomous turn (persist it as a nudge)", -1
	case u.kind == kindMission && c.missionID != 0:
		p.kind, p.synth = SynthMission, fmt.Sprintf("mission re-injected: memory #%d is outside the window", c.missionID)
	case u.kind == kindMission:
		p.kind, p.synth = SynthMission, "mission re-injected: the swarm's latest commander broadcast (no memory of this mysis)"
	}
	return p
}

// loopParts appends the messages of u, a tool loop, to parts: the assistant message with its calls (each id made
// unique among used, a repair recorded for each renamed one) and a tool message per result.
func loopParts(parts []renderPart, repairs []Repair, u *unit, used map[string]bool) ([]renderPart, []Repair) {
	calls := slices.Clone(u.calls)
	for k := range calls {
		if id := calls[k].ID; id == "" || used[id] {
			calls[k].ID = uniqueID(u.seq, k, used)
			repairs = append(repairs, Repair{MemoryID: u.mem.ID, Kind: "renamed-call-id",
				Detail: fmt.Sprintf("tool call %d id %q is empty or already used; sent as %q", k, id, calls[k].ID)})
		}
		used[calls[k].ID] = true
	}
	parts = append(parts, renderPart{msg: chat.Message{Role: chat.RoleAssistant, Content: u.content, ToolCalls: calls}, sec: u.section, idx: u.idx})
	for k, r := range u.results {
		p := renderPart{msg: chat.Message{Role: chat.RoleTool, Content: r.content, ToolCallID: calls[k].ID, Name: r.name},
			res: r, sec: u.section, idx: r.idx}
		if r.state == resSynthetic {
			p.sec, p.kind, p.synth = secSynthetic, SynthMissingResult, "interrupted tool call: no result recorded"
		}
		parts = append(parts, p)
	}
	return parts, repairs
}

// assemble merges the parts into the request's messages and counts what each adds: per section, per window
// memory (and the message that carries it), for a mission from outside the window; it lists the synthetic messages.
func (c *composer) assemble(parts []renderPart) rendered {
	out := rendered{msgs: make([]chat.Message, 0, len(parts)), memTokens: make([]int, len(c.items)), memIndex: make([]int, len(c.items))}
	var sec [secSynthetic + 1]int
	var lastTokens int
	for _, p := range parts {
		var t int // what this part adds to the request
		t, lastTokens = c.appendPart(&out, p, lastTokens)
		sec[p.sec] += t
		if p.idx >= 0 {
			out.memTokens[p.idx] += t
			out.memIndex[p.idx] = len(out.msgs) - 1
		}
		if p.kind == SynthMission {
			out.missionTokens += t
		}
		if p.synth != "" {
			out.synthetic = append(out.synthetic, Synthetic{Index: len(out.msgs) - 1, Role: string(p.msg.Role), Kind: p.kind, Reason: p.synth, Tokens: t})
		}
	}
	out.tokens = c.requestTokens(sec)
	return out
}

// appendPart appends p's message to out.msgs, merged into the last one when the two are mergeable; lastTokens is
// the last message's tokens. It returns what p adds to the request and the last message's tokens after it.
func (c *composer) appendPart(out *rendered, p renderPart, lastTokens int) (added, last int) {
	n := len(out.msgs)
	if n > 0 && mergeable(out.msgs[n-1], p.msg) {
		merged := out.msgs[n-1]
		merged.Content = joinText(merged.Content, p.msg.Content)
		merged.ToolCalls = p.msg.ToolCalls
		whole := c.messageTokens(merged)
		out.msgs[n-1] = merged
		return whole - lastTokens, whole
	}
	var t int
	if p.res != nil { // tool messages never merge
		t = c.messageTokensWith(p.msg, c.resultTokens(p.res))
	} else {
		t = c.messageTokens(p.msg)
	}
	out.msgs = append(out.msgs, p.msg)
	return t, t
}

// requestTokens is the request's token breakdown given each section's tokens.
func (c *composer) requestTokens(sec [secSynthetic + 1]int) Tokens {
	t := Tokens{
		System: sec[secSystem], Mission: sec[secMission], History: sec[secHistory], Carried: sec[secCarried],
		Current: sec[secCurrent], Synthetic: sec[secSynthetic], Tools: c.toolTokens, Framing: framingReply,
	}
	t.Total = t.System + t.Mission + t.History + t.Carried + t.Current + t.Synthetic + t.Tools + t.Framing
	return t
}

// mergeable: two user messages, or an assistant reply without calls followed by another assistant message.
func mergeable(prev, next chat.Message) bool {
	switch {
	case prev.Role == chat.RoleUser && next.Role == chat.RoleUser:
		return true
	case prev.Role == chat.RoleAssistant && next.Role == chat.RoleAssistant && len(prev.ToolCalls) == 0:
		return true
	}
	return false
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

func uniqueID(seq int64, k int, used map[string]bool) string {
	id := fmt.Sprintf("call_s%d_%d", seq, k)
	for n := 2; used[id]; n++ {
		id = fmt.Sprintf("call_s%d_%d_%d", seq, k, n)
	}
	return id
}

// messageTokens is a message's o200k_base tokens plus the framing providers wrap around it.
func (c *composer) messageTokens(m chat.Message) int {
	return c.messageTokensWith(m, c.count(m.Content))
}

// messageTokensWith is messageTokens for a message whose content has the given number of tokens.
func (c *composer) messageTokensWith(m chat.Message, content int) int {
	n := framingPerMessage + content + c.count(m.Name) + c.count(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += framingPerCall + c.count(tc.ID) + c.count(tc.Name) + c.count(tc.Arguments)
	}
	return n
}

// finishUnits lists every window memory's fate, oldest first.
func (c *composer) finishUnits(units []*unit, memTokens, memIndex []int) []Item {
	for _, u := range units {
		if u.idx < 0 || u.virtual {
			continue
		}
		d := Included
		if !u.keep {
			d = Dropped
		}
		c.items[u.idx] = itemOf(u.mem, d, u.reason)
		if u.keep {
			c.items[u.idx].Tokens, c.items[u.idx].MessageIndex = memTokens[u.idx], memIndex[u.idx]
			if u.capped {
				c.items[u.idx].Disposition, c.items[u.idx].Reason = Truncated, ReasonReplyCapped
			}
		}
		for _, r := range u.results {
			if r.mem == nil {
				continue
			}
			it := itemOf(r.mem, Dropped, u.reason)
			if u.keep {
				it.Disposition, it.Reason, it.Tokens, it.MessageIndex = Included, u.reason, memTokens[r.idx], memIndex[r.idx]
				if r.reason != "" {
					it.Reason = r.reason
				}
				switch r.state {
				case resStub:
					it.Disposition = Stubbed
				case resTruncated:
					it.Disposition = Truncated
				}
			}
			c.items[r.idx] = it
		}
	}
	return c.collectItems()
}

// finishItems lists the window for a call that sends nothing (the mysis goes idle).
func (c *composer) finishItems(window []Memory) []Item {
	for i := range window {
		c.items[i] = itemOf(&window[i], Dropped, ReasonIdle)
	}
	return c.collectItems()
}

func (c *composer) collectItems() []Item {
	n := len(c.preItems) + len(c.items)
	if n == 0 {
		return nil
	}
	out := make([]Item, 0, n)
	out = append(out, c.preItems...)
	for _, it := range c.items {
		if it.Disposition != "" {
			out = append(out, it)
		}
	}
	bySeq := func(a, b Item) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	}
	if len(out) == 0 {
		return nil
	}
	if !slices.IsSortedFunc(out, bySeq) {
		slices.SortStableFunc(out, bySeq)
	}
	return out
}
