// Package compose builds the message list for one LLM request of a mysis: the heart of Zoea. It is a pure function of
// its input — no I/O, no clock, no randomness, no dependence on map iteration order — so the same input always gives
// byte-identical output and providers' prompt caches stay warm.
//
// # What goes in the request (composition v2, docs/COMPOSITION.md)
//
// System prompt once, first. Then, in chronological order: the mission (the latest commander broadcast or direct
// order) when it is not the prompt of the current turn; the compacted past; and the live part. Everything from the
// compaction boundary on is the live part, sent as stored (results capped), so requests extend each other and
// providers' prompt caches stay warm. The boundary stays where the previous request had it (Input.PrevBoundary)
// while the request fits the budget, and moves only when the budget forces it or when the saving expected over the
// coming requests exceeds the cost of the rewrite under the provider's cache model (composition v3, cache.go; v2's
// high- and low-water marks stay selectable, CompactionWatermark). Below it, every turn
// is compacted to what it carried at that compaction (Manifest.CompactSeq): the newest result of each distinct call
// (tool name + canonical arguments; snapshot tools by name) since the objective with the call that made it, within
// CarryTokens, pinned login/register results however old, and the newest replies (capped). Results above the
// per-result cap are cut with a pointer to the memory id, which the mysis can look up with zoea_search_messages. The
// budget covers the whole request, tool definitions included; over it, a table of stages takes tokens where they
// are worth least (superseded results become stubs that still answer their call where the stub is shorter, loops of
// superseded results, text, older calls of a tool whose newest result is sent, older state, the current turn's
// early loops, pinned results, and last the newest loop's results cut shorter); if even that cannot fit, Compose
// returns a *BudgetError instead of an oversized request. The manifest says for every memory why it was kept,
// stubbed, cut or dropped.
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
package compose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

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
	// CallArguments and CallKey are set on tool results by a v2 memory service (the arguments of the call answered,
	// and the server's distinct-call key). They are informational: the composer derives its own key (CallKey) from
	// the call it pairs the result with, so rows from before the column existed compare the same way.
	CallArguments string
	CallKey       string
}

// Tool is one tool definition sent with the request. Its tokens count against the budget as the provider receives
// it: one JSON function definition {"type":"function","function":{"name","description","parameters"}}.
type Tool struct {
	Name        string
	Description string
	Parameters  string // JSON schema of the parameters, a JSON object text ("" = no parameters)
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
	// Window is the memory service's compose window, oldest first. A v1 window (RecentStartSeq 0) is the last
	// Policy.ScanWindow memories, all contiguous. A v2 window is carried rows (the newest result of each distinct
	// call since the objective with the assistant memory that made the call, pinned results, earlier turns' final
	// replies; not contiguous) followed by the contiguous recent rows from RecentStartSeq on.
	Window []Memory
	// RecentStartSeq is the seq of the first contiguous recent row of a v2 window; 0 means the whole window is
	// recent (a v1 window, trimmed to its newest Policy.ScanWindow rows).
	RecentStartSeq int64
	// ObjectiveSeq is the seq of the prompt that set the current objective; state is carried from there on. 0 means
	// the mission's seq when the mission is a memory of this mysis, else the whole window.
	ObjectiveSeq int64
	// TurnTruncated says the memory service left out the oldest rows of an overlong current turn (max_turn_rows).
	TurnTruncated bool
	// Tools are the tool definitions sent with the request; their tokens count against Policy.TokenBudget.
	Tools []Tool
	// PrevBoundary is the compaction boundary of this mysis's previous request (its Manifest.Boundary), 0 if unknown.
	// While the request stays under the high-water mark the boundary stays there, so the request extends the
	// previous one and the provider's prompt cache holds; unknown, the boundary is chosen afresh.
	PrevBoundary int64
	// PrevCompactSeq is the previous request's Manifest.CompactSeq: what the compacted past below PrevBoundary was
	// decided by. 0 (unknown) decides it as of the boundary itself.
	PrevCompactSeq int64
	// SincePrevious is the time since this mysis's previous request, 0 if unknown. Longer than the cache model's
	// lifetime, the provider's cache has expired and a compaction costs no rewrite.
	SincePrevious time.Duration
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
	ScanWindow    int      // recent memories fetched per compose; a longer v1 Window is trimmed to its newest ScanWindow
	TokenBudget   int      // hard ceiling for the whole request (tool definitions included), o200k_base tokens
	ToolResultCap int      // tokens one tool result may keep before it is cut
	SnapshotTools []string // state tools whose results are keyed by name alone (any arguments supersede)
	PinnedTools   []string // results carried even from before the objective and compressed last (login/session)
	Nudges        Nudges
	// DisableMissionFallback ignores a swarm-wide fallback mission (one with no memory row for this mysis).
	DisableMissionFallback bool
	// CarryLimit is how many distinct calls (newest first) earlier turns may carry; 0 carries none.
	CarryLimit int
	// CarryTokens bounds the state carried below the compaction boundary (results with their calls), and so does half
	// the room the budget leaves the messages (after the system prompt and tool schemas): pinned results
	// always; then, while they fit, the newest result of each tool, smallest first (under watermark compaction those
	// of the compaction's newest turn first) — then other calls' newest results, newest first. 0 = no bound. Under
	// priced compaction a young objective (YoungObjectiveRows) may carry 1.5 times it, at most 65% of that room, and
	// a long one (LongObjectiveRows) 45% of it.
	CarryTokens int
	// ReplyLimit is how many earlier turns' final text replies (newest first, since the objective) are kept.
	ReplyLimit int
	// ReplyCap is the tokens one kept earlier reply may have before it is cut.
	ReplyCap int
	// MaxTurnRows bounds the recent part of a v2 window (passed to the memory service); 0 = the server's default.
	MaxTurnRows int
	// HighWater is the message tokens (system prompt and tools excluded) the request may grow to append-only before
	// the compaction boundary moves; it is capped by what the budget leaves. 0 means the budget alone.
	HighWater int
	// LowWater is the message tokens the request is compacted down to when the boundary moves (0 means HighWater):
	// the gap between the two marks is how far requests grow append-only between two compactions.
	LowWater int
	// CompactStep is the seq grid of the compaction boundary: it only ever sits on the first unit at or after a
	// multiple of CompactStep, so it moves in steps and the requests between steps extend each other.
	CompactStep int
	// Compaction is how the boundary's moves are decided: CompactionPriced (v3, "" means it) or
	// CompactionWatermark (v2, by HighWater and LowWater).
	Compaction Compaction
	// Cache prices the priced compaction; the zero value means CacheAnthropic. The composer service chooses it
	// from the mysis's provider and model (CacheModelFor) unless its configuration names one.
	Cache CacheModel
}

// DefaultPolicy returns the production defaults.
func DefaultPolicy() Policy {
	return Policy{
		ScanWindow:    50,
		TokenBudget:   8192,
		ToolResultCap: 1500,
		SnapshotTools: DefaultSnapshotTools(),
		PinnedTools:   DefaultPinnedTools(),
		CarryLimit:    160,
		ReplyLimit:    3,
		ReplyCap:      200,
		MaxTurnRows:   2000,
		HighWater:     5000,
		LowWater:      2500,
		CarryTokens:   2500,
		CompactStep:   4,
		Compaction:    CompactionPriced,
		Nudges: Nudges{
			Gentle: "Continue your mission. Check notifications and coordinate with the swarm.",
			Firm:   "You need to respond. Check your notifications and status.",
			Urgent: "URGENT: Respond immediately. Check your system status.",
		},
	}
}

// DefaultSnapshotTools are the state reads whose newest result supersedes every older one whatever the arguments,
// on both SpaceMolt endpoints: the legacy flat tools and their MCP v2 tool.action names (SpaceMolt's public docs,
// connections.md: core reads are actions of the "spacemolt" tool; ship reads also of "spacemolt_ship").
func DefaultSnapshotTools() []string {
	return []string{"get_status", "get_ship", "get_system", "get_poi", "get_nearby", "get_cargo",
		"spacemolt.get_status", "spacemolt.get_ship", "spacemolt.get_system", "spacemolt.get_poi",
		"spacemolt.get_nearby", "spacemolt.get_cargo", "spacemolt_ship.get_ship", "spacemolt_ship.get_cargo"}
}

// DefaultPinnedTools are the session calls carried however old, on both endpoints.
func DefaultPinnedTools() []string {
	return []string{"login", "register", "spacemolt_auth.login", "spacemolt_auth.register"}
}

// Minimums below which composition cannot keep its promises (a cap must fit its own truncation notice): the one
// owner of these bounds; package policy checks requests against them.
const (
	MinTokenBudget   = 256
	MinToolResultCap = 64
	MinReplyCap      = 32
)

func (p Policy) validate() error {
	switch {
	case p.ScanWindow < 1:
		return fmt.Errorf("%w: scan window %d < 1", ErrInvalidPolicy, p.ScanWindow)
	case p.TokenBudget < MinTokenBudget:
		return fmt.Errorf("%w: token budget %d < %d", ErrInvalidPolicy, p.TokenBudget, MinTokenBudget)
	case p.ToolResultCap < MinToolResultCap:
		return fmt.Errorf("%w: tool result cap %d < %d", ErrInvalidPolicy, p.ToolResultCap, MinToolResultCap)
	case p.CarryLimit < 0:
		return fmt.Errorf("%w: carry limit %d < 0", ErrInvalidPolicy, p.CarryLimit)
	case p.ReplyLimit < 0:
		return fmt.Errorf("%w: reply limit %d < 0", ErrInvalidPolicy, p.ReplyLimit)
	case p.ReplyCap < MinReplyCap:
		return fmt.Errorf("%w: reply cap %d < %d", ErrInvalidPolicy, p.ReplyCap, MinReplyCap)
	case p.MaxTurnRows < 0:
		return fmt.Errorf("%w: max turn rows %d < 0", ErrInvalidPolicy, p.MaxTurnRows)
	case p.HighWater < 0:
		return fmt.Errorf("%w: high water %d < 0", ErrInvalidPolicy, p.HighWater)
	case p.CarryTokens < 0:
		return fmt.Errorf("%w: carry tokens %d < 0", ErrInvalidPolicy, p.CarryTokens)
	case p.LowWater < 0:
		return fmt.Errorf("%w: low water %d < 0", ErrInvalidPolicy, p.LowWater)
	case p.CompactStep < 1:
		return fmt.Errorf("%w: compact step %d < 1", ErrInvalidPolicy, p.CompactStep)
	case p.Compaction != "" && p.Compaction != CompactionPriced && p.Compaction != CompactionWatermark:
		return fmt.Errorf("%w: compaction %q is neither %q nor %q", ErrInvalidPolicy, p.Compaction, CompactionPriced, CompactionWatermark)
	case p.Cache.validate() != nil:
		return p.Cache.validate()
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

// JSON is the tool's definition as providers receive it (OpenAI's function-tool shape; Anthropic's is the same
// fields renamed), the text whose tokens count against the budget. Parameters that are not a JSON object count as an
// empty object schema.
func (t Tool) JSON() string {
	params := json.RawMessage(`{"type":"object","properties":{}}`)
	if p := strings.TrimSpace(t.Parameters); p != "" && p[0] == '{' && json.Valid([]byte(p)) {
		params = json.RawMessage(p)
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}{Type: "function", Function: struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, params}})
	return strings.TrimSuffix(b.String(), "\n")
}
