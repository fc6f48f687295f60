package compose_test

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// FuzzCompose turns fuzz bytes into a history (see histgen) and checks that the request is valid under
// chatvalid.Strict, fits the budget, and is byte-identical across runs and after persisting a returned nudge.
func FuzzCompose(f *testing.F) {
	tok, err := o200k.Load()
	if err != nil {
		f.Fatal(err)
	}
	gen := histgen.NewGenerator()
	f.Add([]byte{})
	f.Add([]byte("\x40\x10\x30\x50\x60\x70\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"))
	f.Add([]byte("zoea mysis history with parallel tool calls and lost rows ............................................"))
	src := histgen.NewRand(7)
	for range 32 {
		b := make([]byte, 200)
		for i := range b {
			b[i] = byte(src.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := gen.Case(histgen.NewBytes(data))
		out, err := histgen.Check(c, tok)
		if out == histgen.Invalid || out == histgen.OverBudget {
			t.Fatalf("outcome %d: %v", out, err)
		}
		if err := histgen.CheckDeterminism(c); err != nil {
			t.Fatal(err)
		}
	})
}
