// Package v1compose is a FROZEN COPY of Zoea's composition v1 (services/composer/internal/compose at commit de06014),
// kept only as the baseline column of the replay benchmark (tools/benchkit/replaybench, tools/cmd/composereplay). It
// is benchmark tooling: production never imports it, and it is never changed except to keep it compiling. The
// original package comment follows.
//
// Compose builds the message list for one LLM request of a mysis: the heart of Zoea. It is a pure function of
// its input — no I/O, no clock, no randomness, no dependence on map iteration order — so the same input always gives
// byte-identical output and providers' prompt caches stay warm.
//
// # What goes in the request
//
// System prompt once, first. Then, in chronological order: the mission (the latest commander broadcast or direct
// order) when it is not the prompt of the current turn; the latest complete tool loop(s) of earlier turns, each after
// the prompt of its turn; and the current turn complete (its prompt, every assistant message and every tool result).
// Snapshot tools (get_status, get_ship, …) keep only their newest body; older results become one-line stubs that still
// answer their call. Results above the per-result cap are cut with a pointer to the memory id, which the mysis can
// look up with zoea_search_messages. If the request is still over the token budget, the current turn's early
// iterations are compressed (results stubbed, then whole loops dropped), the login/session result last; if even that
// cannot fit, Compose returns a *BudgetError instead of an oversized request.
//
// Broken histories (a crash mid-loop, a lost row, duplicated ids, a tool result separated from its call) are repaired
// in the output, so every message list passes chatvalid.Strict.
//
// # Encouragement contract with the runner
//
// The runner keeps an encouragement count per mysis and tells Compose whether it is beginning a new autonomous turn
// (Input.BeginTurn). The decision in Result.Encouragement says what to store:
//
//   - The current turn was opened by a real prompt (direct or broadcast): Reset (count 0). A new prompt that has not
//     been answered yet wins over BeginTurn: the runner should answer it, not nudge.
//   - BeginTurn and a mission exists: the composer writes a gentle "continue your mission" nudge as the new turn's
//     prompt; Reset.
//   - BeginTurn and no mission: a nudge at level count+1 (gentle, firm, urgent); Increment (count+1).
//   - BeginTurn, no mission and count already ≥ 3: Idle. No messages are returned; no LLM call should be made.
//   - Otherwise (mid-turn): None.
//
// When a nudge is returned in Result.Nudge the runner must persist it (role user, source nudge, opening the next
// turn) before executing the turn. Messages already end with it, and they are identical to what composing again after
// persisting it would give. When the window holds no prompt at all and there is no mission (a long turn scrolled out
// of the window), a synthetic nudge at the current level is placed where the turn's prompt would be; it is not to be
// persisted and does not change the count.
package v1compose

import (
	"fmt"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// Source says where a memory came from; it mirrors the memory service's column.
type Source string

// Memory sources.
const (
	SourceDirect    Source = "direct"    // a direct message to this mysis (commander or another mysis)
	SourceBroadcast Source = "broadcast" // a swarm broadcast delivered to this mysis
	SourceNudge     Source = "nudge"     // an encouragement prompt that opened an autonomous turn
	SourceLLM       Source = "llm"       // an assistant reply
	SourceTool      Source = "tool"      // a tool result
	SourceSystem    Source = "system"    // a stored system prompt (never re-sent: the composer owns the system prompt)
)

// opensTurn reports whether a user memory of this source opens a new turn (the memory service's rule).
func (s Source) opensTurn() bool {
	return s == SourceDirect || s == SourceBroadcast || s == SourceNudge
}

// Memory is one stored row of a mysis's conversation, as the memory service returns it.
type Memory struct {
	ID        int64
	Seq       int64 // per-mysis, strictly increasing
	Turn      int64 // a user memory with source direct, broadcast or nudge opens turn+1; the rest stay in the turn
	Role      chat.Role
	Source    Source
	SenderID  string // "" = the commander
	Content   string
	Reasoning string // never sent: it is searchable, and old reasoning is the costliest text to resend
	ToolCalls []chat.ToolCall
	// ToolCallID and ToolName are set on tool results.
	ToolCallID string
	ToolName   string
}

// Mission is the standing order that drives an autonomous mysis: the latest commander broadcast or direct order to
// it, however far back. MemoryID is that row's id (its Seq places it in time); MemoryID 0 means a swarm-wide
// fallback broadcast that was never delivered to this mysis, e.g. one sent before the mysis existed.
type Mission struct {
	MemoryID int64
	Seq      int64
	Source   Source
	SenderID string
	Content  string
}

// Input is everything one compose call needs.
type Input struct {
	SystemPrompt string
	Mission      *Mission // nil: no mission
	// Window is the last Policy.ScanWindow memories of the mysis, oldest first.
	Window []Memory
	// EncouragementCount is the runner's count of consecutive nudged turns.
	EncouragementCount int
	// BeginTurn is set when the runner is about to start a new autonomous turn (no new prompt arrived).
	BeginTurn bool
}

// NudgeLevel is the urgency of an encouragement prompt.
type NudgeLevel int

// Nudge levels; a nudge at level n is the n-th consecutive one.
const (
	NudgeNone NudgeLevel = iota
	NudgeGentle
	NudgeFirm
	NudgeUrgent
)

func (l NudgeLevel) String() string {
	switch l {
	case NudgeNone:
		return "none"
	case NudgeGentle:
		return "gentle"
	case NudgeFirm:
		return "firm"
	case NudgeUrgent:
		return "urgent"
	}
	return fmt.Sprintf("NudgeLevel(%d)", int(l))
}

// MarshalText makes levels readable in manifests and golden files.
func (l NudgeLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// IdleAfter is the number of consecutive nudges after which a mysis with no mission goes idle.
const IdleAfter = 3

// Nudges holds the wording of the three levels.
type Nudges struct {
	Gentle, Firm, Urgent string
}

// Text returns the wording for level l (gentle for anything below firm).
func (n Nudges) Text(l NudgeLevel) string {
	switch l {
	case NudgeFirm:
		return n.Firm
	case NudgeUrgent:
		return n.Urgent
	default:
		return n.Gentle
	}
}

// Policy tunes composition. Build it with DefaultPolicy and change fields; Compose rejects nonsensical values.
type Policy struct {
	ScanWindow    int // memories the runner fetches per compose; a longer Window is trimmed to its newest ScanWindow
	TokenBudget   int // hard ceiling for the whole request, o200k_base tokens including framing
	ToolResultCap int // tokens one tool result may keep before it is cut
	SnapshotTools []string
	PinnedTools   []string // results compressed last (the login/session result)
	HistoryLoops  int      // complete tool loops kept from earlier turns
	Nudges        Nudges
	// DisableMissionFallback ignores a swarm-wide fallback mission (one with no memory row for this mysis).
	DisableMissionFallback bool
}

// DefaultPolicy returns the production defaults.
func DefaultPolicy() Policy {
	return Policy{
		ScanWindow:    50,
		TokenBudget:   8192,
		ToolResultCap: 1500,
		SnapshotTools: []string{"get_status", "get_ship", "get_system", "get_poi", "get_nearby", "get_cargo"},
		PinnedTools:   []string{"login", "register"},
		HistoryLoops:  1,
		Nudges: Nudges{
			Gentle: "Continue your mission. Check notifications and coordinate with the swarm.",
			Firm:   "You need to respond. Check your notifications and status.",
			Urgent: "URGENT: Respond immediately. Check your system status.",
		},
	}
}

// Minimums below which composition cannot keep its promises (a cap must fit its own truncation notice).
const (
	minTokenBudget   = 256
	minToolResultCap = 64
)

func (p Policy) validate() error {
	switch {
	case p.ScanWindow < 1:
		return fmt.Errorf("%w: scan window %d < 1", ErrInvalidPolicy, p.ScanWindow)
	case p.TokenBudget < minTokenBudget:
		return fmt.Errorf("%w: token budget %d < %d", ErrInvalidPolicy, p.TokenBudget, minTokenBudget)
	case p.ToolResultCap < minToolResultCap:
		return fmt.Errorf("%w: tool result cap %d < %d", ErrInvalidPolicy, p.ToolResultCap, minToolResultCap)
	case p.HistoryLoops < 0:
		return fmt.Errorf("%w: history loops %d < 0", ErrInvalidPolicy, p.HistoryLoops)
	case p.Nudges.Gentle == "" || p.Nudges.Firm == "" || p.Nudges.Urgent == "":
		return fmt.Errorf("%w: every nudge level needs wording", ErrInvalidPolicy)
	}
	return nil
}

// Decision is what the runner must do with its encouragement count.
type Decision int

// Decisions.
const (
	DecisionNone      Decision = iota // keep the count
	DecisionReset                     // set the count to 0
	DecisionIncrement                 // set the count to Encouragement.Count (previous + 1)
	DecisionIdle                      // make no LLM call; put the mysis to idle
)

func (d Decision) String() string {
	switch d {
	case DecisionNone:
		return "none"
	case DecisionReset:
		return "reset"
	case DecisionIncrement:
		return "increment"
	case DecisionIdle:
		return "idle"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// MarshalText makes decisions readable in golden files.
func (d Decision) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Encouragement is the decision plus the count the runner stores after it.
type Encouragement struct {
	Decision Decision
	Count    int
}

// Nudge is a prompt the runner must persist (role user, source nudge) as the opener of the turn it begins.
type Nudge struct {
	Level   NudgeLevel
	Content string
}

// Result is the output of Compose.
type Result struct {
	Messages      []chat.Message // nil when Encouragement.Decision is DecisionIdle
	Manifest      Manifest
	Encouragement Encouragement
	Nudge         *Nudge
}
