// Package mysis is the runner's domain: the actor that owns one mysis, its lifecycle (idle, running, stopped,
// errored) and its turn loop (compose → LLM → tools → compose …). It declares the small ports it needs — the
// memory store, the composer, the tool router, the LLM providers, an event sink and a status sink — and imports
// no gRPC, database or NATS code, so the whole loop is tested with hand-written fakes.
package mysis

import (
	"context"
	"errors"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// State is the lifecycle state of a mysis as persisted by the memory service.
type State string

// The four lifecycle states.
const (
	StateIdle    State = "idle"
	StateRunning State = "running"
	StateStopped State = "stopped"
	StateErrored State = "errored"
)

// Source says where a memory came from.
type Source string

// Memory sources.
const (
	SourceDirect    Source = "direct"
	SourceBroadcast Source = "broadcast"
	SourceNudge     Source = "nudge"
	SourceLLM       Source = "llm"
	SourceTool      Source = "tool"
	SourceSystem    Source = "system"
)

// IdleReason is the state reason stored when three nudges went unanswered.
const IdleReason = "Failed to respond after 3 encouragements"

// Synthetic tool results, stored in place of a result the runner does not have. They follow the tools'
// "Error: <code>: <message>" convention so a model (and the autopilot) treats them as "look before acting again".
const (
	// InterruptedResult answers a call that changes the game (a mutation, a chat message, a log entry) found
	// unanswered when a turn resumes: the previous owner crashed or lost its lease during the call, or the call
	// failed in transport. The game may or may not have executed it, so running it again could do it twice (sell
	// twice, jump twice); the model checks instead.
	InterruptedResult = "Error: interrupted: the result of this call is unknown: the runner stopped while it ran; check with a read (get_status) before repeating it"
	// NotRunResult answers calls that a stop or a graceful shutdown cut off before they started: nothing happened.
	NotRunResult = "Error: not_executed: the mysis was stopped before this call ran, so nothing happened; call it again if it is still needed"
)

// Mysis is the stored record of one agent.
type Mysis struct {
	ID                 string
	Name               string
	Provider           string
	Model              string
	Temperature        float64
	SystemPrompt       string
	State              State
	StateReason        string
	EncouragementCount int
	CurrentTurn        int64
	LastSeq            int64
	AccountUsername    string
	// ReplyDiscarded says a paid final answer of the current turn was already thrown away (ErrPromptArrived), by
	// this replica or an earlier owner, and no final answer was stored since: the next answer is kept (issue 26).
	ReplyDiscarded bool
	// SpaceMoltEndpoint is the game endpoint the mysis plays: "v1" (/mcp), "v2" (/mcp/v2), or "" for the swarm's.
	// A change takes effect at the next turn start: the tool session is opened again on the new endpoint.
	SpaceMoltEndpoint string
}

// Memory is one stored message.
type Memory struct {
	ID             int64
	Seq            int64
	Turn           int64
	Role           chat.Role
	Source         Source
	SenderID       string
	Content        string
	Reasoning      string
	ToolCalls      []chat.ToolCall
	ToolCallID     string
	ToolName       string
	IdempotencyKey string
	// CallArguments (tool results): the arguments of the call the result answers.
	CallArguments string
}

// NewMemory is a memory to append; the store assigns id, seq and turn.
type NewMemory struct {
	Role           chat.Role
	Source         Source
	SenderID       string
	Content        string
	Reasoning      string
	ToolCalls      []chat.ToolCall
	ToolCallID     string
	ToolName       string
	IdempotencyKey string
	// CallArguments (tool results): the arguments of the call the result answers, as the model sent them, so the
	// memory service can key results by call (the same tool with other arguments is another call).
	CallArguments string

	// LlmCall is the accounting of the call that produced an assistant memory, stored in the same write.
	LlmCall *LlmCall
}

// StateChange is a compare-and-set on the lifecycle state.
type StateChange struct {
	To     State
	Reason string
	// Count, when set, is the new encouragement count.
	Count *int
	// Expected, when set, makes the change conditional: it fails with a Conflict error when the stored state differs.
	Expected State
}

// AppendCondition makes an append conditional; the memory service decides it in the append's transaction, so
// nothing can land between the check and the write. A retried append (its idempotency keys already stored) returns
// the stored rows without checking anything.
type AppendCondition struct {
	// IfNoPromptAfter, when set, refuses the append with ErrPromptArrived when a commander prompt (a direct message
	// or broadcast) was stored after this seq: the reply was written without seeing it.
	IfNoPromptAfter *int64
	// State, when set, is changed in the same transaction (a nudge and its encouragement count in one call); its
	// Expected makes the whole append a compare-and-set that fails with a Conflict error.
	State *StateChange
}

// ErrPromptArrived is a conditional append refused because a commander prompt arrived after the seq the model saw
// (the memory service's ErrorInfo reason PROMPT_ARRIVED): compose again with the prompt in view.
var ErrPromptArrived = errors.New("a commander prompt arrived after the composition")

// Store is the memory service as the actor needs it. Errors are libs/errs kinds (NotFound for a deleted mysis,
// Conflict for a failed compare-and-set, Unavailable when the service cannot be reached).
type Store interface {
	GetMysis(ctx context.Context, id string) (Mysis, error)
	SetState(ctx context.Context, id string, ch StateChange) (Mysis, error)
	// Append stores memories atomically; a memory whose idempotency key is already stored comes back as stored.
	Append(ctx context.Context, id string, ms []NewMemory) ([]Memory, error)
	// AppendIf is Append under a condition (see AppendCondition); ErrPromptArrived or a Conflict error when it fails.
	AppendIf(ctx context.Context, id string, ms []NewMemory, c AppendCondition) ([]Memory, error)
	// Recent returns the newest memories, oldest first.
	Recent(ctx context.Context, id string, limit int) ([]Memory, error)
}

// Action is the composer's decision on the encouragement counter.
type Action int

// Encouragement actions (see composer.v1.EncouragementAction).
const (
	ActionNone Action = iota
	ActionReset
	ActionIncrement
	ActionIdle
)

// ComposeRequest is one compose call.
type ComposeRequest struct {
	// BeginAutonomousTurn says the runner is beginning an autonomous turn (no new commander message): the composer
	// decides the nudge.
	BeginAutonomousTurn bool
	// Tools are the tools the request will be sent with: the composer counts them into the token budget.
	Tools []llm.Tool
	// Append are memories stored in the compose round trip before the window is read, with Store.Append's
	// semantics (idempotency keys: a compose retried after a lost response writes nothing twice). The actor sends
	// the last tool result of an iteration here, never an earlier one (see execCalls).
	Append []NewMemory
	// SpendAt, when not zero, asks for the spend counts of the windows containing it (Composition.Spend), read in
	// the same round trip.
	SpendAt time.Time
	// Previous is the previous composition's Compaction (zero: none, the composer uses what it remembers).
	Previous Compaction
}

// Compaction is where a composed request's compaction boundary sat (Boundary) and the newest memory its compacted
// past was decided by (Seq). Passed back with the next compose, it lets any composer replica extend that request,
// which keeps the provider's prompt cache warm.
type Compaction struct{ Boundary, Seq int64 }

// Composition is one composed LLM request.
type Composition struct {
	Messages  []chat.Message
	Action    Action
	NextCount int
	// Nudge is the text to persist as a nudge memory before calling the LLM (the messages already end with it).
	Nudge string
	// MaxSeq is the newest memory seq the composer saw (0 when the mysis has no memories).
	MaxSeq int64
	// Tokens is the composer's count of the whole request (tools included) and Budget the budget it was held to.
	Tokens, Budget int
	// Mysis is the mysis record read with the window (state, configuration, counters); nil when the composer
	// returned none.
	Mysis *Mysis
	// Appended are ComposeRequest.Append as stored, in order.
	Appended []Memory
	// Spend are the spend counts read with the window for ComposeRequest.SpendAt; nil when none were asked for
	// or returned (the spend check then reads them itself).
	Spend *SpendCounts
	// Compaction is this request's compaction, for the next ComposeRequest.Previous.
	Compaction Compaction
}

// Composer composes the next request for a mysis in one memory round trip (see ComposeRequest).
type Composer interface {
	Compose(ctx context.Context, mysisID string, req ComposeRequest) (Composition, error)
}

// ToolResult is what a tool returned, as the text the LLM will read.
type ToolResult struct {
	Content string
	IsError bool
	// Credits is the player's credit balance when the result reported it (get_status, login), else nil.
	Credits *int64
	// Ship is where the player is and what its ship holds, when the result reported both (get_status), else nil.
	Ship *Ship
}

// Ship is the game state a commander wants to see at a glance: where the player is, its ship's condition and cargo,
// and what it has earned, as the newest game result that reported them (get_status) said. A status holds it by
// pointer and replaces it whole, never edits it, so copies of a status may share it.
type Ship struct {
	System        string `json:"system"`
	POI           string `json:"poi"`
	DockedAt      string `json:"docked_at,omitempty"`
	Class         string `json:"class,omitempty"`
	Hull          int64  `json:"hull"`
	MaxHull       int64  `json:"max_hull"`
	Shield        int64  `json:"shield"`
	MaxShield     int64  `json:"max_shield"`
	Fuel          int64  `json:"fuel"`
	MaxFuel       int64  `json:"max_fuel"`
	CargoUsed     int64  `json:"cargo_used"`
	CargoCapacity int64  `json:"cargo_capacity"`
	// Cargo lists the items aboard, in the game's order.
	Cargo []CargoItem `json:"cargo,omitempty"`
	// CreditsEarned is the player's lifetime earnings (player.stats.credits_earned), -1 when not reported.
	CreditsEarned int64 `json:"credits_earned"`
	// At is when the result was read.
	At time.Time `json:"at"`
}

// CargoItem is one stack of items aboard.
type CargoItem struct {
	ItemID   string `json:"item_id"`
	Quantity int64  `json:"quantity"`
}

// ToolSession is one mysis's tool router: its game session and its search tools.
type ToolSession interface {
	// Prepare connects, loads the tool list and logs the mysis in. A turn never starts before it succeeded.
	Prepare(ctx context.Context) ([]llm.Tool, error)
	// Call executes one tool call. Bad arguments, unknown tools and game errors come back as an error result the
	// LLM can read; the error return is for infrastructure failures only (the game server is unreachable).
	Call(ctx context.Context, call chat.ToolCall) (ToolResult, error)
	// Close ends the session.
	Close()
}

// Tools opens tool sessions.
type Tools interface {
	Open(m Mysis) ToolSession
}

// Providers resolves a provider by its registry name.
type Providers interface {
	Provider(name string) (llm.Provider, error)
}

// EventKind classifies events.
type EventKind int

// Event kinds.
const (
	EventStateChanged EventKind = iota + 1
	EventMemoryAppended
	EventToolCalled
	EventError
	// EventSpendLimited: a spend limit stopped the mysis before an LLM call (Reason says which; Message the scope).
	EventSpendLimited
)

// Event is something that happened to a mysis, for UIs.
type Event struct {
	MysisID string
	Kind    EventKind
	At      time.Time
	// State changes.
	From, To State
	Reason   string
	// Memories appended.
	MemoryIDs []int64
	Seqs      []int64
	Role      chat.Role
	Excerpt   string
	// Tool calls.
	Tool     string
	CallID   string
	IsError  bool
	Duration time.Duration
	// Errors; the scope of a spend stop.
	Message string
	// Until is when a spend stop's window rolls over (zero for a total limit).
	Until time.Time
}

// Events publishes events; it must not block the actor for long and reports no errors (best effort).
type Events interface {
	Publish(ctx context.Context, ev Event)
}

// Status is what an actor is doing now, readable from every replica.
type Status struct {
	MysisID      string    `json:"mysis_id"`
	Owner        string    `json:"owner"`
	State        State     `json:"state"`
	LastAction   string    `json:"last_action"`
	LastActionAt time.Time `json:"last_action_at"`
	// Credits is -1 when unknown.
	Credits   int64     `json:"credits"`
	Turns     int64     `json:"turns"`
	LastError string    `json:"last_error"`
	UpdatedAt time.Time `json:"updated_at"`
	// Ship is the newest game state a result reported (ToolResult.Ship), nil until one did.
	Ship *Ship `json:"ship,omitempty"`
}

// StatusSink stores live statuses; best effort.
type StatusSink interface {
	PutStatus(ctx context.Context, st Status)
}

// WakeReason says why an actor is woken. Wakes are hints: the actor always re-reads the stored state.
type WakeReason string

// Wake reasons, as carried by the bus.
const (
	WakeBroadcast WakeReason = "broadcast"
	WakeDirect    WakeReason = "direct"
	WakeStart     WakeReason = "start"
	WakeStop      WakeReason = "stop"
	WakeConfigure WakeReason = "configure"
	WakeDelete    WakeReason = "delete"
)
