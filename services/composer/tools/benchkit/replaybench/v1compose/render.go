package v1compose

import (
	"fmt"
	"slices"

	"github.com/zoeaswarm/zoea/libs/chat"
)

type rendered struct {
	msgs      []chat.Message
	tokens    Tokens
	synthetic []Synthetic
	repairs   []Repair
	memTokens []int // tokens each window memory adds, indexed like composer.items
	// missionTokens is what a mission from outside the window adds.
	missionTokens int
}

// render turns the kept units into messages. It also makes tool call ids unique (a call whose id is empty or already
// used gets a new one derived from its memory's seq, and its result follows), and merges two messages that would
// otherwise stand next to each other with the same role: the mission before a nudge, a prompt after a lost reply.
func (c *composer) render(system string, units []*unit) rendered {
	type part struct {
		msg   chat.Message
		res   *toolResult // for a tool message
		sec   section
		idx   int // window index of the memory it renders; -1 for none
		kind  string
		synth string
	}
	parts := make([]part, 1, 2*len(units)+1)
	parts[0] = part{msg: chat.Message{Role: chat.RoleSystem, Content: system}, sec: secSystem, idx: -1}
	var repairs []Repair
	used := make(map[string]bool)
	for _, u := range units {
		if !u.keep {
			continue
		}
		switch u.kind {
		case kindUser, kindMission, kindNudge:
			p := part{msg: chat.Message{Role: chat.RoleUser, Content: u.content}, sec: u.section, idx: u.idx}
			switch {
			case u.kind == kindNudge:
				p.kind, p.synth = SynthNudge, "no prompt in the window and no mission: encouragement (not persisted)"
			case u.virtual:
				p.kind, p.synth, p.idx = SynthNudge, "prompt of the new autonomous turn (persist it as a nudge)", -1
			case u.kind == kindMission && c.missionID != 0:
				p.kind, p.synth = SynthMission, fmt.Sprintf("mission re-injected: memory #%d is outside the window", c.missionID)
			case u.kind == kindMission:
				p.kind, p.synth = SynthMission, "mission re-injected: the swarm's latest commander broadcast (no memory of this mysis)"
			}
			parts = append(parts, p)
		case kindText:
			parts = append(parts, part{msg: chat.Message{Role: chat.RoleAssistant, Content: u.content}, sec: u.section, idx: u.idx})
		case kindLoop:
			calls := slices.Clone(u.calls)
			for k := range calls {
				if id := calls[k].ID; id == "" || used[id] {
					calls[k].ID = uniqueID(u.seq, k, used)
					repairs = append(repairs, Repair{MemoryID: u.mem.ID, Kind: "renamed-call-id",
						Detail: fmt.Sprintf("tool call %d id %q is empty or already used; sent as %q", k, id, calls[k].ID)})
				}
				used[calls[k].ID] = true
			}
			parts = append(parts, part{msg: chat.Message{Role: chat.RoleAssistant, Content: u.content, ToolCalls: calls}, sec: u.section, idx: u.idx})
			for k, r := range u.results {
				p := part{msg: chat.Message{Role: chat.RoleTool, Content: r.content, ToolCallID: calls[k].ID, Name: r.name},
					res: r, sec: u.section, idx: r.idx}
				if r.state == resSynthetic {
					p.sec, p.kind, p.synth = secSynthetic, SynthMissingResult, "interrupted tool call: no result recorded"
				}
				parts = append(parts, p)
			}
		}
	}

	out := rendered{msgs: make([]chat.Message, 0, len(parts)), memTokens: make([]int, len(c.items))}
	var sec [secSynthetic + 1]int
	var lastTokens int
	for _, p := range parts {
		n := len(out.msgs)
		var t int // what this part adds to the request
		if n > 0 && mergeable(out.msgs[n-1], p.msg) {
			merged := out.msgs[n-1]
			merged.Content = joinText(merged.Content, p.msg.Content)
			merged.ToolCalls = p.msg.ToolCalls
			whole := c.messageTokens(merged)
			t = whole - lastTokens
			out.msgs[n-1], lastTokens = merged, whole
		} else {
			if p.res != nil { // tool messages never merge
				t = c.messageTokensWith(p.msg, c.resultTokens(p.res))
			} else {
				t = c.messageTokens(p.msg)
			}
			lastTokens = t
			out.msgs = append(out.msgs, p.msg)
		}
		sec[p.sec] += t
		if p.idx >= 0 {
			out.memTokens[p.idx] += t
		}
		if p.kind == SynthMission {
			out.missionTokens += t
		}
		if p.synth != "" {
			out.synthetic = append(out.synthetic, Synthetic{Index: len(out.msgs) - 1, Role: string(p.msg.Role), Kind: p.kind, Reason: p.synth})
		}
	}
	out.tokens = Tokens{
		System: sec[secSystem], Mission: sec[secMission], History: sec[secHistory], Current: sec[secCurrent],
		Synthetic: sec[secSynthetic], Framing: framingReply,
	}
	out.tokens.Total = out.tokens.System + out.tokens.Mission + out.tokens.History + out.tokens.Current +
		out.tokens.Synthetic + out.tokens.Framing
	out.repairs = repairs
	return out
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

// reducer shrinks the request one step at a time until it fits: earlier turns first, then the current turn's early
// iterations (results stubbed, then whole loops dropped), the pinned login/session result last, then the newest
// loop's results cut ever shorter.
type reducer struct {
	c         *composer
	units     []*unit
	shrinkCap int
}

func (r *reducer) step() bool {
	for _, u := range r.units {
		if u.keep && u.section == secHistory && u.kind == kindLoop {
			u.keep, u.reason = false, ReasonBudgetDropped
			for _, p := range r.units {
				if p.promptFor == u && p.keep {
					p.keep, p.reason = false, ReasonBudgetDropped
				}
			}
			return true
		}
	}
	var early []*unit
	var last *unit
	for _, u := range r.units {
		if !u.keep || u.section != secCurrent || (u.kind != kindLoop && u.kind != kindText) {
			continue
		}
		if last != nil {
			early = append(early, last)
		}
		last = u
	}
	if last != nil && last.kind != kindLoop {
		// The newest unit is a reply; the newest loop before it is the one to protect.
		early, last = early[:0], nil
		for _, u := range r.units {
			if u.keep && u.section == secCurrent && (u.kind == kindLoop || u.kind == kindText) {
				early = append(early, u)
			}
		}
		for i := len(early) - 1; i >= 0; i-- {
			if early[i].kind == kindLoop {
				last = early[i]
				early = slices.Delete(early, i, i+1)
				break
			}
		}
	}
	stub := func(u *unit, pinned bool) bool {
		changed := false
		for _, res := range u.results {
			if res.pinned != pinned || res.state == resSynthetic || res.state == resStub {
				continue
			}
			res.content = fmt.Sprintf("[compacted to fit the token budget: %s result is memory #%d, %s]", res.name, res.mem.ID, searchHint)
			res.state, res.reason = resStub, ReasonBudget
			changed = true
		}
		return changed
	}
	for _, u := range early {
		if u.kind == kindLoop && stub(u, false) {
			return true
		}
	}
	for _, u := range early {
		if !u.hasPinned() {
			u.keep, u.reason = false, ReasonBudgetDropped
			return true
		}
	}
	for _, u := range early {
		if stub(u, true) {
			return true
		}
	}
	for _, u := range early {
		u.keep, u.reason = false, ReasonBudgetDropped
		return true
	}
	if last != nil {
		if r.shrinkCap == 0 {
			r.shrinkCap = r.c.p.ToolResultCap
		}
		r.shrinkCap /= 2
		if r.shrinkCap < minToolResultCap {
			return false
		}
		for _, res := range last.results {
			r.c.capResult(res, r.shrinkCap, ReasonBudget)
		}
		return true
	}
	return false
}

// finishUnits lists every window memory's fate, oldest first.
func (c *composer) finishUnits(units []*unit, memTokens []int) []Item {
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
			c.items[u.idx].Tokens = memTokens[u.idx]
		}
		for _, r := range u.results {
			if r.mem == nil {
				continue
			}
			it := itemOf(r.mem, Dropped, u.reason)
			if u.keep {
				it.Disposition, it.Reason, it.Tokens = Included, u.reason, memTokens[r.idx]
				switch r.state {
				case resStub:
					it.Disposition, it.Reason = Stubbed, r.reason
				case resTruncated:
					it.Disposition, it.Reason = Truncated, r.reason
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
