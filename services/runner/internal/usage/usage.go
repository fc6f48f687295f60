// Package usage is the runner's accounting of LLM calls: the price table that turns token counts into cost, spend
// limits (per mysis and swarm-wide, on tokens or cost, per UTC hour, per UTC day or in total) and the guard that
// checks them before every call. The counts come from the memory service through the SpendReader port, so a
// restart or a second replica sees the same numbers.
package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/libs/spend"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

// DefaultPrices are list prices of common OpenAI models (USD per million tokens, standard tier, checked 2025) and
// 0 for local Ollama and the autopilot. Override or extend them with ZOEA_PRICES or ZOEA_PRICES_FILE: a provider
// changing its prices does not need a new Zoea.
func DefaultPrices() map[string]Price {
	return map[string]Price{
		"openai/gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60},
		"openai/gpt-4o":       {Input: 2.50, CachedInput: 1.25, Output: 10.00},
		"openai/gpt-4.1":      {Input: 2.00, CachedInput: 0.50, Output: 8.00},
		"openai/gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
		"openai/gpt-4.1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40},
		"openai/o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40},
		"openai/o3":           {Input: 2.00, CachedInput: 0.50, Output: 8.00},
		"openai/gpt-5":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},
		"openai/gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2.00},
		"openai/gpt-5-nano":   {Input: 0.05, CachedInput: 0.005, Output: 0.40},
		"ollama/*":            {},
		"autopilot/*":         {},
	}
}

// Prices is an immutable price table keyed "provider/model"; "provider/*" prices every other model of a provider.
type Prices struct {
	byKey map[string]Price
}

// NewPrices builds a table from the defaults overridden by extra (later maps win).
func NewPrices(tables ...map[string]Price) Prices {
	p := Prices{byKey: map[string]Price{}}
	for _, t := range tables {
		for k, v := range t {
			p.byKey[k] = v
		}
	}
	return p
}

// Lookup finds a model's price: the exact key, else the longest key that is a prefix of the model followed by '-'
// (a dated snapshot such as gpt-4o-mini-2024-07-18), else the provider's "*". ok is false for an unpriced model.
func (p Prices) Lookup(provider, model string) (Price, bool) {
	if pr, ok := p.byKey[provider+"/"+model]; ok {
		return pr, true
	}
	best, found := "", false
	var out Price
	for k, v := range p.byKey {
		prov, m, _ := strings.Cut(k, "/")
		if prov == provider && m != "*" && strings.HasPrefix(model, m+"-") && len(m) > len(best) {
			best, out, found = m, v, true
		}
	}
	if found {
		return out, true
	}
	pr, ok := p.byKey[provider+"/*"]
	return pr, ok
}

// Cost prices a call in billionths of a US dollar: uncached prompt tokens at the input price, cached ones at the
// cached price, completion tokens at the output price. An unpriced model costs 0.
func (p Prices) Cost(provider, model string, u llm.Usage) int64 {
	pr, _ := p.Lookup(provider, model)
	cached := min(max(u.CachedPromptTokens, 0), max(u.PromptTokens, 0))
	uncached := max(u.PromptTokens, 0) - cached
	// USD per million tokens × 1e9 nanos per USD / 1e6 tokens = nanos per token × 1000.
	nanos := (float64(uncached)*pr.Input + float64(cached)*pr.CachedInput + float64(max(u.CompletionTokens, 0))*pr.Output) * 1000
	return int64(math.Round(nanos))
}

// ParsePrices reads "provider/model=input,cached_input,output" entries separated by ';' (USD per million tokens),
// e.g. "openai/gpt-4o-mini=0.15,0.075,0.60;openai/my-finetune=0.30,0.15,1.20".
func ParsePrices(s string) (map[string]Price, error) {
	out := map[string]Price{}
	for entry := range strings.SplitSeq(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, vals, ok := strings.Cut(entry, "=")
		key = strings.TrimSpace(key)
		if !ok || !validKey(key) {
			return nil, fmt.Errorf("price %q: want provider/model=input,cached_input,output (USD per million tokens)", entry)
		}
		parts := strings.Split(vals, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("price %q: want three prices: input, cached input, output", entry)
		}
		var f [3]float64
		for i, v := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, fmt.Errorf("price %q: %q is not a price in USD per million tokens", entry, strings.TrimSpace(v))
			}
			f[i] = x
		}
		out[key] = Price{Input: f[0], CachedInput: f[1], Output: f[2]}
	}
	return out, nil
}

// LoadPricesFile reads a JSON object {"provider/model": {"input": 0.15, "cached_input": 0.075, "output": 0.6}}.
func LoadPricesFile(path string) (map[string]Price, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices file: %w", err)
	}
	var out map[string]Price
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("prices file %s: %w", path, err)
	}
	for k, v := range out {
		if !validKey(k) {
			return nil, fmt.Errorf("prices file %s: key %q is not provider/model", path, k)
		}
		if v.Input < 0 || v.CachedInput < 0 || v.Output < 0 {
			return nil, fmt.Errorf("prices file %s: %s has a negative price", path, k)
		}
	}
	return out, nil
}

func validKey(k string) bool {
	prov, m, ok := strings.Cut(k, "/")
	return ok && prov != "" && m != ""
}

// Window is the period a limit counts over. The numbers are the memory service's.
type Window int

// Windows.
const (
	Hour  Window = 1
	Day   Window = 2
	Total Window = 3
)

// Unit is what a limit counts. The numbers are the memory service's.
type Unit int

// Units.
const (
	Tokens Unit = 1
	Cost   Unit = 2
)

// Limit caps tokens (prompt plus completion) or cost (billionths of a US dollar) over a window.
type Limit struct {
	Window Window
	Unit   Unit
	Amount int64
}

// String is how a person reads the limit: "$2.00 per day", "100000 tokens per hour", "$10.00 in total".
func (l Limit) String() string {
	return spend.DescribeParts(int32(l.Window), int32(l.Unit), l.Amount)
}

// ParseLimits reads limits in the shared syntax of libs/spend ("cost/day=2.00,tokens/hour=200000").
func ParseLimits(s string) ([]Limit, error) {
	ls, err := spend.Parse(s)
	if err != nil {
		return nil, err
	}
	out := make([]Limit, len(ls))
	for i, l := range ls {
		out[i] = Limit{Window: Window(l.GetWindow()), Unit: Unit(l.GetUnit()), Amount: l.GetAmount()}
	}
	return out, nil
}

// Effective merges a mysis's own limits over the defaults: an own limit replaces the default of the same window
// and unit, and an own amount of 0 removes it. The result has no zero amounts and is ordered by window and unit.
func Effective(defaults, own []Limit) []Limit {
	m := map[[2]int]int64{}
	for _, l := range defaults {
		m[[2]int{int(l.Window), int(l.Unit)}] = l.Amount
	}
	for _, l := range own {
		m[[2]int{int(l.Window), int(l.Unit)}] = l.Amount
	}
	var out []Limit
	for k, v := range m {
		if v > 0 {
			out = append(out, Limit{Window: Window(k[0]), Unit: Unit(k[1]), Amount: v})
		}
	}
	slices.SortFunc(out, func(a, b Limit) int {
		if a.Window != b.Window {
			return int(a.Window) - int(b.Window)
		}
		return int(a.Unit) - int(b.Unit)
	})
	return out
}

// End is when the window of this kind containing t ends (zero for Total, which never rolls over).
func (w Window) End(t time.Time) time.Time {
	t = t.UTC()
	switch w {
	case Hour:
		return t.Truncate(time.Hour).Add(time.Hour)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// Count is what was spent in one window.
type Count struct {
	Tokens    int64
	CostNanos int64
}

func (c Count) of(u Unit) int64 {
	if u == Cost {
		return c.CostNanos
	}
	return c.Tokens
}

// Snapshot is what the memory service knows for one check.
type Snapshot struct {
	Own   []Limit
	Mysis map[Window]Count
	Swarm map[Window]Count
}

// SpendReader reads a mysis's own limits and the mysis's and the swarm's counts in the windows containing at.
type SpendReader interface {
	Spend(ctx context.Context, mysisID string, at time.Time) (Snapshot, error)
}

// Config holds the configured limits.
type Config struct {
	// MysisDefaults apply to every mysis that has no own limit of the same window and unit.
	MysisDefaults []Limit
	// Swarm limits apply to the sum over all myses.
	Swarm []Limit
}

// Guard implements mysis.Spend.
type Guard struct {
	reader SpendReader
	cfg    Config
	prices Prices
	now    func() time.Time
}

// NewGuard returns a guard; now is the clock of the windows (nil: time.Now).
func NewGuard(reader SpendReader, cfg Config, prices Prices, now func() time.Time) *Guard {
	if now == nil {
		now = time.Now
	}
	return &Guard{reader: reader, cfg: cfg, prices: prices, now: now}
}

var _ mysis.Spend = (*Guard)(nil)

// ErrNoReader is returned by a Guard without a reader.
var ErrNoReader = errors.New("usage: no spend reader")

// Defaults returns the configured per-mysis defaults.
func (g *Guard) Defaults() []Limit { return g.cfg.MysisDefaults }

// Cost implements mysis.Spend.
func (g *Guard) Cost(provider, model string, u llm.Usage) int64 {
	return g.prices.Cost(provider, model, u)
}

// Check implements mysis.Spend. A call is refused when what the window already holds plus the prompt about to be
// sent (tokens, or its price as uncached input) would pass a limit: the stop comes before the call that would
// exceed it, not after. Swarm limits are checked first: they say more about why.
func (g *Guard) Check(ctx context.Context, m mysis.Mysis, promptTokens int) (*mysis.SpendStop, error) {
	if g.reader == nil {
		return nil, ErrNoReader
	}
	now := g.now()
	snap, err := g.reader.Spend(ctx, m.ID, now)
	if err != nil {
		return nil, err
	}
	return g.judge(m, promptTokens, now, snap), nil
}

// ErrCountsForm is returned by CheckCounted for counts that are not a Snapshot.
var ErrCountsForm = errors.New("usage: spend counts are not a usage.Snapshot")

// CheckCounted implements mysis.Spend: Check on counts read with the composition (a Snapshot counted for the
// windows containing counts.At), judged as of counts.At.
func (g *Guard) CheckCounted(m mysis.Mysis, promptTokens int, counts mysis.SpendCounts) (*mysis.SpendStop, error) {
	snap, ok := counts.Data.(Snapshot)
	if !ok {
		return nil, ErrCountsForm
	}
	return g.judge(m, promptTokens, counts.At, snap), nil
}

// judge decides on a snapshot of the windows containing now.
func (g *Guard) judge(m mysis.Mysis, promptTokens int, now time.Time, snap Snapshot) *mysis.SpendStop {
	promptCost := g.prices.Cost(m.Provider, m.Model, llm.Usage{PromptTokens: promptTokens})
	check := func(scope string, limits []Limit, counts map[Window]Count) *mysis.SpendStop {
		for _, l := range limits {
			if l.Amount <= 0 {
				continue
			}
			next := int64(promptTokens)
			if l.Unit == Cost {
				next = promptCost
			}
			used := counts[l.Window].of(l.Unit)
			if used < l.Amount && used+next <= l.Amount {
				continue
			}
			return &mysis.SpendStop{Reason: Reason(scope, l, now), Scope: scope, Until: l.Window.End(now)}
		}
		return nil
	}
	if st := check("swarm", g.cfg.Swarm, snap.Swarm); st != nil {
		return st
	}
	return check("mysis", Effective(g.cfg.MysisDefaults, snap.Own), snap.Mysis)
}

// Reason is the state reason of a stop: "spend limit reached: $2.00 per day, resets 00:00 UTC".
func Reason(scope string, l Limit, now time.Time) string {
	r := mysis.SpendReasonPrefix
	if scope == "swarm" {
		r += "swarm "
	}
	r += l.String()
	if end := l.Window.End(now); !end.IsZero() {
		return r + ", resets " + end.Format("15:04") + " UTC"
	}
	return r + "; raise the limit to resume"
}
