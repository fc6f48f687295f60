package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// A mysis finds its own tool calls by tool name and by argument: `sell {"item_id":"titanium_ore"}` answers "sell",
// "titanium_ore" and "sell titanium_ore" (words of the message and of its call together), never another mysis's.
func TestSearchFindsToolCalls(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	other := mkMysis(t, s)
	sell := memory.ToolCall{ID: "c1", Name: "sell", Arguments: `{"item_id":"titanium_ore","quantity":5}`}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		user("Trade what you mined."), // 1
		assistant("Selling now.", sell, memory.ToolCall{ID: "c2", Name: "get_status", Arguments: `{}`}),                            // 2
		toolResult("c1", "sell", `{"credits_earned":240}`),                                                                         // 3
		toolResult("c2", "get_status", `{"credits":1200}`),                                                                         // 4
		assistant("", memory.ToolCall{ID: "c3", Name: "travel", Arguments: `{"target_poi":"haven_station","note":"line\nbreak"}`}), // 5
		toolResult("c3", "travel", `{"status":"in_transit"}`),                                                                      // 6
	}))
	must[[]memory.Memory](t)(s.AppendMemories(ctx, other.ID, []memory.NewMemory{
		assistant("", memory.ToolCall{ID: "x", Name: "sell", Arguments: `{"item_id":"titanium_ore"}`}),
	}))
	seqs := func(q string, o memory.SearchOrder) string {
		t.Helper()
		var b []string
		for _, h := range msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q, Order: o})) {
			if h.Memory.MysisID != m.ID {
				t.Fatalf("%q crossed myses", q)
			}
			b = append(b, fmt.Sprint(h.Memory.Seq))
		}
		return strings.Join(b, ",")
	}
	for _, o := range []memory.SearchOrder{memory.OrderRelevance, memory.OrderRecency} {
		for q, want := range map[string]string{
			"titanium_ore":                    "2",
			"sell":                            "2",
			"sell titanium_ore":               "2",
			`"selling now" titanium_ore`:      "2",
			"item_id":                         "2",
			"get_status":                      "2",
			"haven_station":                   "5",
			"travel haven_station":            "5",
			"break":                           "5", // \n inside the arguments' JSON does not glue words
			"titanium_ore -get_status":        "",
			"in_transit":                      "6",
			"credits_earned":                  "3",
			`sell {"item_id":"titanium_ore"}`: "2",
			`"quantity":5`:                    "2",
			"c1":                              "", // call ids are not indexed
			"arguments":                       "", // nor the JSON's own keys
		} {
			if got := seqs(q, o); got != want {
				t.Errorf("order %d, %q: seqs %q, want %q", o, q, got, want)
			}
		}
	}
	// The snippet shows the call that matched.
	hs := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "titanium_ore"}))
	if len(hs) != 1 || !strings.Contains(hs[0].Snippet, "«titanium»_«ore»") || !strings.Contains(hs[0].Snippet, "sell") {
		t.Fatalf("snippet: %+v", hs)
	}
	if hs[0].Memory.Content != "Selling now." || len(hs[0].Memory.ToolCalls) != 2 {
		t.Fatalf("the hit's memory is not the stored one: %+v", hs[0].Memory)
	}
}

// Recency order lists the newest matches first whatever their rank; relevance puts the best first.
func TestSearchRecencyOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		assistant("iron iron iron iron"),                                                       // 1: the best match
		toolResult("c1", "get_cargo", `{"item_id":"iron_ore"}`),                                // 2
		{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Mine more iron."},        // 3: a nudge
		assistant("Docked. Some iron left, and a long text about many other things entirely."), // 4
		assistant("nothing to see"),                                                            // 5
	}))
	get := func(o memory.SearchOrder, limit int, nudges bool) []memory.MemoryHit {
		t.Helper()
		r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "iron", Order: o, Limit: limit, IncludeNudges: nudges}))
		if r.CandidatesBounded {
			t.Fatalf("bounded with 4 matches")
		}
		return r.Hits
	}
	seqs := func(hs []memory.MemoryHit) string {
		var b []string
		for _, h := range hs {
			b = append(b, fmt.Sprint(h.Memory.Seq))
		}
		return strings.Join(b, ",")
	}
	if got := seqs(get(memory.OrderRecency, 0, false)); got != "4,2,1" {
		t.Errorf("recency: %s", got)
	}
	if got := seqs(get(memory.OrderRecency, 0, true)); got != "4,3,2,1" {
		t.Errorf("recency with nudges: %s", got)
	}
	if got := seqs(get(memory.OrderRecency, 2, false)); got != "4,2" {
		t.Errorf("recency limit 2: %s", got)
	}
	rel := get(memory.OrderRelevance, 0, false)
	if len(rel) != 3 || rel[0].Memory.Seq != 1 {
		t.Errorf("relevance: %s", seqs(rel))
	}
	for _, h := range get(memory.OrderRecency, 0, false) {
		if h.Rank <= 0 || !strings.Contains(h.Snippet, "«") {
			t.Errorf("recency hit without rank or snippet: %+v", h)
		}
	}
}

// Relevance no longer depends on age (issue 42): an old best match behind hundreds of newer matches of the same word
// (the old engine ranked the newest 200) is ranked first, because the word is read whole while at most
// SearchCandidates memories hold it and BM25 ranks by IDF, saturation and length; recency order still starts at the
// newest.
func TestSearchRelevanceReachesTheOldestMatch(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{assistant("ore")})) // seq 1: the best match
	var rows []memory.NewMemory
	for i := range memory.SearchCandidates - 100 {
		rows = append(rows, toolResult(fmt.Sprintf("c%d", i), "get_cargo",
			fmt.Sprintf(`{"cargo":[{"item_id":"iron_ore","qty":%d}],"note":"a longer result about the ore hold %d"}`, i, i)))
		if len(rows) == 500 {
			must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
			rows = nil
		}
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
	countTerms(t, s)
	n := int64(memory.SearchCandidates - 100 + 1)
	r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "ore", Limit: 5}))
	if r.CandidatesBounded || len(r.Hits) != 5 || r.Hits[0].Memory.Seq != 1 || r.Matches != n || r.MatchesEstimated {
		t.Fatalf("bounded %v, %d hits, first %d, matches %d (estimated %v)", r.CandidatesBounded, len(r.Hits), r.Hits[0].Memory.Seq,
			r.Matches, r.MatchesEstimated)
	}
	r = must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "ore", Limit: 5, Order: memory.OrderRecency}))
	if len(r.Hits) != 5 || r.Hits[0].Memory.Seq != n {
		t.Fatalf("recency: first %+v", r.Hits[0].Memory.Seq)
	}
}
