package o200k

import (
	"encoding/json"
	"os"
	"testing"
)

// TestGoldenCorpus pins the shipped mode (the one Load returns) against OpenAI's own tokenizer rather than against
// the Go library it was derived from: testdata/golden.json holds a few hundred realistic texts — SpaceMolt tool
// results and JSON, prose, unicode, code, numbers, white-space runs — with their o200k_base counts from js-tiktoken.
// testdata/golden.mjs regenerates it (see its header).
func TestGoldenCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Encoding string `json:"encoding"`
		Cases    []struct {
			Text   string `json:"text"`
			Tokens int    `json:"tokens"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	if golden.Encoding != "o200k_base" || len(golden.Cases) < 300 {
		t.Fatalf("golden corpus: encoding %q with %d cases; want o200k_base and at least 300", golden.Encoding, len(golden.Cases))
	}
	tok := mustLoad(t)
	counter := tok.NewCounter()
	for i, c := range golden.Cases {
		if got := tok.Count(c.Text); got != c.Tokens {
			t.Errorf("case %d: Count(%q) = %d, tiktoken %d", i, c.Text, got, c.Tokens)
		}
		if got := counter.Count(c.Text); got != c.Tokens {
			t.Errorf("case %d: Counter.Count(%q) = %d, tiktoken %d", i, c.Text, got, c.Tokens)
		}
	}
}
