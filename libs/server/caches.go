package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// CachesPath is where the debug listener (ZOEA_DEBUG_ADDR) serves the process's bounded caches as JSON: a list of
// CacheFill, sorted by name. A soak (`make soak`) reads it every minute to see each cache reach its bound and stay.
const CachesPath = "/debug/caches"

// CacheFill is how full one bounded cache is: Size of Bound, both in Unit ("entries", "bytes", "myses"). Bound 0
// means the cache has no fixed bound of its own and holds one entry per live thing it names (Unit says which).
type CacheFill struct {
	Name  string `json:"name"`
	Unit  string `json:"unit"`
	Size  int64  `json:"size"`
	Bound int64  `json:"bound"`
}

// caches is the process's published cache reports. Package-level on purpose: the debug listener opens before a
// service builds its caches (Start, then Run), and a test process that runs several services reports them all.
var caches struct {
	mu   sync.Mutex
	next int
	fns  map[int]func() []CacheFill
}

// PublishCaches adds fill to what CachesPath serves until the returned unpublish is called. fill must be safe to
// call from another goroutine at any time. The caches' own packages stay free of this one: a service's wiring (its
// app or transport) publishes what they report.
func PublishCaches(fill func() []CacheFill) (unpublish func()) {
	caches.mu.Lock()
	defer caches.mu.Unlock()
	if caches.fns == nil {
		caches.fns = map[int]func() []CacheFill{}
	}
	id := caches.next
	caches.next++
	caches.fns[id] = fill
	return func() {
		caches.mu.Lock()
		delete(caches.fns, id)
		caches.mu.Unlock()
	}
}

// CacheFills is every published cache's fill, sorted by name.
func CacheFills() []CacheFill {
	caches.mu.Lock()
	fns := make([]func() []CacheFill, 0, len(caches.fns))
	for _, f := range caches.fns {
		fns = append(fns, f)
	}
	caches.mu.Unlock()
	out := []CacheFill{}
	for _, f := range fns {
		out = append(out, f()...)
	}
	slices.SortStableFunc(out, func(a, b CacheFill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func serveCaches(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(CacheFills())
}
