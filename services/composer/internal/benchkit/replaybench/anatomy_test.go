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
	if a.Rewritten != a.CarryAgain+a.LiveAgain {
		t.Errorf("rewritten %d != carried %d + live %d", a.Rewritten, a.CarryAgain, a.LiveAgain)
	}
	if a.Rewritten+a.CarryKept > a.Tokens {
		t.Errorf("rewritten %d + carried kept %d > request tokens %d", a.Rewritten, a.CarryKept, a.Tokens)
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
