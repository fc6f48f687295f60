package replaybench

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// Diagnose sorts exactly the misses Run counts for Zoea v3 on the same sessions: as many in-turn requests and
// breaks, state cases and misses, fact asks and losses, each miss with one cause.
func TestDiagnoseAgreesWithRun(t *testing.T) {
	o := Options{Sessions: 2, Calls: 120, Seed: 3, Shape: histgen.ShapeMixed, Only: "zoea v3", Parallel: 1}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stats) != 1 {
		t.Fatalf("systems %d, want Zoea v3 alone", len(res.Stats))
	}
	st := res.Stats[0]
	d, err := Diagnose(o)
	if err != nil {
		t.Fatal(err)
	}
	if d.InTurn != st.InTurn || d.Broken != st.BrokenInTurn || sum(d.BreakCauses) != d.Broken {
		t.Errorf("in-turn %d/%d broken %d/%d causes %d", d.InTurn, st.InTurn, d.Broken, st.BrokenInTurn, sum(d.BreakCauses))
	}
	if d.StateCases != st.CovCases || sum(d.StateMisses) != st.CovCases-st.Covered {
		t.Errorf("state cases %d/%d misses %d, want %d", d.StateCases, st.CovCases, sum(d.StateMisses), st.CovCases-st.Covered)
	}
	if d.FactAsks != st.FactAsks || sum(d.FactMisses) != st.FactAsks-st.FactPresent-st.FactPointer {
		t.Errorf("fact asks %d/%d misses %d, want %d", d.FactAsks, st.FactAsks, sum(d.FactMisses), st.FactAsks-st.FactPresent-st.FactPointer)
	}
	if d.InTurn == 0 || d.StateCases == 0 || sum(d.Moves) == 0 {
		t.Errorf("nothing replayed: %+v", d)
	}
}
