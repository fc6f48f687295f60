package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

func TestSearchMessages(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	other := mkMysis(t, s)
	docs := []memory.NewMemory{
		user("Mine iron ore in the Sol belt"), // 1
		toolResult("c1", "get_cargo", `{"cargo":[{"item_id":"iron_ore","qty":12},{"item_id":"copper_ore","qty":3}]}`), // 2
		assistant("Selling copper at Haven station"),                                                                  // 3
		toolResult("c2", "login", `{"session_id":"a3f9c2e1b7d04f55","player":"pilot_one"}`),                           // 4
		assistant("Trade id e3b0c442-98fc-1c14-9afb-4c8996fb9242 confirmed"),                                          // 5
		{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue mining iron."},                         // 6
		toolResult("c3", "get_status", `{"msg":"Arrived.\nDocked at Sol"}`),                                           // 7
		assistant("IRON IRON iron everywhere, iron ore galore"),                                                       // 8
		assistant("The travel cooldown is long"),                                                                      // 9
		assistant("cooldown of travel"),                                                                               // 10
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, docs))
	must[[]memory.Memory](t)(s.AppendMemories(ctx, other.ID, []memory.NewMemory{user("iron ore secret of another mysis")}))

	search := func(q string, nudges bool) []memory.MemoryHit {
		t.Helper()
		return msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q, IncludeNudges: nudges}))
	}
	seqs := func(hs []memory.MemoryHit) string {
		var b []string
		for _, h := range hs {
			b = append(b, fmt.Sprint(h.Memory.Seq))
		}
		return strings.Join(b, ",")
	}
	has := func(hs []memory.MemoryHit, seq int64) bool {
		for _, h := range hs {
			if h.Memory.Seq == seq {
				return true
			}
		}
		return false
	}

	// Ranking: the row saying iron most (relative to its length) first; never another mysis's rows.
	hs := search("iron", false)
	if len(hs) == 0 || hs[0].Memory.Seq != 8 {
		t.Fatalf("iron ranking: %s", seqs(hs))
	}
	for _, h := range hs {
		if h.Memory.MysisID != m.ID {
			t.Fatalf("search crossed myses")
		}
		if h.Rank <= 0 {
			t.Fatalf("rank %v", h.Rank)
		}
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].Rank > hs[i-1].Rank {
			t.Fatalf("not ranked: %v", hs)
		}
	}
	// Nudges only on request.
	if has(hs, 6) {
		t.Fatalf("nudge returned by default")
	}
	if !has(search("iron", true), 6) {
		t.Fatalf("nudge missing with include_nudges")
	}
	// Case-insensitive and stemmed.
	if !has(search("MINING", false), 1) {
		t.Fatalf("MINING did not find 'Mine'")
	}
	// Identifiers: iron_ore as typed, and as two words.
	if hs := search("iron_ore", false); !has(hs, 2) || has(hs, 3) {
		t.Fatalf("iron_ore: %s", seqs(hs))
	}
	if hs := search("iron ore", false); !has(hs, 2) || !has(hs, 1) {
		t.Fatalf("iron ore: %s", seqs(hs))
	}
	if hs := search("copper_ore", false); seqs(hs) != "2" {
		t.Fatalf("copper_ore: %s", seqs(hs))
	}
	// Hex session ids and UUIDs.
	if hs := search("a3f9c2e1b7d04f55", false); seqs(hs) != "4" {
		t.Fatalf("hex: %s", seqs(hs))
	}
	if hs := search("A3F9C2E1B7D04F55", false); seqs(hs) != "4" {
		t.Fatalf("hex upper: %s", seqs(hs))
	}
	if hs := search("e3b0c442-98fc-1c14-9afb-4c8996fb9242", false); seqs(hs) != "5" {
		t.Fatalf("uuid: %s", seqs(hs))
	}
	// JSON escapes do not glue words together.
	if hs := search("docked", false); seqs(hs) != "7" {
		t.Fatalf("docked behind \\n: %s", seqs(hs))
	}
	// Phrases, OR, exclusion.
	if hs := search(`"travel cooldown"`, false); seqs(hs) != "9" {
		t.Fatalf("phrase: %s", seqs(hs))
	}
	if hs := search("travel cooldown", false); !has(hs, 9) || !has(hs, 10) {
		t.Fatalf("words: %s", seqs(hs))
	}
	if hs := search("copper OR cooldown", false); !has(hs, 2) || !has(hs, 3) || !has(hs, 9) || !has(hs, 10) {
		t.Fatalf("or: %s", seqs(hs))
	}
	if hs := search("iron -copper", false); has(hs, 2) || !has(hs, 1) {
		t.Fatalf("exclusion: %s", seqs(hs))
	}
	// Nothing matches / only stop words: empty, not an error.
	if hs := search("zyzzyva", false); len(hs) != 0 {
		t.Fatalf("no match: %s", seqs(hs))
	}
	if hs := search("the", false); len(hs) != 0 {
		t.Fatalf("stop words: %s", seqs(hs))
	}
	// Query syntax characters are just text.
	if hs := search(`'%_" OR (`, false); len(hs) != 0 {
		t.Fatalf("syntax chars: %s", seqs(hs))
	}
	// Snippets mark matches.
	hs = search("haven", false)
	if len(hs) != 1 || !strings.Contains(hs[0].Snippet, "«Haven»") {
		t.Fatalf("snippet: %+v", hs)
	}
	// Limit.
	if hs := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "iron", Limit: 1})); len(hs) != 1 {
		t.Fatalf("limit: %d", len(hs))
	}
	_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: memory.NewID(), Text: "iron"})
	wantKind(t, err, errs.NotFound, "")
}

func TestSearchNewestFirstOnEqualRank(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	for range 5 {
		must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{assistant("scan the belt")}))
	}
	hs := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "belt"}))
	if len(hs) != 5 {
		t.Fatalf("%d hits", len(hs))
	}
	for i, h := range hs {
		if h.Memory.Seq != int64(5-i) {
			t.Fatalf("equal ranks not newest first: hit %d is seq %d", i, h.Memory.Seq)
		}
	}
}

func TestSearchReasoningAndBroadcasts(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "Traveling.", Reasoning: "The travel cooldown means I should sell first."},
		{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "cooldown in content only"},
	}))
	hs := msgHits(t)(s.SearchReasoning(ctx, memory.SearchQuery{MysisID: m.ID, Text: "cooldown"}))
	if len(hs) != 1 || hs[0].Memory.Seq != 1 || !strings.Contains(hs[0].Snippet, "«cooldown»") {
		t.Fatalf("reasoning: %+v", hs)
	}

	must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: "Enemy spotted near Sol, avoid sector 7"}, nil))
	must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: "Sell iron_ore at Haven"}, nil))
	bh := must[[]memory.BroadcastHit](t)(s.SearchBroadcasts(ctx, memory.SearchQuery{Text: `"enemy spotted" -haven`}))
	if len(bh) != 1 || !strings.HasPrefix(bh[0].Broadcast.Content, "Enemy") || !strings.Contains(bh[0].Snippet, "«Enemy» «spotted»") {
		t.Fatalf("broadcasts: %+v", bh)
	}
	if bh := must[[]memory.BroadcastHit](t)(s.SearchBroadcasts(ctx, memory.SearchQuery{Text: "iron_ore"})); len(bh) != 1 {
		t.Fatalf("broadcast identifier: %+v", bh)
	}
}

// The commander's order and the mysis's own words rank above raw tool output for the same match, however often the
// JSON repeats the word.
func TestSearchRanksWordsAboveToolOutput(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	rows := []memory.NewMemory{user("Mine copper_ore at main_belt, then sell it at sol_central.")} // seq 1
	for i := range 12 {
		rows = append(rows, toolResult(fmt.Sprintf("c%d", i), "get_cargo",
			`{"cargo":[{"item_id":"copper_ore","qty":3},{"item_id":"copper_ore","qty":4}],"note":"copper_ore copper_ore"}`))
	}
	rows = append(rows, assistant("Mining copper_ore now; cargo is filling up with it and more of it soon.")) // seq 14
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
	hs := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "copper_ore", Limit: 50}))
	if len(hs) != 14 {
		t.Fatalf("%d hits, want 14", len(hs))
	}
	top := map[int64]bool{hs[0].Memory.Seq: true, hs[1].Memory.Seq: true}
	if !top[1] || !top[14] {
		t.Fatalf("the order (seq 1) and the reply (seq 14) should be the first two hits, got seqs %d, %d", hs[0].Memory.Seq, hs[1].Memory.Seq)
	}
	for i, h := range hs[2:] {
		if h.Memory.Role != memory.RoleTool {
			t.Fatalf("hit %d is a %v row below tool output", i+2, h.Memory.Role)
		}
		if h.Rank >= hs[1].Rank {
			t.Fatalf("tool rank %v not below the words' %v", h.Rank, hs[1].Rank)
		}
	}
}
