// Package tokcache remembers o200k_base token counts across compose calls, so a composer server pays for the
// tokenizer only once per distinct text.
//
// Consecutive composes of one mysis share almost their whole window: each tool loop adds a memory or two and the
// other forty-odd rows, the system prompt and the mission are the same text as last time. Counting is the whole cost
// of a compose (the big JSON tool results), so remembering counts by content makes the steady-state compose count
// only the new rows.
//
// PrefixLen answers (the cut of an over-cap result) are remembered the same way.
//
// Keys are 128-bit hashes of the text (two independently seeded maphash values) plus its length, never the text
// itself, so the cache retains no memory bodies and its size is a fixed number of bytes per entry. A wrong count
// would need two different texts of the same length to collide in 128 bits. Eviction is generational: each shard
// fills a young map; when it is full the young map becomes the old one and the previous old map is dropped; a hit in
// the old map moves the entry back to the young one. That approximates LRU with no per-entry list and bounds the
// cache to its configured number of entries.
//
// A Cache is safe for concurrent use and implements compose.Counter.
package tokcache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
)

// DefaultEntries bounds a cache built with entries <= 0: about 20 MiB, the counts of every text of ~5,000 active myses'
// 50-memory windows.
const DefaultEntries = 1 << 18

// minCached is the shortest text worth a hash and a lock; measured, even tool names and call ids are cheaper to
// look up than to count.
const minCached = 1

const shardCount = 16

type key struct {
	a, b uint64
	n    int // len(s)
	lim  int // -1 for a count; the token limit for a PrefixLen
}

type shard struct {
	mu    sync.Mutex
	young map[key]int32
	old   map[key]int32
	limit int // entries per generation
}

// Cache counts tokens with a tokenizer and remembers the counts of the texts it has seen.
type Cache struct {
	tok    *o200k.Tokenizer
	seedA  maphash.Seed
	seedB  maphash.Seed
	shards [shardCount]shard
	pool   sync.Pool // *o200k.Counter, for misses and short texts

	hits, misses atomic.Uint64
}

// New returns a cache over tok holding at most about entries counts (DefaultEntries when entries <= 0).
func New(tok *o200k.Tokenizer, entries int) *Cache {
	if entries <= 0 {
		entries = DefaultEntries
	}
	perGen := max(entries/shardCount/2, 1)
	c := &Cache{tok: tok, seedA: maphash.MakeSeed(), seedB: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i] = shard{young: make(map[key]int32), old: map[key]int32{}, limit: perGen}
	}
	c.pool.New = func() any { return tok.NewCounter() }
	return c
}

// maxPieces bounds a pooled Counter's piece memo; a Counter that has remembered more is dropped, so odd traffic
// (random ids, base64) cannot grow it without limit.
const maxPieces = 1 << 16

func (c *Cache) countDirect(s string) int {
	ctr := c.pool.Get().(*o200k.Counter)
	n := ctr.Count(s)
	if ctr.Pieces() <= maxPieces {
		c.pool.Put(ctr)
	}
	return n
}

// Count returns the number of o200k_base tokens in s.
func (c *Cache) Count(s string) int {
	if len(s) < minCached {
		return c.countDirect(s)
	}
	k := c.key(s, -1)
	if n, ok := c.get(k); ok {
		return n
	}
	n := c.countDirect(s)
	c.put(k, n)
	return n
}

// PrefixLen is o200k.Tokenizer.PrefixLen, remembered like counts: a result over the cap is cut again at every
// compose of its mysis while it stays in the window, and the cut costs a full tokenization of the body.
func (c *Cache) PrefixLen(s string, n int) int {
	if len(s) < minCached || n <= 0 {
		return c.tok.PrefixLen(s, n)
	}
	k := c.key(s, n)
	if p, ok := c.get(k); ok {
		return p
	}
	p := c.tok.PrefixLen(s, n)
	c.put(k, p)
	return p
}

func (c *Cache) key(s string, lim int) key {
	return key{a: maphash.String(c.seedA, s), b: maphash.String(c.seedB, s), n: len(s), lim: lim}
}

func (c *Cache) get(k key) (int, bool) {
	sh := &c.shards[k.a%shardCount]
	sh.mu.Lock()
	v, ok := sh.young[k]
	if !ok {
		if v, ok = sh.old[k]; ok {
			sh.put(k, v)
		}
	}
	sh.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return int(v), ok
}

func (c *Cache) put(k key, v int) {
	sh := &c.shards[k.a%shardCount]
	sh.mu.Lock()
	sh.put(k, int32(v))
	sh.mu.Unlock()
}

func (sh *shard) put(k key, n int32) {
	if len(sh.young) >= sh.limit {
		sh.old = sh.young
		sh.young = make(map[key]int32, sh.limit)
	}
	sh.young[k] = n
}

// Stats are the cache's counters since it was built.
type Stats struct {
	Hits, Misses uint64
	Entries      int
}

// Bound is how many entries the cache holds at most: two generations of every shard.
func (c *Cache) Bound() int {
	return 2 * shardCount * c.shards[0].limit
}

// Stats returns hit and miss counts (empty texts are in neither) and the current size.
func (c *Cache) Stats() Stats {
	st := Stats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		st.Entries += len(sh.young) + len(sh.old)
		sh.mu.Unlock()
	}
	return st
}
