package window

import "sync"

// Boundaries remembers the compaction boundary of each mysis's last request (compose.Manifest.Boundary and
// CompactSeq), so the next request can extend it append-only and keep the provider's prompt cache warm
// (compose.Input.PrevBoundary and PrevCompactSeq) when the caller does not pass the previous compaction back itself
// (ComposeContextRequest.previous_compaction; the runner does). It is a cache: a mysis it forgot (a restart,
// eviction) or last composed on another replica is composed from the boundary chosen afresh or from an older one,
// which costs a cache miss at the provider, never correctness. Bounded: past MaxBoundaries myses the oldest entries
// are evicted first.
type Boundaries struct {
	mu    sync.Mutex
	seqs  map[string]Mark
	order []string // insertion order, for eviction
	max   int
}

// MaxBoundaries is how many myses Boundaries remembers by default.
const MaxBoundaries = 100_000

// Mark is one mysis's boundary and compaction seq.
type Mark struct{ Boundary, CompactSeq int64 }

// NewBoundaries remembers up to n myses' marks, evicting the oldest first.
func NewBoundaries(n int) *Boundaries {
	return &Boundaries{seqs: make(map[string]Mark), max: n}
}

// Get is the mysis's last mark (zero: none remembered).
func (b *Boundaries) Get(id string) Mark {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seqs[id]
}

// Put remembers the mysis's mark.
func (b *Boundaries) Put(id string, m Mark) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seqs[id]; !ok {
		b.order = append(b.order, id)
	}
	b.seqs[id] = m
	for len(b.seqs) > b.max {
		delete(b.seqs, b.order[0])
		b.order = b.order[1:]
	}
	if cap(b.order) > 4*b.max { // the slice's dead prefix is reclaimed now and then
		b.order = append([]string(nil), b.order...)
	}
}

// Fill is how many myses' marks are remembered, against the bound.
func (b *Boundaries) Fill() Fill {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Fill{Name: "composer.boundaries", Unit: "myses", Size: int64(len(b.seqs)), Bound: int64(b.max)}
}
