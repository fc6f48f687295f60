package memfake

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// The fake's search is plain word matching, not Postgres full-text search: a text matches when it holds any word of
// the query (letters and digits, case-insensitive; "-word" excludes), as the real service's does, and ranks by how
// many of them it holds; people's words rank above tool output, and snippets mark the matched words «like this».
// Stemming, stop words, other word forms, phrases and BM25 are the real service's alone.

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// query is a parsed search: words that must appear and words that must not.
type query struct{ want, not []string }

func parseQuery(q string) query {
	var out query
	for _, f := range strings.Fields(q) {
		if strings.HasPrefix(f, "-") {
			out.not = append(out.not, words(f)...)
			continue
		}
		out.want = append(out.want, words(f)...)
	}
	return out
}

// score is how many of the query's words text holds; 0 when none, or when it holds an excluded one.
func (q query) score(text string) int {
	ws := words(text)
	for _, w := range q.not {
		if slices.Contains(ws, w) {
			return 0
		}
	}
	n := 0
	for _, w := range q.want {
		if slices.Contains(ws, w) {
			n++
		}
	}
	return n
}

func (q query) matches(text string) bool { return q.score(text) > 0 }

// snippet marks the query's words in text, cut to about 200 bytes around the first.
func (q query) snippet(text string) string {
	lower := strings.ToLower(text)
	first := len(text)
	var b strings.Builder
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && isWordByte(text[j]) {
			j++
		}
		if j > i {
			if slices.Contains(q.want, lower[i:j]) {
				first = min(first, b.Len())
				b.WriteString("«" + text[i:j] + "»")
			} else {
				b.WriteString(text[i:j])
			}
			i = j
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	s := b.String()
	start := max(0, first-60)
	for start > 0 && start < len(s) && s[start]&0xC0 == 0x80 {
		start--
	}
	end := min(len(s), start+200)
	for end < len(s) && s[end]&0xC0 == 0x80 {
		end++
	}
	return s[start:end]
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// messageText is what a message search matches: the content, and an assistant memory's calls.
func messageText(m *memoryv1.Memory) string {
	parts := []string{m.GetContent()}
	for _, c := range m.GetToolCalls() {
		parts = append(parts, c.GetName(), c.GetArgumentsJson())
	}
	return strings.Join(parts, " ")
}

// SearchMessages implements MemoryService.SearchMessages (word matching, see above).
func (f *Fake) SearchMessages(_ context.Context, req *memoryv1.SearchMessagesRequest) (*memoryv1.SearchMessagesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("SearchMessages"); ok {
		return nil, injected(fault)
	}
	order := req.GetOrder()
	if _, ok := memoryv1.SearchOrder_name[int32(order)]; !ok {
		return nil, errs.InvalidField("order", "unknown search order %d", order)
	}
	id, limit, err := rules.ValidateSearch(true, req.GetMysisId(), req.GetQuery(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	q := parseQuery(req.GetQuery())
	var hits []*memoryv1.MemoryHit
	ms := f.memories[id]
	for i := len(ms) - 1; i >= 0; i-- { // newest first
		m := ms[i]
		if m.GetSource() == memoryv1.Source_SOURCE_NUDGE && !req.GetIncludeNudges() {
			continue
		}
		if text := messageText(m); q.matches(text) {
			rank := float32(q.score(text))
			if m.GetRole() == memoryv1.Role_ROLE_TOOL {
				rank /= 2 // people's words before raw tool output
			}
			hits = append(hits, &memoryv1.MemoryHit{Memory: proto.Clone(m).(*memoryv1.Memory), Snippet: q.snippet(text), Rank: rank})
		}
	}
	if order != memoryv1.SearchOrder_SEARCH_ORDER_RECENCY {
		slices.SortStableFunc(hits, func(a, b *memoryv1.MemoryHit) int {
			switch {
			case a.GetRank() > b.GetRank():
				return -1
			case a.GetRank() < b.GetRank():
				return 1
			}
			return 0
		})
	}
	return &memoryv1.SearchMessagesResponse{Hits: hits[:min(len(hits), limit)], Matches: int64(len(hits))}, nil
}

// SearchReasoning implements MemoryService.SearchReasoning: one mysis's memories by their reasoning, newest first.
func (f *Fake) SearchReasoning(_ context.Context, req *memoryv1.SearchReasoningRequest) (*memoryv1.SearchReasoningResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("SearchReasoning"); ok {
		return nil, injected(fault)
	}
	id, limit, err := rules.ValidateSearch(true, req.GetMysisId(), req.GetQuery(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	q := parseQuery(req.GetQuery())
	resp := &memoryv1.SearchReasoningResponse{}
	ms := f.memories[id]
	for i := len(ms) - 1; i >= 0; i-- {
		if m := ms[i]; q.matches(m.GetReasoning()) {
			resp.Matches++
			if len(resp.Hits) < limit {
				resp.Hits = append(resp.Hits, &memoryv1.MemoryHit{Memory: proto.Clone(m).(*memoryv1.Memory), Snippet: q.snippet(m.GetReasoning()), Rank: 1})
			}
		}
	}
	return resp, nil
}

// SearchBroadcasts implements MemoryService.SearchBroadcasts: every broadcast by its text, newest first.
func (f *Fake) SearchBroadcasts(_ context.Context, req *memoryv1.SearchBroadcastsRequest) (*memoryv1.SearchBroadcastsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("SearchBroadcasts"); ok {
		return nil, injected(fault)
	}
	_, limit, err := rules.ValidateSearch(false, "", req.GetQuery(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	q := parseQuery(req.GetQuery())
	resp := &memoryv1.SearchBroadcastsResponse{}
	for i := len(f.bcOrder) - 1; i >= 0 && len(resp.Hits) < limit; i-- {
		if b := f.broadcasts[f.bcOrder[i]]; q.matches(b.GetContent()) {
			resp.Hits = append(resp.Hits, &memoryv1.BroadcastHit{Broadcast: proto.Clone(b).(*memoryv1.Broadcast), Snippet: q.snippet(b.GetContent()), Rank: 1})
		}
	}
	return resp, nil
}
