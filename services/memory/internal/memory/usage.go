package memory

import (
	"strconv"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
)

// LlmCall is the accounting of one LLM call. It travels with the assistant memory it produced (NewMemory.LlmCall),
// or alone when the call failed or its reply was discarded.
type LlmCall struct {
	CallID             string
	Provider           string
	Model              string
	PromptTokens       int64
	CachedPromptTokens int64
	CompletionTokens   int64
	ReasoningTokens    int64
	ComposedTokens     int64
	LatencyMS          int64
	Retries            int32
	Error              string
	CostNanos          int64
	// StartedAt is when the call started; zero means the time of the write. Spend windows count by it.
	StartedAt time.Time
	// Discarded: a paid reply thrown away unstored because a prompt arrived (RecordLlmCalls only); recording it sets
	// the mysis's ReplyDiscarded until its next final answer.
	Discarded bool
}

// UsageGroup says how usage rows are grouped.
type UsageGroup int

// Groupings.
const (
	GroupNone UsageGroup = iota
	GroupMysis
	GroupModel
)

// UsageQuery selects calls to sum.
type UsageQuery struct {
	MysisIDs []string // empty: the whole swarm
	From, To time.Time
	GroupBy  UsageGroup
	PageSize int
	// After is the exclusive keyset position: a mysis name, or provider and model.
	AfterName, AfterProvider, AfterModel string
	// Top, when positive (group by mysis only), asks for the Top myses by cost, highest first (equal costs in
	// name order), in one page.
	Top int
}

// MaxTop is the most myses a top-by-cost query returns.
const MaxTop = 100

// UsageTotals sums calls.
type UsageTotals struct {
	Calls, FailedCalls                                 int64
	PromptTokens, CachedPromptTokens, CompletionTokens int64
	ReasoningTokens, ComposedTokens                    int64
	LatencyMS, Retries, CostNanos                      int64
	FirstCallAt, LastCallAt                            time.Time
}

// UsageRow is one group.
type UsageRow struct {
	MysisID, MysisName, Provider, Model string
	Totals                              UsageTotals
}

// Usage is a GetUsage answer: the total of the selection and one page of rows.
type Usage struct {
	Total UsageTotals
	Rows  []UsageRow
	More  bool
}

// SpendWindow is the period a spend limit counts over; the numbers are stored.
type SpendWindow int16

// Windows: UTC calendar hour and day, and everything.
const (
	WindowHour  SpendWindow = 1
	WindowDay   SpendWindow = 2
	WindowTotal SpendWindow = 3
)

// TotalStart is the start stored for the total window, which never rolls over.
var TotalStart = time.Unix(0, 0).UTC()

// Start returns the start of the window of this kind that contains t (TotalStart for WindowTotal).
func (w SpendWindow) Start(t time.Time) time.Time {
	t = t.UTC()
	switch w {
	case WindowHour:
		return t.Truncate(time.Hour)
	case WindowDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return TotalStart
}

// SpendUnit is what a limit counts; the numbers are stored.
type SpendUnit int16

// Units.
const (
	UnitTokens    SpendUnit = 1
	UnitCostNanos SpendUnit = 2
)

// SpendLimit caps tokens or cost over a window; Amount 0 lifts a configured default.
type SpendLimit struct {
	Window SpendWindow
	Unit   SpendUnit
	Amount int64
}

// SpendCount is what was spent in one window.
type SpendCount struct {
	Window    SpendWindow
	Start     time.Time
	Tokens    int64
	CostNanos int64
}

// Spend is what a spend check needs: the mysis's own limits and the mysis's and the swarm's counts per window.
type Spend struct {
	Limits []SpendLimit
	Mysis  []SpendCount
	Swarm  []SpendCount
}

// Limits on usage requests.
const (
	MaxUsageMyses   = 1000
	MaxCallsPerCall = 100
	MaxErrorBytes   = 4096
)

// ValidateLlmCall checks one call's accounting; prefix is its path in the request ("memories[0].llm_call").
func ValidateLlmCall(prefix string, c LlmCall) error {
	f := func(name string) string { return prefix + "." + name }
	if _, err := ParseID(f("call_id"), c.CallID); err != nil {
		return err
	}
	if c.Provider == "" {
		return errs.InvalidField(f("provider"), "required")
	}
	for _, t := range []struct {
		name, v string
		max     int
	}{{"provider", c.Provider, MaxShortFieldBytes}, {"model", c.Model, MaxShortFieldBytes}, {"error", c.Error, MaxErrorBytes}} {
		if err := CheckText(f(t.name), t.v, t.max); err != nil {
			return err
		}
	}
	if c.Discarded && c.Error != "" {
		return errs.InvalidField(f("discarded"), "a failed call (error set) has no reply to discard")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"prompt_tokens", c.PromptTokens}, {"cached_prompt_tokens", c.CachedPromptTokens},
		{"completion_tokens", c.CompletionTokens}, {"reasoning_tokens", c.ReasoningTokens},
		{"composed_tokens", c.ComposedTokens}, {"latency_ms", c.LatencyMS}, {"retries", int64(c.Retries)},
		{"cost_nanos", c.CostNanos},
	} {
		if n.v < 0 {
			return errs.InvalidField(f(n.name), "must not be negative, got %d", n.v)
		}
	}
	return nil
}

// ValidateSpendLimits checks a mysis's limits: known window and unit, amount not negative, one per pair.
func ValidateSpendLimits(ls []SpendLimit) error {
	seen := map[[2]int16]bool{}
	for i, l := range ls {
		p := func(name string) string { return "limits[" + strconv.Itoa(i) + "]." + name }
		if l.Window < WindowHour || l.Window > WindowTotal {
			return errs.InvalidField(p("window"), "required: hour, day or total")
		}
		if l.Unit < UnitTokens || l.Unit > UnitCostNanos {
			return errs.InvalidField(p("unit"), "required: tokens or cost")
		}
		if l.Amount < 0 {
			return errs.InvalidField(p("amount"), "must not be negative, got %d", l.Amount)
		}
		k := [2]int16{int16(l.Window), int16(l.Unit)}
		if seen[k] {
			return errs.InvalidField(p("window"), "a limit for this window and unit is already in the list")
		}
		seen[k] = true
	}
	return nil
}
