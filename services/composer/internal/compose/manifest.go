package compose

import (
	"errors"
	"fmt"
)

// Disposition is what happened to a window memory.
type Disposition string

// Dispositions.
const (
	Included  Disposition = "included"
	Stubbed   Disposition = "stubbed"   // a tool result whose body was replaced by a one-line stub
	Truncated Disposition = "truncated" // a tool result cut to a token cap
	Dropped   Disposition = "dropped"
)

// Reason explains a disposition. The values are stable text for logs, metrics and golden files.
type Reason string

// Reasons.
const (
	ReasonCurrentTurn     Reason = "current turn"
	ReasonMission         Reason = "mission"
	ReasonCompressed      Reason = "earlier turn compressed"
	ReasonNoPromptBefore  Reason = "earlier tool loop with no prompt before it in the window"
	ReasonOutsideWindow   Reason = "outside the scan window"
	ReasonSystemOnce      Reason = "stored system prompt: the system prompt is sent once, first"
	ReasonDuplicateRow    Reason = "duplicate memory id"
	ReasonEmpty           Reason = "no content"
	ReasonUnknownRole     Reason = "unknown role"
	ReasonOrphanResult    Reason = "tool result with no matching call"
	ReasonDuplicateResult Reason = "second result for an answered call"
	ReasonSuperseded      Reason = "superseded by a newer result of the same call"
	ReasonOverCap         Reason = "result above the per-result cap"
	ReasonBudget          Reason = "compressed to fit the token budget"
	ReasonBudgetDropped   Reason = "dropped to fit the token budget"
	ReasonNoCalls         Reason = "every tool call of the message was unusable"
	ReasonIdle            Reason = "mysis goes idle: no request"

	// Composition v2.
	ReasonCarried           Reason = "newest result of its call, carried from an earlier turn"
	ReasonCarriedPinned     Reason = "pinned result (login/session), carried"
	ReasonCarriedCall       Reason = "assistant call of a carried result"
	ReasonLive              Reason = "recent history above the compaction boundary, kept as sent before"
	ReasonEarlierReply      Reason = "final reply of an earlier turn"
	ReasonReplyCapped       Reason = "earlier final reply cut to the reply cap"
	ReasonAllSuperseded     Reason = "earlier tool loop whose every result is superseded"
	ReasonBeforeObjective   Reason = "earlier than the current objective"
	ReasonOverCarryLimit    Reason = "beyond the carry limit"
	ReasonStubLonger        Reason = "superseded, but shorter than its stub: kept"
	ReasonCallOutsideWindow Reason = "result of a call outside the window"
	ReasonNotCarried        Reason = "call not carried: its result is not in the window"

	// Budget stages, in order of sacrifice (see budgetStages).
	ReasonBudgetSuperseded     Reason = "budget: superseded result stubbed"
	ReasonBudgetSupersededLoop Reason = "budget: loop of superseded results dropped"
	ReasonBudgetText           Reason = "budget: text dropped"
	ReasonBudgetOtherCall      Reason = "budget: older call of a tool compressed"
	ReasonBudgetOlderState     Reason = "budget: older state compressed"
	ReasonBudgetTurnLoop       Reason = "budget: early loop of the current turn compressed"
	ReasonBudgetPinned         Reason = "budget: pinned result compressed"
)

// Item records one window memory's fate. Tool results are listed under their own memory ids.
type Item struct {
	MemoryID    int64       `json:"memory_id"`
	Seq         int64       `json:"seq"`
	Disposition Disposition `json:"disposition"`
	Reason      Reason      `json:"reason"`
	// Tokens is what the memory adds to the request (its message with framing; for a prompt joined to the message
	// before it, what the join adds); 0 when dropped. With the system prompt, the synthetic messages and the reply
	// priming the items add up to Tokens.Total.
	Tokens int `json:"tokens,omitempty"`
	// MessageIndex is the index in Result.Messages of the message carrying the memory (a prompt joined to the
	// message before it shares its index); meaningless when dropped. Left out of the JSON form so golden files
	// keep describing decisions, not positions.
	MessageIndex int `json:"-"`
}

// Tokens are o200k_base token counts of the final request. Each message is counted in full (content, names, ids,
// arguments, plus a fixed per-message framing overhead) in the section it came from; Framing is the reply priming.
// The sections add up to Total exactly.
type Tokens struct {
	System    int `json:"system"`
	Mission   int `json:"mission"`
	History   int `json:"history"` // earlier turns above the compaction boundary and kept history loops
	Carried   int `json:"carried"` // state and final replies carried from below the compaction boundary
	Current   int `json:"current"`
	Synthetic int `json:"synthetic"`
	Tools     int `json:"tools"` // the tool definitions, as the provider receives them
	Framing   int `json:"framing"`
	Total     int `json:"total"`
}

// Synthetic records a message the composer wrote itself.
type Synthetic struct {
	Index  int    `json:"index"` // position in Result.Messages
	Role   string `json:"role"`
	Kind   string `json:"kind"` // SynthNudge, SynthMission, SynthMissingResult or SynthCarriedHeader
	Reason string `json:"reason"`
	// Tokens is what it adds to the request (to the message before it when it was joined to that one).
	Tokens int `json:"tokens"`
}

// Kinds of synthetic messages.
const (
	SynthNudge         = "nudge"          // an encouragement prompt (to persist when it is Result.Nudge)
	SynthMission       = "mission"        // a mission that is not one of the window's memories, re-injected
	SynthMissingResult = "missing_result" // the stand-in result of a tool call that has none recorded
	SynthCarriedHeader = "carried_header" // a user line opening carried state that no prompt precedes
	SynthCarriedIndex  = "carried_index"  // v3: a user line naming the newest results not carried, with memory ids
	SynthDroppedIndex  = "dropped_index"  // a user line where loops the budget dropped were, naming their results' ids
)

// Repair records a fix applied to a broken history.
type Repair struct {
	MemoryID int64  `json:"memory_id"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
}

// Manifest explains a composed request.
type Manifest struct {
	Items []Item `json:"items"`
	// Mission is set when a mission was sent that is not one of the window's memories.
	Mission    *Item       `json:"mission,omitempty"`
	Tokens     Tokens      `json:"tokens"`
	Synthetic  []Synthetic `json:"synthetic,omitempty"`
	NudgeLevel NudgeLevel  `json:"nudge_level"`
	Repairs    []Repair    `json:"repairs,omitempty"`
	// Boundary is the seq of the compaction boundary: memories from it on are sent as before (append-only), older
	// ones are compacted to carried state. 0 when nothing is below it.
	Boundary int64 `json:"boundary,omitempty"`
	// CompactSeq is the newest memory when the boundary last moved: below the boundary the request carries what was
	// the newest state then. Pass both back (Input.PrevBoundary, Input.PrevCompactSeq) with the next request.
	CompactSeq int64 `json:"compact_seq,omitempty"`
	// Compaction says why the boundary moved in this request (composition v3): forced by the budget or paid for by
	// the expected saving, with both sides of the price. nil when it stayed (or under CompactionWatermark).
	Compaction *CompactionNote `json:"compaction,omitempty"`
	// TurnTruncated echoes Input.TurnTruncated: the current turn's oldest rows were not in the window.
	TurnTruncated bool `json:"turn_truncated,omitempty"`
	// Tools is each tool definition's tokens, in Input.Tools order; they sum to Tokens.Tools.
	Tools []ToolTokens `json:"tools,omitempty"`
}

// ToolTokens is one tool definition's tokens, its framing included.
type ToolTokens struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
}

// Errors.
var (
	ErrInvalidPolicy  = errors.New("compose: invalid policy")
	ErrNoSystemPrompt = errors.New("compose: empty system prompt")
)

// BudgetError says that even the most compressed request does not fit the budget.
type BudgetError struct {
	Budget int
	Need   int // tokens of the smallest request composition could build
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("compose: the smallest valid request needs %d tokens, over the budget of %d", e.Need, e.Budget)
}
