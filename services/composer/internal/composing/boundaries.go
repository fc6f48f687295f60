package composing

import "github.com/maypok86/otter/v2"

// Boundaries remembers the compaction boundary of each mysis's last request (compose.Manifest.Boundary and
// CompactSeq), so the next request can extend it append-only and keep the provider's prompt cache warm
// (compose.Input.PrevBoundary and PrevCompactSeq) when the caller does not pass the previous compaction back itself
// (ComposeContextRequest.previous_compaction; the runner does). It is a cache: a mysis it forgot (a restart,
// eviction) or last composed on another replica is composed from the boundary chosen afresh or from an older one,
// which costs a cache miss at the provider, never correctness. Bounded: past its size the entries least likely to
// be used again go first (otter, as the carry cache).
type Boundaries struct {
	c   *otter.Cache[string, Mark]
	max int
}

// MaxBoundaries is how many myses Boundaries remembers by default.
const MaxBoundaries = 100_000

// Mark is one mysis's boundary and compaction seq.
type Mark struct{ Boundary, CompactSeq int64 }

// NewBoundaries remembers up to n myses' marks.
func NewBoundaries(n int) *Boundaries {
	return &Boundaries{c: otter.Must(&otter.Options[string, Mark]{MaximumSize: n}), max: n}
}

// Get is the mysis's last mark (zero: none remembered).
func (b *Boundaries) Get(id string) Mark {
	m, _ := b.c.GetIfPresent(id)
	return m
}

// Put remembers the mysis's mark.
func (b *Boundaries) Put(id string, m Mark) { b.c.Set(id, m) }

// Fill is how many myses' marks are remembered, against the bound.
func (b *Boundaries) Fill() Fill {
	return Fill{Name: "composer.boundaries", Unit: "myses", Size: int64(b.c.EstimatedSize()), Bound: int64(b.max)}
}
