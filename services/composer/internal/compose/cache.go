package compose

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Composition v3 decides compaction by price. A provider serves the longest prefix of a request that equals an
// earlier request from its prompt cache, at a fraction of the price of uncached input (Anthropic 0.1×, OpenAI at
// most 0.5×; Ollama and llama.cpp reuse the KV cache of an identical prefix, so there the price is prefill time).
// Moving the compaction boundary rewrites everything after the first message it changes, at the cache-write price;
// not moving it re-reads the whole uncompacted history on every request, at the cache-read price. So the boundary
// moves only when the request would not fit the budget otherwise, or when what it saves over the coming requests —
// each growing by the mysis's own growth per request — exceeds what the rewrite costs.

// Compaction is how the composer decides when the compaction boundary moves.
type Compaction string

// Compaction modes.
const (
	// CompactionPriced (composition v3, the default): the boundary stays while the request fits the budget, unless
	// moving it pays for itself under the policy's cache model (Policy.Cache).
	CompactionPriced Compaction = "priced"
	// CompactionWatermark (composition v2): the boundary stays while the request's history fits HighWater, then
	// moves down to LowWater.
	CompactionWatermark Compaction = "watermark"
)

// CacheModel is how a provider prices input it serves from its prompt cache, relative to uncached input (1.0).
type CacheModel struct {
	Name string
	// Read is the price of a cached input token; Write the price of an input token that is written to the cache
	// (uncached input that later requests may read).
	Read, Write float64
	// MinPrefix is the shortest prefix the provider caches (tokens); Granularity the step a cached prefix is
	// rounded down to (1: any length).
	MinPrefix, Granularity int
	// Lifetime is how long an unread cache entry lives; a request after a longer pause reads nothing cached, so a
	// compaction costs nothing then (Input.SincePrevious). 0: no limit known.
	Lifetime time.Duration
}

// The cache models of the providers Zoea knows (docs/COMPOSITION.md, "A cache model per provider").
var (
	CacheAnthropic = CacheModel{Name: "anthropic", Read: 0.1, Write: 1.25, MinPrefix: 1024, Granularity: 1, Lifetime: 5 * time.Minute}
	CacheOpenAI    = CacheModel{Name: "openai", Read: 0.5, Write: 1.0, MinPrefix: 1024, Granularity: 128, Lifetime: 5 * time.Minute}
	// CacheLocal is Ollama and llama.cpp: an identical prefix reuses the KV cache of the slot, so its tokens cost
	// (almost) no prefill time; a changed prefix is prefilled again from the first difference.
	CacheLocal = CacheModel{Name: "local", Read: 0.02, Write: 1.0, MinPrefix: 0, Granularity: 1}
	// CacheNone is a provider without a prompt cache (the autopilot makes no LLM call at all): every token costs
	// the same, so the smallest request is the cheapest.
	CacheNone = CacheModel{Name: "none", Read: 1, Write: 1, MinPrefix: 0, Granularity: 1}
)

// CacheModelNamed returns the cache model called name ("anthropic", "openai", "local", "none").
func CacheModelNamed(name string) (CacheModel, bool) {
	for _, m := range []CacheModel{CacheAnthropic, CacheOpenAI, CacheLocal, CacheNone} {
		if m.Name == name {
			return m, true
		}
	}
	return CacheModel{}, false
}

// CacheModelFor chooses the cache model of a mysis from its provider and model: the model's family where the
// provider is a gateway (an OpenAI-compatible endpoint serving Claude is priced as Anthropic), else the provider's.
// Unknown ones get Anthropic's, the dearest rewrite, so compaction is never cheaper than assumed.
func CacheModelFor(provider, model string) CacheModel {
	p, m := strings.ToLower(provider), strings.ToLower(model)
	switch {
	case p == "autopilot":
		return CacheNone
	case p == "ollama" || p == "llamacpp" || p == "llama.cpp" || strings.HasPrefix(p, "ollama") || strings.HasPrefix(p, "llama"):
		return CacheLocal
	case strings.Contains(m, "claude") || p == "anthropic":
		return CacheAnthropic
	case p == "openai" || strings.HasPrefix(m, "gpt") || strings.HasPrefix(m, "o1") || strings.HasPrefix(m, "o3") || strings.HasPrefix(m, "o4"):
		return CacheOpenAI
	}
	return CacheAnthropic
}

func (m CacheModel) validate() error {
	switch {
	case m.Name == "":
		return nil // the default
	case m.Read < 0 || m.Write < 0 || m.Read > m.Write:
		return fmt.Errorf("%w: cache model %q: read %.3g and write %.3g must be 0 ≤ read ≤ write", ErrInvalidPolicy, m.Name, m.Read, m.Write)
	case m.MinPrefix < 0 || m.Granularity < 0:
		return fmt.Errorf("%w: cache model %q: min prefix and granularity must not be negative", ErrInvalidPolicy, m.Name)
	}
	return nil
}

// cached is how many of the first prefix tokens the provider serves from its cache.
func (m CacheModel) cached(prefix int) int {
	if prefix < m.MinPrefix || prefix <= 0 {
		return 0
	}
	if m.Granularity > 1 {
		prefix -= prefix % m.Granularity
	}
	return prefix
}

// price is what a request of total input tokens costs (in uncached-token equivalents) when its first prefix tokens
// equal the previous request's: those are read from the cache, the rest is written.
func (m CacheModel) price(total, prefix int) float64 {
	c := m.cached(min(prefix, total))
	return m.Read*float64(c) + m.Write*float64(total-c)
}

// CompactionNote says why the boundary moved (Manifest.Compaction): forced by the budget, or because it paid.
type CompactionNote struct {
	// Why is "budget" (the request would not fit otherwise), "price" (the saving exceeds the rewrite) or "fresh"
	// (no previous boundary: nothing cached to keep).
	Why string `json:"why"`
	// Cache is the cache model the decision was priced with.
	Cache string `json:"cache"`
	// Before and After are the history tokens (messages, system prompt and tools excluded) with the boundary kept
	// and moved; Growth is the mysis's own growth per request and Horizon the coming requests the saving is
	// counted over.
	Before  int `json:"before"`
	After   int `json:"after"`
	Growth  int `json:"growth"`
	Horizon int `json:"horizon"`
	// ExpectedSaving and RewriteCost are in uncached-token equivalents under the cache model, to 0.1.
	ExpectedSaving float64 `json:"expected_saving"`
	RewriteCost    float64 `json:"rewrite_cost"`
}

// maxHorizon bounds the coming requests a saving is counted over: beyond a few hundred requests an objective has
// usually changed, and the cache may have expired.
const maxHorizon = 200

// compactionPays prices moving the boundary now (the history shrinking from before to after tokens) against keeping
// it, for a request whose fixed part (system prompt and tools, always cached) is fixed tokens, growing by growth
// tokens per request, with room tokens for the history. Keeping it, every coming request re-reads the before
// tokens until the budget forces a compaction anyway (the horizon); moving it, the after tokens are written once
// (the rewrite) and read from then on. It returns the note with both sides filled in.
func (c *composer) compactionPays(before, after, fixed, growth, room int) (CompactionNote, bool) {
	m := c.cache
	growth = max(growth, 1)
	horizon := min(max((room-before)/growth, 1), maxHorizon)
	n := CompactionNote{Why: "price", Cache: m.Name, Before: before, After: after, Growth: growth, Horizon: horizon}
	if after >= before {
		return n, false
	}
	// The rewrite: this request writes the compacted history instead of reading it (with what is new either way).
	keep := m.price(fixed+before+growth, fixed+before)
	move := m.price(fixed+after+growth, fixed)
	if c.cold {
		keep = move // the cache expired: this request is written whole either way
	}
	n.RewriteCost = max(move-keep, 0)
	for k := 1; k <= horizon; k++ {
		n.ExpectedSaving += m.price(fixed+before+(k+1)*growth, fixed+before+k*growth) - m.price(fixed+after+(k+1)*growth, fixed+after+k*growth)
	}
	pays := n.ExpectedSaving > n.RewriteCost
	n.ExpectedSaving, n.RewriteCost = math.Round(10*n.ExpectedSaving)/10, math.Round(10*n.RewriteCost)/10
	return n, pays
}
