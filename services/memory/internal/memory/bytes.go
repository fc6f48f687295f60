package memory

import rules "github.com/zoeaswarm/zoea/libs/memoryrules"

// Bytes is the text size of a memory as the byte bounds count it: content, reasoning and tool arguments.
func (m Memory) Bytes() int {
	n := len(m.Content) + len(m.Reasoning)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

// KeepNewestWithin returns the newest memories of ms (ordered oldest first) whose sizes add up to at most max
// bytes, and always at least the newest one. Readers that assemble rows themselves (the compose window) use it to
// bound a response the same way ListRecentMemories does in SQL.
func KeepNewestWithin(ms []Memory, max int) []Memory {
	total := 0
	for i := len(ms) - 1; i >= 0; i-- {
		total += ms[i].Bytes()
		if total > max && i < len(ms)-1 {
			return ms[i+1:]
		}
	}
	return ms
}

// CutResult returns m with its content cut as rules.CutResult cuts it (at most max bytes on a UTF-8
// boundary and a marker saying how much was left out and which memory holds all of it) when it is a tool result
// longer than max. Other roles are never cut: their size is bounded by the content limit and the response bound.
func CutResult(m Memory, max int) Memory {
	if m.Role != RoleTool {
		return m
	}
	m.Content = rules.CutResult(m.Content, max, m.ID)
	return m
}

// CutResults cuts the window's tool results to maxResult bytes (CutResult).
func (w *ComposeWindow) CutResults(maxResult int) {
	for i := range w.Memories {
		w.Memories[i] = CutResult(w.Memories[i], maxResult)
	}
}

// budget is what the window's memories may take of MaxResponseBytes: the mission and the system prompt come first.
func (w *ComposeWindow) budget() int {
	b := MaxResponseBytes - len(w.Mysis.SystemPrompt)
	if w.Mission != nil {
		b -= w.Mission.Memory.Bytes()
	}
	return b
}

// FitsWith reports whether the window's memories plus extra bytes (carried rows the caller holds) fit the response
// bound, so that Bound would leave nothing out of the whole window.
func (w *ComposeWindow) FitsWith(extra int64) bool {
	total := extra
	for _, m := range w.Memories {
		total += int64(m.Bytes())
	}
	return total <= int64(w.budget())
}

// heldBytes is the size of the rows the window left out because the caller holds them (k): the carried rows and,
// when RecentOmittedThrough is set, the recent ones.
func (w *ComposeWindow) heldBytes(k CarryKnown) int64 {
	n := k.Bytes
	if w.RecentOmittedThrough > 0 {
		n += k.RecentBytes
	}
	return n
}

// countBytes sets CarryBytes and RecentBytes once the window is bounded: the size of the carried and of the recent
// rows it returns, plus, for the rows it left out because the caller holds them (CarryOmitted,
// RecentOmittedThrough), the sizes the query's carry_known gave them.
func (w *ComposeWindow) countBytes(k CarryKnown) {
	w.CarryBytes, w.RecentBytes = 0, 0
	if w.CarryOmitted {
		w.CarryBytes = k.Bytes
	}
	if w.RecentOmittedThrough > 0 {
		w.RecentBytes = k.RecentBytes
	}
	for _, m := range w.Memories {
		if m.Seq >= w.RecentStartSeq {
			w.RecentBytes += int64(m.Bytes())
		} else if !w.CarryOmitted {
			w.CarryBytes += int64(m.Bytes())
		}
	}
}

// Bound applies a window's byte bounds to results already cut (CutResults): the newest memories within
// MaxResponseBytes minus what the mission and the system prompt take (always at least the newest one). When rows
// are left out the window reports its turn as truncated and its recent part as starting at the first row kept, so
// the composer says so instead of presenting a partial turn as whole; CarryCut says carried rows were left out.
func (w *ComposeWindow) Bound() {
	kept := KeepNewestWithin(w.Memories, w.budget())
	if len(kept) == len(w.Memories) {
		return
	}
	w.CarryCut = w.Memories[0].Seq < w.RecentStartSeq
	w.Memories = kept
	if first := kept[0].Seq; first > w.RecentStartSeq {
		w.RecentStartSeq = first
		w.TurnTruncated = true
	}
}
