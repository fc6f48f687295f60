package memorycontract

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// uniqueWord is a lower-case word no other test writes (letters only, so stemming leaves it whole).
func uniqueWord() string {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(uuid.NewString(), "-", "")[:10] {
		b.WriteByte("abcdefghijklmnop"[strings.IndexRune("0123456789abcdef", r)])
	}
	return "zq" + b.String() + "x"
}

// hitSeqs lists the seqs of message hits and checks each hit's snippet shows word.
func hitSeqs(t *testing.T, what, word string, hits []*memoryv1.MemoryHit) []int64 {
	t.Helper()
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.GetMemory().GetSeq()
		if !strings.Contains(h.GetSnippet(), word) {
			t.Errorf("%s: hit %d's snippet %q does not show %q", what, i, h.GetSnippet(), word)
		}
	}
	return out
}

func sameSet(a []int64, b ...int64) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[int64]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

// testSearchMessages: SearchMessages finds one mysis's memories (text and tool calls; deliveries of broadcasts by
// the broadcast's text) holding the words, never another mysis's, nudges only when asked; recency order is newest
// first.
func testSearchMessages(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	word, other := uniqueWord(), uniqueWord()
	m, o := newMysis(t, c, uniqueName("search")), newMysis(t, c, uniqueName("search"))
	appendOK(t, c, m.GetId(),
		userMemory("Mine "+word+" in the belt.", ""), // 1
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "Heading out.", // 2
			ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "mine", ArgumentsJson: `{"item_id":"` + word + `"}`}}},
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c1", ToolName: "mine", Content: `{"ok":true}`}, // 3
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_NUDGE, Content: "Keep mining " + word + "."},                      // 4
		userMemory("Now sell "+other+".", ""), // 5
	)
	appendOK(t, c, o.GetId(), userMemory("Mine "+word+" too.", ""))
	if _, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{Content: "All myses: hoard " + word + ".", TargetMysisIds: []string{m.GetId()}}); err != nil {
		t.Fatal(err) // delivered as seq 6
	}
	search := func(req *memoryv1.SearchMessagesRequest) []int64 {
		t.Helper()
		resp, err := c.SearchMessages(ctx, req)
		if err != nil {
			t.Fatalf("SearchMessages(%q): %v", req.GetQuery(), err)
		}
		for _, h := range resp.GetHits() {
			if h.GetMemory().GetMysisId() != m.GetId() {
				t.Errorf("SearchMessages returned another mysis's memory %v", h.GetMemory())
			}
		}
		return hitSeqs(t, "SearchMessages "+req.GetQuery(), word, resp.GetHits())
	}
	if got := search(&memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: word}); !sameSet(got, 1, 2, 6) {
		t.Errorf("search %q = seqs %v, want 1, 2 and 6 (the order, the call's arguments, the broadcast; not the nudge)", word, got)
	}
	if got := search(&memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: word, IncludeNudges: true, Order: memoryv1.SearchOrder_SEARCH_ORDER_RECENCY}); len(got) != 4 || got[0] != 6 || got[1] != 4 || got[2] != 2 || got[3] != 1 {
		t.Errorf("search %q with nudges, newest first = seqs %v, want [6 4 2 1]", word, got)
	}
	if got := search(&memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: word, Limit: 1, Order: memoryv1.SearchOrder_SEARCH_ORDER_RECENCY}); len(got) != 1 || got[0] != 6 {
		t.Errorf("search %q, limit 1, newest first = seqs %v, want [6]", word, got)
	}
	if got := search(&memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: uniqueWord()}); len(got) != 0 {
		t.Errorf("a word never written found seqs %v", got)
	}
	// Words are optional (issue 42): a question whose other words occur nowhere still finds what holds one, and the
	// answer says how many memories matched.
	resp, err := c.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: "Where did I mine " + word + " and " + uniqueWord() + "?"})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitSeqs(t, "a question", word, resp.GetHits()); len(got) == 0 || resp.GetMatches() < int64(len(got)) {
		t.Errorf("a question with one word that occurs: seqs %v, matches %d", got, resp.GetMatches())
	}
	for _, tc := range []struct {
		what, field string
		req         *memoryv1.SearchMessagesRequest
	}{
		{"a blank query", "query", &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: "  "}},
		{"a query of 2 kB", "query", &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: strings.Repeat("ore ", 512)}},
		{"a malformed mysis id", "mysis_id", &memoryv1.SearchMessagesRequest{MysisId: "nope", Query: word}},
		{"no mysis id", "mysis_id", &memoryv1.SearchMessagesRequest{Query: word}},
		{"a negative limit", "limit", &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: word, Limit: -1}},
		{"an unknown order", "order", &memoryv1.SearchMessagesRequest{MysisId: m.GetId(), Query: word, Order: 9}},
	} {
		_, err := c.SearchMessages(ctx, tc.req)
		wantInvalid(t, "SearchMessages with "+tc.what, err, tc.field)
	}
}

// testSearchReasoning: SearchReasoning finds one mysis's memories by their reasoning only.
func testSearchReasoning(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	word := uniqueWord()
	m, o := newMysis(t, c, uniqueName("reason")), newMysis(t, c, uniqueName("reason"))
	appendOK(t, c, m.GetId(),
		userMemory("Why "+word+"?", ""), // 1: content only
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "Selling.", Reasoning: "The " + word + " price is high."}, // 2
	)
	appendOK(t, c, o.GetId(), &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "x", Reasoning: word})
	resp, err := c.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: m.GetId(), Query: word})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitSeqs(t, "SearchReasoning", word, resp.GetHits()); len(got) != 1 || got[0] != 2 || resp.GetHits()[0].GetMemory().GetMysisId() != m.GetId() {
		t.Errorf("SearchReasoning(%q) = seqs %v, want [2] (the reasoning; not the content, not another mysis)", word, got)
	}
	_, err = c.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: m.GetId(), Query: ""})
	wantInvalid(t, "SearchReasoning without a query", err, "query")
	_, err = c.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: "nope", Query: word})
	wantInvalid(t, "SearchReasoning with a malformed mysis id", err, "mysis_id")
	_, err = c.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: m.GetId(), Query: word, Limit: -3})
	wantInvalid(t, "SearchReasoning with a negative limit", err, "limit")
}

// testSearchBroadcasts: SearchBroadcasts finds broadcasts swarm-wide by their text.
func testSearchBroadcasts(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	word := uniqueWord()
	m := newMysis(t, c, uniqueName("bcsearch"))
	bid := uuid.NewString()
	if _, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{BroadcastId: bid, Content: "Everyone: stockpile " + word + " at Sol.", TargetMysisIds: []string{m.GetId()}}); err != nil {
		t.Fatal(err)
	}
	appendOK(t, c, m.GetId(), userMemory("A direct order about "+word+".", ""))
	resp, err := c.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{Query: word})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetHits()) != 1 || resp.GetHits()[0].GetBroadcast().GetId() != bid || !strings.Contains(resp.GetHits()[0].GetSnippet(), word) ||
		resp.GetHits()[0].GetBroadcast().GetContent() != "Everyone: stockpile "+word+" at Sol." {
		t.Errorf("SearchBroadcasts(%q) = %v, want the one broadcast (not the direct order)", word, resp.GetHits())
	}
	if resp, err := c.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{Query: uniqueWord()}); err != nil || len(resp.GetHits()) != 0 {
		t.Errorf("a word never broadcast = %v, %v", resp.GetHits(), err)
	}
	_, err = c.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{Query: " \n"})
	wantInvalid(t, "SearchBroadcasts with a blank query", err, "query")
	_, err = c.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{Query: word, Limit: -1})
	wantInvalid(t, "SearchBroadcasts with a negative limit", err, "limit")
}
