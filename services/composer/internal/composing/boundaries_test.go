package composing

import (
	"fmt"
	"testing"
)

// Boundaries returns what it was given, forgets nothing it has room for, and stays within its bound however many
// myses pass through.
func TestBoundariesRememberWithinTheirBound(t *testing.T) {
	b := NewBoundaries(100)
	for i := range 100 {
		b.Put(fmt.Sprintf("m%d", i), Mark{Boundary: int64(i), CompactSeq: int64(2 * i)})
	}
	for i := range 100 {
		if got := b.Get(fmt.Sprintf("m%d", i)); got != (Mark{Boundary: int64(i), CompactSeq: int64(2 * i)}) {
			t.Fatalf("m%d: %+v", i, got)
		}
	}
	if got := b.Get("never"); got != (Mark{}) {
		t.Fatalf("an unknown mysis has mark %+v", got)
	}
	for i := range 10_000 {
		b.Put(fmt.Sprintf("x%d", i), Mark{Boundary: 1})
	}
	b.c.CleanUp() // otter evicts in batches: what it holds is within the bound once they have run
	if f := b.Fill(); f.Size > f.Bound || f.Bound != 100 {
		t.Fatalf("after 10,100 myses: %d of %d", f.Size, f.Bound)
	}
}
