// Package memoryrules is the memory API's request rules, written once: the limits, the values a request carries
// (a mysis's configuration, a state change, the memories to append, an LLM call's accounting, an account, spend
// limits) and the checks on them, with errors that name the API field ("memories[3].content") as libs/errs
// InvalidArgument errors. The memory service's domain (services/memory/internal/memory) validates every request
// with them — its types are aliases of these — and so does the in-memory fake (libs/testsupport/memfake), so the two
// cannot drift apart. It imports no gRPC, protobuf or driver: a caller converts its wire types first.
package memoryrules

import (
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// State is the lifecycle state of a mysis.
type State string

// The states a mysis can be in. StateAny is only meaningful as a filter or an unset expectation.
const (
	StateAny     State = ""
	StateIdle    State = "idle"
	StateRunning State = "running"
	StateStopped State = "stopped"
	StateErrored State = "errored"
)

// Valid reports whether s is a concrete state.
func (s State) Valid() bool {
	switch s {
	case StateIdle, StateRunning, StateStopped, StateErrored:
		return true
	}
	return false
}

// Role is the chat role of a memory. The numeric values are stored (and are the zoea.memory.v1 enum numbers), so
// they never change.
type Role int16

// Roles.
const (
	RoleUnspecified Role = 0
	RoleSystem      Role = 1
	RoleUser        Role = 2
	RoleAssistant   Role = 3
	RoleTool        Role = 4
)

// Valid reports whether r is a concrete role.
func (r Role) Valid() bool { return r >= RoleSystem && r <= RoleTool }

// Source says where a memory came from. The numeric values are stored (and are the zoea.memory.v1 enum numbers),
// so they never change.
type Source int16

// Sources.
const (
	SourceUnspecified Source = 0
	SourceDirect      Source = 1
	SourceBroadcast   Source = 2
	SourceNudge       Source = 3
	SourceLLM         Source = 4
	SourceTool        Source = 5
	SourceSystem      Source = 6
)

// Valid reports whether s is a concrete source.
func (s Source) Valid() bool { return s >= SourceDirect && s <= SourceSystem }

// NewMysis is what a caller supplies to create a mysis: its name and its configuration.
type NewMysis struct {
	Name         string
	Provider     string
	Model        string
	Temperature  float64
	SystemPrompt string
	// SpaceMoltEndpoint: one of SpaceMoltEndpoints.
	SpaceMoltEndpoint string
}

// SpaceMoltEndpoints are the values of a mysis's SpaceMolt endpoint: the legacy /mcp, MCP v2 at /mcp/v2, and ""
// for the swarm's (the runner's setting).
var SpaceMoltEndpoints = []string{"", "v1", "v2"}

// CommanderStopReason is the state reason of a stop a commander asked for without giving a reason of their own: the
// runner's StopMysis default, and what the CLI's stop (command, console, TUI) sends.
const CommanderStopReason = "stopped by commander"

// AutopilotProvider is the registry name of Zoea's offline provider (a scripted policy, no model), which is also the
// model it reports: the runner's default provider, the CLI's demo default, and the provider of test and load myses.
const AutopilotProvider = "autopilot"

// StateChange is a lifecycle transition, optionally a compare-and-set on Expected.
type StateChange struct {
	State              State
	Reason             string
	EncouragementCount *int32
	// Expected, when not StateAny, must equal the stored state or nothing changes.
	Expected State
}

// ToolCall is one structured tool call of an assistant message. Arguments is a JSON object text kept byte for byte.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// NewMemory is a memory to append; the store assigns id, seq, turn and created_at.
type NewMemory struct {
	Role           Role
	Source         Source
	SenderID       string
	Content        string
	Reasoning      string
	ToolCalls      []ToolCall
	ToolCallID     string
	ToolName       string
	IdempotencyKey string
	// CallArguments (tool results only): the call's arguments, byte for byte as the assistant memory holds them.
	// When empty, the store takes them from the assistant memory that made the call.
	CallArguments string

	// LlmCall is the accounting of the LLM call that produced this assistant memory, stored with it.
	LlmCall *LlmCall
}

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

// Account is a SpaceMolt login. Password is plain only in memory; the store keeps it encrypted.
type Account struct {
	Username  string
	Password  string
	Empire    string
	MysisID   string
	CreatedAt time.Time
}

// SpendWindow is the period a spend limit counts over; the numbers are stored (and are the zoea.memory.v1 enum
// numbers).
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

// SpendUnit is what a limit counts; the numbers are stored (and are the zoea.memory.v1 enum numbers).
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

// The limits of the memory API.
const (
	MaxProviderBytes   = chat.MaxProviderBytes
	MaxBatch           = 1000
	MaxWindow          = 1000
	DefaultWindow      = 20
	DefaultRangeLimit  = 100
	MaxRangeLimit      = 1000
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	DefaultPageSize    = 100
	MaxPageSize        = 1000
	MaxDeliveryTargets = 10000
	MaxContentBytes    = chat.MaxTextBytes
	// MaxReplyBytes bounds an assistant memory's content, its reasoning and its calls' arguments, and a tool
	// result's call_arguments_json (see chat.MaxReplyBytes).
	MaxReplyBytes      = chat.MaxReplyBytes
	MaxShortFieldBytes = chat.MaxShortFieldBytes
	MaxQueryBytes      = 1024
	MinUsernameRunes   = 3
	MaxUsernameRunes   = 24
	MaxPasswordBytes   = 1024
	MaxReasonBytes     = 4096
	MaxTemperature     = 2.0
	MaxToolCallsPerMsg = chat.MaxToolCallsPerMessage
	// MaxSystemPromptBytes keeps a system prompt well inside the composer's default token budget (8192).
	MaxSystemPromptBytes = chat.MaxSystemPromptBytes
	MaxUsageMyses        = 1000
	MaxCallsPerCall      = 100
	MaxErrorBytes        = 4096
)

// ReasonPromptArrived is the ErrorInfo reason of a conditional append refused because a commander prompt (a direct
// message or broadcast) arrived after the seq the caller's model saw (if_no_prompt_after_seq).
const ReasonPromptArrived = "PROMPT_ARRIVED"
