package memfake

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// The compose window's limits are libs/memoryrules' (the real service's).
const (
	maxCarryLimit    = rules.MaxCarryLimit
	maxReplyLimit    = rules.MaxReplyLimit
	carryScanRows    = rules.CarryScanRows
	maxResponseBytes = rules.MaxResponseBytes
)

// windowQuery is a normalised GetComposeWindow request.
type windowQuery struct {
	mysisID                               string
	window, carry, reply, turnRows, maxRB int
	recentFrom                            int64
	known                                 *memoryv1.CarryKnown
	v2, fallback                          bool
	snapshot, pinned                      []string
}

// normalizeWindow validates a request and applies defaults and caps as the real service does
// (rules.WindowQuery.Normalize), naming the field.
func normalizeWindow(req *memoryv1.GetComposeWindowRequest) (windowQuery, error) {
	k := req.GetCarryKnown()
	n, err := rules.WindowQuery{
		MysisID: req.GetMysisId(), Window: int(req.GetWindow()), GlobalFallback: req.GetGlobalMissionFallback(),
		CarryLimit: int(req.GetCarryLimit()), SnapshotTools: req.GetSnapshotTools(), PinnedTools: req.GetPinnedTools(),
		ReplyLimit: int(req.GetReplyLimit()), MaxTurnRows: int(req.GetMaxTurnRows()), MaxResultBytes: int(req.GetMaxResultBytes()),
		RecentFrom: req.GetRecentFromSeq(),
		Known: rules.CarryKnown{ObjectiveSeq: k.GetObjectiveSeq(), RecentStartSeq: k.GetRecentStartSeq(), Bytes: k.GetBytes(),
			Seqs: k.GetSeqs(), RecentThrough: k.GetRecentThroughSeq(), RecentBytes: k.GetRecentBytes()},
	}.Normalize()
	if err != nil {
		return windowQuery{}, err
	}
	return windowQuery{
		mysisID: n.MysisID, window: n.Window, carry: n.CarryLimit, reply: n.ReplyLimit, turnRows: n.TurnRows(), maxRB: n.MaxResultBytes,
		recentFrom: n.RecentFrom, known: k, v2: n.V2(), fallback: n.GlobalFallback, snapshot: n.SnapshotTools, pinned: n.PinnedTools,
	}, nil
}

func isMission(m *memoryv1.Memory) bool {
	return m.GetRole() == memoryv1.Role_ROLE_USER && m.GetSenderId() == "" &&
		(m.GetSource() == memoryv1.Source_SOURCE_DIRECT || m.GetSource() == memoryv1.Source_SOURCE_BROADCAST)
}

func hasCalls(m *memoryv1.Memory) bool {
	return m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) > 0
}

// GetComposeWindow implements MemoryService.GetComposeWindow (v1 and v2) the way the real service's one SQL
// statement does (services/memory/internal/pgstore/window.go): the mission, the recent part, the carried rows
// before it, then the byte bounds.
func (f *Fake) GetComposeWindow(_ context.Context, req *memoryv1.GetComposeWindowRequest) (*memoryv1.GetComposeWindowResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetComposeWindow"); ok {
		return nil, injected(fault)
	}
	q, err := normalizeWindow(req)
	if err != nil {
		return nil, err
	}
	y, ok := f.myses[q.mysisID]
	if !ok {
		return nil, notFound(q.mysisID)
	}
	ms := f.memories[q.mysisID] // ms[seq-1]: seq is gapless from 1
	l := int64(len(ms))
	resp := &memoryv1.GetComposeWindowResponse{Mysis: proto.Clone(y).(*memoryv1.Mysis)}
	var obj int64
	resp.Mission, obj = f.windowMission(q, ms)
	s, truncated := recentStart(q, ms)
	for _, seq := range carriedSeqs(q, ms, s, obj) {
		resp.Memories = append(resp.Memories, proto.Clone(ms[seq-1]).(*memoryv1.Memory))
	}
	for seq := s; seq <= l; seq++ {
		resp.Memories = append(resp.Memories, proto.Clone(ms[seq-1]).(*memoryv1.Memory))
	}
	resp.ObjectiveSeq, resp.TurnTruncated = obj, truncated
	if l > 0 {
		resp.RecentStartSeq = s
	}
	boundWindow(resp, q, len(y.GetSystemPrompt()), l > 0 && q.known.GetRecentStartSeq() == s && q.known.GetObjectiveSeq() == obj)
	return resp, nil
}

// windowMission returns the mysis's mission and the objective (its seq): the newest commander prompt among ms;
// without one, when the query asks for the fallback, the swarm's newest commander broadcast as a synthetic memory
// (objective 0). The caller holds f.mu.
func (f *Fake) windowMission(q windowQuery, ms []*memoryv1.Memory) (*memoryv1.Mission, int64) {
	for i := len(ms) - 1; i >= 0; i-- {
		if isMission(ms[i]) {
			return &memoryv1.Mission{Memory: proto.Clone(ms[i]).(*memoryv1.Memory)}, ms[i].GetSeq()
		}
	}
	if !q.fallback {
		return nil, 0
	}
	for i := len(f.bcOrder) - 1; i >= 0; i-- {
		if b := f.broadcasts[f.bcOrder[i]]; b.GetSenderId() == "" {
			return &memoryv1.Mission{GlobalFallback: true, Memory: &memoryv1.Memory{
				MysisId: q.mysisID, Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_BROADCAST,
				Content: b.GetContent(), BroadcastId: b.GetId(), CreatedAt: b.GetCreatedAt()}}, 0
		}
	}
	return nil, 0
}

// recentStart returns the seq where the recent part of ms starts and whether max_turn_rows truncated it. v1: the
// newest `window` rows. v2: back to the current turn's opener (or to recent_from_seq instead), never more than
// max_turn_rows rows, then onto a loop boundary.
func recentStart(q windowQuery, ms []*memoryv1.Memory) (int64, bool) {
	l := int64(len(ms))
	s := max(l-int64(q.window)+1, 1)
	if !q.v2 {
		return s, false
	}
	bound := max(l-int64(q.turnRows)+1, 1) // the oldest seq max_turn_rows allows
	anchor := turnOpener(ms)
	if q.recentFrom > 0 {
		anchor = q.recentFrom
		s = max(min(q.recentFrom, l), bound)
	} else {
		s = min(s, max(anchor, bound))
	}
	truncated := anchor < l-int64(q.turnRows)+1
	if l > 0 {
		s = loopBoundary(ms, s, bound)
	}
	return s, truncated
}

// turnOpener is the seq of the current turn's opener: the newest row that opens a turn, 1 when none does.
func turnOpener(ms []*memoryv1.Memory) int64 {
	for i := len(ms) - 1; i >= 0; i-- {
		if opensTurn(ms[i].GetRole(), ms[i].GetSource()) {
			return ms[i].GetSeq()
		}
	}
	return 1
}

// carriedSeqs returns the seqs of the carried rows, all before the recent part's start s, oldest first: the
// carry-over results and pinned results, each with its call, and the final replies.
func carriedSeqs(q windowQuery, ms []*memoryv1.Memory, s, obj int64) []int64 {
	var withCall []int64 // carried and pinned results: their calls come too
	if q.v2 && q.carry > 0 {
		withCall = carryOver(q, ms, s, obj)
	}
	withCall = append(withCall, pinnedResults(q, ms, s)...)
	extra := map[int64]bool{}
	for _, seq := range withCall {
		extra[seq] = true
		if c := callOf(ms, seq); c > 0 {
			extra[c] = true
		}
	}
	if q.v2 && q.reply > 0 {
		for _, seq := range finalReplies(q, ms, s, obj) {
			extra[seq] = true
		}
	}
	return slices.Sorted(maps.Keys(extra))
}

// carryOver returns the carried results before s: among the tool results after the objective in the carryScanRows
// memories before s, the newest result of each distinct call (keyed by its call key, or by tool name alone for
// snapshot tools and results without one), at most carry_limit of them.
func carryOver(q windowQuery, ms []*memoryv1.Memory, s, obj int64) []int64 {
	seen := map[string]bool{}
	var out []int64
	for seq := s - 1; seq > obj && seq >= s-carryScanRows && len(out) < q.carry; seq-- {
		m := ms[seq-1]
		if m.GetRole() != memoryv1.Role_ROLE_TOOL {
			continue
		}
		k := m.GetCallKey()
		if slices.Contains(q.snapshot, m.GetToolName()) || k == "" {
			k = m.GetToolName()
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, seq)
		}
	}
	return out
}

// pinnedResults returns the newest result before s of each pinned tool, however old.
func pinnedResults(q windowQuery, ms []*memoryv1.Memory, s int64) []int64 {
	var out []int64
	for _, name := range q.pinned {
		for seq := s - 1; seq >= 1; seq-- {
			if m := ms[seq-1]; m.GetRole() == memoryv1.Role_ROLE_TOOL && m.GetToolName() == name {
				out = append(out, seq)
				break
			}
		}
	}
	return out
}

// finalReplies returns the reply_limit newest assistant text replies (no tool calls) after the objective and
// before s.
func finalReplies(q windowQuery, ms []*memoryv1.Memory, s, obj int64) []int64 {
	var out []int64
	for seq := s - 1; seq > obj && len(out) < q.reply; seq-- {
		if m := ms[seq-1]; m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) == 0 {
			out = append(out, seq)
		}
	}
	return out
}

// callOf returns the seq of the call a result at seq answers: the nearest earlier assistant row with tool calls
// within callLookback, 0 when there is none.
func callOf(ms []*memoryv1.Memory, seq int64) int64 {
	for c := seq - 1; c >= max(seq-callLookback, 1); c-- {
		if hasCalls(ms[c-1]) {
			return c
		}
	}
	return 0
}

// boundWindow applies the byte bounds: long tool results cut, then — when the caller holds the carried rows
// (held), with them the recent rows through carry_known.recent_through_seq when those lie in the recent part, and
// all of that fits the bound with the rest — the held rows left out, else the newest rows within the response bound
// (carry_cut when rows below the start were left out). carry_bytes and recent_bytes are the sizes of the carried and
// the recent rows, those left out counted as carry_known gave them.
func boundWindow(resp *memoryv1.GetComposeWindowResponse, q windowQuery, promptBytes int, held bool) {
	for _, m := range resp.Memories {
		cutResult(m, q.maxRB)
	}
	budget := maxResponseBytes - promptBytes
	if resp.Mission != nil {
		budget -= memBytes(resp.Mission.GetMemory())
	}
	s := resp.RecentStartSeq
	i := slices.IndexFunc(resp.Memories, func(m *memoryv1.Memory) bool { return m.GetSeq() >= s })
	if held && i >= 0 {
		through, j, heldBytes, recentHeld := q.known.GetRecentThroughSeq(), i, q.known.GetBytes(), int64(0)
		if through >= s && through <= resp.GetMysis().GetLastSeq() {
			j = i + int(through-s) + 1 // the recent part is gapless from s
			heldBytes, recentHeld = heldBytes+q.known.GetRecentBytes(), q.known.GetRecentBytes()
		} else {
			through = 0
		}
		if heldBytes+sumBytes(resp.Memories[j:]) <= int64(budget) {
			resp.RecentBytes = recentHeld + sumBytes(resp.Memories[j:])
			resp.Memories, resp.CarryOmitted, resp.CarryBytes, resp.RecentOmittedThrough = resp.Memories[j:], true, q.known.GetBytes(), through
			return
		}
	}
	if kept := keepNewestWithin(resp.Memories, budget); len(kept) < len(resp.Memories) {
		resp.CarryCut = resp.Memories[0].GetSeq() < s
		resp.Memories = kept
		if first := kept[0].GetSeq(); first > resp.RecentStartSeq {
			resp.RecentStartSeq, resp.TurnTruncated = first, true
		}
	}
	n := slices.IndexFunc(resp.Memories, func(m *memoryv1.Memory) bool { return m.GetSeq() >= resp.RecentStartSeq })
	if n < 0 {
		n = len(resp.Memories)
	}
	resp.CarryBytes, resp.RecentBytes = sumBytes(resp.Memories[:n]), sumBytes(resp.Memories[n:])
}

// sumBytes is the size of ms as the byte bounds count it.
func sumBytes(ms []*memoryv1.Memory) int64 {
	var n int64
	for _, m := range ms {
		n += int64(memBytes(m))
	}
	return n
}

// loopBoundary moves a recent part starting at s onto a loop boundary: when the first assistant or tool row at or
// after s is a tool result, back to the nearest earlier assistant row with tool calls (within callLookback and not
// before bound), or else forward to the first row after s that is no tool result.
func loopBoundary(ms []*memoryv1.Memory, s, bound int64) int64 {
	l := int64(len(ms))
	first := memoryv1.Role_ROLE_UNSPECIFIED
	for seq := s; seq <= l; seq++ {
		if r := ms[seq-1].GetRole(); r == memoryv1.Role_ROLE_ASSISTANT || r == memoryv1.Role_ROLE_TOOL {
			first = r
			break
		}
	}
	if first != memoryv1.Role_ROLE_TOOL {
		return s
	}
	for seq := s - 1; seq >= max(s-callLookback, bound, 1); seq-- {
		if hasCalls(ms[seq-1]) {
			return seq
		}
	}
	for seq := s + 1; seq <= l; seq++ {
		if ms[seq-1].GetRole() != memoryv1.Role_ROLE_TOOL {
			return seq
		}
	}
	return s
}

// memBytes is a memory's text size as the byte bounds count it.
func memBytes(m *memoryv1.Memory) int {
	n := len(m.GetContent()) + len(m.GetReasoning())
	for _, tc := range m.GetToolCalls() {
		n += len(tc.GetId()) + len(tc.GetName()) + len(tc.GetArgumentsJson())
	}
	return n
}

// keepNewestWithin returns the newest memories (oldest first) whose sizes add up to at most max bytes, and always
// at least the newest one.
func keepNewestWithin(ms []*memoryv1.Memory, max int) []*memoryv1.Memory {
	total := 0
	for i := len(ms) - 1; i >= 0; i-- {
		total += memBytes(ms[i])
		if total > max && i < len(ms)-1 {
			return ms[i+1:]
		}
	}
	return ms
}

// cutResult cuts a tool result longer than max bytes as the real service does (libs/memoryrules.CutResult).
func cutResult(m *memoryv1.Memory, max int) {
	if m.GetRole() == memoryv1.Role_ROLE_TOOL {
		m.Content = rules.CutResult(m.GetContent(), max, m.GetId())
	}
}
