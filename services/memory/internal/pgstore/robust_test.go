package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Runs of exclusion dashes once overflowed Postgres's tsquery operator stack ("tsquery stack too small" → Internal).
// Every hostile query now answers: hits or none, never an error; and a meaningful exclusion still excludes.
func TestSearchSurvivesOperatorFloods(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("iron ore in the belt"), assistant("copper ore at Haven")}))
	floods := []string{
		strings.Repeat("-", 33),
		strings.Repeat("-", 200) + "x",
		strings.Repeat("- ", 200) + "x",
		"ore " + strings.Repeat("-", 100) + "copper",
		`"iron"` + strings.Repeat("-", 40) + "b",
		"ore or -" + strings.Repeat("-", 40) + "b",
		strings.Repeat("-x ", 300),
		strings.Repeat(`"`, 300) + "ore",
		strings.Repeat("or ", 300) + "ore",
		"ore" + strings.Repeat("-", 300) + "iron",
	}
	for _, q := range floods {
		if _, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}); err != nil {
			t.Errorf("query %.30q…: %v", q, err)
		}
		if _, err := s.SearchBroadcasts(ctx, memory.SearchQuery{Text: q}); err != nil {
			t.Errorf("broadcast query %.30q…: %v", q, err)
		}
		if _, err := s.SearchReasoning(ctx, memory.SearchQuery{MysisID: m.ID, Text: q}); err != nil {
			t.Errorf("reasoning query %.30q…: %v", q, err)
		}
	}
	// Parity is kept: three dashes exclude like one, two cancel out.
	hits := must[[]memory.MemoryHit](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "ore ---copper"}))
	if len(hits) != 1 || !strings.Contains(hits[0].Memory.Content, "iron") {
		t.Errorf("ore ---copper: %d hits, want only the iron one", len(hits))
	}
	hits = must[[]memory.MemoryHit](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "ore - - copper"}))
	if len(hits) != 1 || !strings.Contains(hits[0].Memory.Content, "copper") {
		t.Errorf("ore - - copper: %d hits, want only the copper one", len(hits))
	}
}

func TestBoundQueryOperators(t *testing.T) {
	for in, want := range map[string]string{
		"iron-ore":         "iron-ore",
		"a -b":             "a -b",
		"a --b":            "a b",
		"a ---b":           "a -b",
		"a - - - b":        "a -b",
		"---":              "",
		"x -":              "x -",
		"iron_ore -copper": "iron_ore -copper",
	} {
		if got := memory.BoundQueryOperators(in); strings.Join(strings.Fields(got), " ") != want {
			t.Errorf("BoundQueryOperators(%q) = %q, want %q", in, got, want)
		}
	}
}
