package grpcapi

import "sync"

// boundaries remembers the compaction boundary of each mysis's last request (compose.Manifest.Boundary and
// CompactSeq), so the next request can extend it append-only and keep the provider's prompt cache warm
// (compose.Input.PrevBoundary and PrevCompactSeq) when the caller does not pass the previous compaction back itself
// (ComposeContextRequest.previous_compaction; the runner does). It is a cache: a mysis it forgot (a restart,
// eviction) or last composed on another replica is composed from the boundary chosen afresh or from an older one,
// which costs a cache miss at the provider, never correctness. Bounded: past maxBoundaries myses the oldest entries
// are evicted first.
type boundaries struct {
	mu    sync.Mutex
	seqs  map[string]mark
	order []string // insertion order, for eviction
	max   int
}

const maxBoundaries = 100_000

// mark is one mysis's boundary and compaction seq.
type mark struct{ boundary, compactSeq int64 }

func newBoundaries(n int) *boundaries {
	return &boundaries{seqs: make(map[string]mark), max: n}
}

func (b *boundaries) get(id string) mark {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seqs[id]
}

func (b *boundaries) put(id string, m mark) {
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
