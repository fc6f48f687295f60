package v1compose

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
	ReasonHistoryLoop     Reason = "latest complete tool loop of an earlier turn"
	ReasonHistoryPrompt   Reason = "prompt of a kept earlier tool loop"
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
	ReasonSuperseded      Reason = "snapshot superseded by a newer result"
	ReasonOverCap         Reason = "result above the per-result cap"
	ReasonBudget          Reason = "compressed to fit the token budget"
	ReasonBudgetDropped   Reason = "dropped to fit the token budget"
	ReasonNoCalls         Reason = "every tool call of the message was unusable"
	ReasonIdle            Reason = "mysis goes idle: no request"
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
}

// Tokens are o200k_base token counts of the final request. Each message is counted in full (content, names, ids,
// arguments, plus a fixed per-message framing overhead) in the section it came from; Framing is the reply priming.
// The sections add up to Total exactly.
type Tokens struct {
	System    int `json:"system"`
	Mission   int `json:"mission"`
	History   int `json:"history"`
	Current   int `json:"current"`
	Synthetic int `json:"synthetic"`
	Framing   int `json:"framing"`
	Total     int `json:"total"`
}

// Synthetic records a message the composer wrote itself.
type Synthetic struct {
	Index  int    `json:"index"` // position in Result.Messages
	Role   string `json:"role"`
	Kind   string `json:"kind"` // SynthNudge, SynthMission or SynthMissingResult
	Reason string `json:"reason"`
}

// Kinds of synthetic messages.
const (
	SynthNudge         = "nudge"          // an encouragement prompt (to persist when it is Result.Nudge)
	SynthMission       = "mission"        // a mission that is not one of the window's memories, re-injected
	SynthMissingResult = "missing_result" // the stand-in result of a tool call that has none recorded
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
