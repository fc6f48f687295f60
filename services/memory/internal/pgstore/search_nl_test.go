package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Questions as models and people ask them (issue 42): stop and question words, irregular forms, plurals, ids written
// as words, numbers; never empty when a content word occurs; an empty answer explains itself.
func TestSearchNaturalQuestions(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		user("Caroline: I went to a LGBTQ support group yesterday and it was so powerful."),       // 1
		assistant("Melanie: That's great! I painted a sunrise last week."),                        // 2
		user("Caroline: the support of my friends means a lot."),                                  // 3
		assistant("Sold 40 copper_ore at sol_central for 2000 credits."),                          // 4
		user("Pirate spotted near outer_ring, stay docked."),                                      // 5
		toolResult("c1", "get_cargo", `{"cargo":[{"item_id":"zinc","qty":3}],"group":"support"}`), // 6
	}))
	countTerms(t, s)
	first := func(q string) (memory.MessageHits, int64) {
		t.Helper()
		r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}))
		if len(r.Hits) == 0 {
			t.Fatalf("%q: no hits (note %q)", q, r.Note)
		}
		return r, r.Hits[0].Memory.Seq
	}
	for q, want := range map[string]int64{
		"When did Caroline go to the LGBTQ support group?": 1, // go finds went; the evidence beats the other "support" rows
		"When did Melanie paint a sunrise?":                2,
		"how much copper ore did I sell?":                  4, // copper ore finds copper_ore, sell finds sold
		"who saw the pirates?":                             5, // pirates finds pirate
		"what did I get for 2,000 credits":                 4,
		"Where is the zebra? near outer ring":              5, // zebra occurs nowhere: the other words still find
	} {
		if r, got := first(q); got != want {
			t.Errorf("%q: first hit seq %d, want %d (hits %d, matches %d)", q, got, want, len(r.Hits), r.Matches)
		}
	}
	// People's words above raw tool output for the same words: the JSON holding both words ranks below the message
	// holding both (it still beats a message holding one: the prior halves a score, it does not erase it).
	r, got := first("support group")
	if got != 1 || r.Hits[1].Memory.Seq != 6 || r.Matches != 3 || r.MatchesEstimated {
		t.Errorf("support group: seqs %d, %d; matches %d (estimated %v)", got, r.Hits[1].Memory.Seq, r.Matches, r.MatchesEstimated)
	}
	// An identifier nobody wrote falls back to its words, and says so.
	if r, _ := first("zinc_ore"); len(r.Hits) != 2 || !strings.Contains(r.Note, "zinc ore") {
		t.Errorf("zinc_ore: %d hits, note %q", len(r.Hits), r.Note)
	}
	// Nothing to look for: an empty, explained answer, not an error.
	for _, q := range []string{"what is the", "when did they?", "-pirate", `"`, "... --- !!"} {
		r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}))
		if len(r.Hits) != 0 || r.Note == "" {
			t.Errorf("%q: %d hits, note %q", q, len(r.Hits), r.Note)
		}
	}
	// An unbalanced quote reads the rest as words.
	if _, got := first(`"sunrise painted`); got != 2 {
		t.Errorf("unbalanced quote: %d", got)
	}
	// Reasoning search runs on the same engine.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "ok", Reasoning: "I bought the fuel because the jump needs it."},
	}))
	if r := must[memory.MessageHits](t)(s.SearchReasoning(ctx, memory.SearchQuery{MysisID: m.ID, Text: "why did I buy fuel?"})); len(r.Hits) != 1 || r.Matches != 1 {
		t.Errorf("reasoning: %d hits, matches %d", len(r.Hits), r.Matches)
	}
	// Broadcasts too.
	must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: "All pilots: we went to war with the pirates."}, nil))
	if bh := must[[]memory.BroadcastHit](t)(s.SearchBroadcasts(ctx, memory.SearchQuery{Text: "when do we go to war?"})); len(bh) == 0 || !strings.Contains(bh[0].Broadcast.Content, "war") {
		t.Errorf("broadcasts: %+v", bh)
	}
}

// A query whose every word is more common than memory.SearchCandidates scores the newest memories holding all of
// them and says so.
func TestSearchAllCommonWordsIsBoundedAndSaysSo(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	var rows []memory.NewMemory
	for i := range memory.SearchCandidates + 100 {
		rows = append(rows, toolResult(fmt.Sprint("c", i), "travel", fmt.Sprintf(`{"travel":"ok","item":%d}`, i)))
		if len(rows) == 1000 {
			must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
			rows = nil
		}
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
	countTerms(t, s)
	r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "travel item", Limit: 5}))
	if !r.CandidatesBounded || !r.MatchesEstimated || r.Matches < int64(memory.SearchCandidates) || len(r.Hits) != 5 || r.Note == "" {
		t.Fatalf("bounded %v, matches %d (estimated %v), %d hits, note %q", r.CandidatesBounded, r.Matches, r.MatchesEstimated, len(r.Hits), r.Note)
	}
	// A rare word with them is read whole, so the answer is not bounded.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("travel with the item to Kepler")}))
	countTerms(t, s)
	r = must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "kepler travel item", Limit: 5}))
	if r.CandidatesBounded || len(r.Hits) != 1 || !strings.Contains(r.Hits[0].Memory.Content, "Kepler") {
		t.Fatalf("with a rare word: bounded %v, %d hits", r.CandidatesBounded, len(r.Hits))
	}
}

// A question whose rare words occur nowhere still finds what its common words hold (it used to come back empty:
// the rare words' read found nothing and the common words were never read).
func TestSearchAbsentRareWordsFallBackToCommonOnes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	var rows []memory.NewMemory
	for i := range memory.SearchCandidates + 100 {
		rows = append(rows, toolResult(fmt.Sprint("c", i), "travel", fmt.Sprintf(`{"travel":"ok","n":%d}`, i)))
		if len(rows) == 1000 {
			must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
			rows = nil
		}
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
	countTerms(t, s)
	r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "When did Zebediah travel?", Limit: 5}))
	if len(r.Hits) != 5 {
		t.Fatalf("%d hits, note %q", len(r.Hits), r.Note)
	}
}

// A quoted phrase is required while some memory holds it; a title remembered approximately still finds the memory
// by its words, and the note says the phrase was not found as written (LoCoMo: "When did Melanie read the book
// "nothing is impossible"?" came back empty).
func TestSearchQuotedPhraseFallsBackToItsWords(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		user("Melanie: I finished the book Nothing Is Ever Impossible last night."),
		user("Melanie: the weather is nice."),
	}))
	r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: `When did Melanie read the book "nothing is impossible"?`}))
	if len(r.Hits) == 0 || r.Hits[0].Memory.Seq != 1 || !strings.Contains(r.Note, "as written") {
		t.Fatalf("%d hits, note %q", len(r.Hits), r.Note)
	}
	r = must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: `"ever impossible" melanie`}))
	if len(r.Hits) != 1 || r.Note != "" {
		t.Fatalf("a phrase that occurs is required: %d hits, note %q", len(r.Hits), r.Note)
	}
}
