package tools

import (
	"testing"
)

// The search tools' schema bytes are pinned: they count against the token budget and are part of the prompt a
// provider caches, so a change must be deliberate (issue 42: the query is asked in plain words now, and says how).
func TestSearchSchema(t *testing.T) {
	want := `{"type":"object","properties":{` +
		`"query":{"type":"string","description":"What you are looking for, in plain words or as a question (\"where did I sell copper ore?\"). ` +
		`Every word counts, none is required: rare words (names, places, ids like iron_ore, numbers) weigh most, so include them; ` +
		`other word forms match (went/go, ores/ore). \"exact phrase\" requires the phrase, -word excludes."},` +
		`"limit":{"type":"integer","description":"Maximum results (default 10).","minimum":1,"maximum":50}},` +
		`"required":["query"],"additionalProperties":false}`
	if got := string(searchSchema(false)); got != want {
		t.Fatalf("search schema\n got %s\nwant %s", got, want)
	}
}

// The session parameter disappears from properties and required; everything else, unknown keywords included,
// survives.
func TestLLMSchemaDropsTheSessionParameter(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      any
		want    string
		session bool
	}{
		{"session among others", map[string]any{"type": "object", "x-game": "spacemolt",
			"properties": map[string]any{"target": map[string]any{"type": "string", "enum": []any{"a", "b"}}, "session_id": map[string]any{"type": "string"}},
			"required":   []any{"session_id", "target"}},
			`{"type":"object","properties":{"target":{"type":"string","enum":["a","b"]}},"required":["target"],"x-game":"spacemolt"}`, true},
		{"only the session", map[string]any{"type": "object", "properties": map[string]any{"session_id": map[string]any{"type": "string"}}, "required": []any{"session_id"}},
			`{"type":"object","properties":{}}`, true},
		{"no session", map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
			`{"type":"object","properties":{"n":{"type":"integer"}}}`, false},
		{"no schema", nil, `{"type":"object","properties":{}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, has, err := llmSchema(c.in)
			if err != nil || string(got) != c.want || has != c.session {
				t.Fatalf("llmSchema = %s, %v, %v; want %s, %v", got, has, err, c.want, c.session)
			}
		})
	}
}
