package memory

import (
	"time"

	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// LlmCall is the accounting of one LLM call (libs/memoryrules).
type LlmCall = rules.LlmCall

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
const MaxTop = rules.MaxTop

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

// Spend limits: windows, units and the limit itself are libs/memoryrules' values.
type (
	// SpendWindow is the period a spend limit counts over; the numbers are stored.
	SpendWindow = rules.SpendWindow
	// SpendUnit is what a limit counts; the numbers are stored.
	SpendUnit = rules.SpendUnit
	// SpendLimit caps tokens or cost over a window; Amount 0 lifts a configured default.
	SpendLimit = rules.SpendLimit
)

// Windows and units.
const (
	WindowHour    = rules.WindowHour
	WindowDay     = rules.WindowDay
	WindowTotal   = rules.WindowTotal
	UnitTokens    = rules.UnitTokens
	UnitCostNanos = rules.UnitCostNanos
)

// TotalStart is the start stored for the total window, which never rolls over.
var TotalStart = rules.TotalStart

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
	MaxUsageMyses   = rules.MaxUsageMyses
	MaxCallsPerCall = rules.MaxCallsPerCall
	MaxErrorBytes   = rules.MaxErrorBytes
)
