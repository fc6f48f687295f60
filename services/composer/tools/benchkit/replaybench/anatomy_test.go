package replaybench

import (
	"strings"
	"testing"
)

func TestAnatomyAddsUp(t *testing.T) {
	a, err := Anatomy(Options{Sessions: 2, Seed: 7, Calls: 120})
	if err != nil {
		t.Fatal(err)
	}
	if a.Moves == 0 || a.Moves >= a.Requests {
		t.Fatalf("moves %d of %d requests: want some, not all", a.Moves, a.Requests)
	}
	// The split is computed message by message; the shared prefix by the metric the replay bills with. They must
	// account for every token of the moved requests between them.
	if a.Cached+a.Rewritten() != a.Tokens {
		t.Errorf("cached prefix %d + rewritten %d != request tokens %d", a.Cached, a.Rewritten(), a.Tokens)
	}
	if a.CarryKept > a.Cached {
		t.Errorf("carried state kept %d > cached prefix %d", a.CarryKept, a.Cached)
	}
	n := 0
	for _, c := range a.Causes {
		n += c
	}
	if n != a.Moves {
		t.Errorf("causes count %d moves, want %d", n, a.Moves)
	}
	var b strings.Builder
	a.Table(&b)
	if !strings.Contains(b.String(), "boundary moves") {
		t.Errorf("table:\n%s", b.String())
	}
}
