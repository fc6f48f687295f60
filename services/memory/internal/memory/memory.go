// Package memory is the domain of the memory service: myses, the memories they saw, broadcasts and SpaceMolt
// accounts, with the rules a request must satisfy before it reaches storage. Service runs every operation: it
// validates and normalises the input once, then calls the Store port (declared here, implemented by pgstore). It
// imports no gRPC, pgx or proto, so the same rules apply whichever adapter carries a request in or out.
package memory

import (
	"time"

	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// The values a request carries and the rules on them are libs/memoryrules' (the memory fake validates with the same
// package); the domain names them here so that the rest of the service reads memory.NewMemory, memory.RoleTool, ….
type (
	// State is the lifecycle state of a mysis.
	State = rules.State
	// Role is the chat role of a memory (stored numbers).
	Role = rules.Role
	// Source says where a memory came from (stored numbers).
	Source = rules.Source
	// NewMysis is what a caller supplies to create a mysis.
	NewMysis = rules.NewMysis
	// StateChange is a lifecycle transition, optionally a compare-and-set on Expected.
	StateChange = rules.StateChange
	// ToolCall is one structured tool call of an assistant message.
	ToolCall = rules.ToolCall
	// NewMemory is a memory to append; the store assigns id, seq, turn and created_at.
	NewMemory = rules.NewMemory
	// Account is a SpaceMolt login (its password plain only in memory; the store keeps it encrypted).
	Account = rules.Account
)

// The states a mysis can be in. StateAny is only meaningful as a filter or an unset expectation.
const (
	StateAny     = rules.StateAny
	StateIdle    = rules.StateIdle
	StateRunning = rules.StateRunning
	StateStopped = rules.StateStopped
	StateErrored = rules.StateErrored
)

// Roles.
const (
	RoleUnspecified = rules.RoleUnspecified
	RoleSystem      = rules.RoleSystem
	RoleUser        = rules.RoleUser
	RoleAssistant   = rules.RoleAssistant
	RoleTool        = rules.RoleTool
)

// Sources.
const (
	SourceUnspecified = rules.SourceUnspecified
	SourceDirect      = rules.SourceDirect
	SourceBroadcast   = rules.SourceBroadcast
	SourceNudge       = rules.SourceNudge
	SourceLLM         = rules.SourceLLM
	SourceTool        = rules.SourceTool
	SourceSystem      = rules.SourceSystem
)

// Mysis is one agent of the swarm as stored.
type Mysis struct {
	ID                 string
	Name               string
	Provider           string
	Model              string
	Temperature        float64
	SystemPrompt       string
	State              State
	StateReason        string
	EncouragementCount int32
	CurrentTurn        int64
	LastSeq            int64
	AccountUsername    string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// ReplyDiscarded: a discarded reply was recorded (LlmCall.Discarded) and no final answer stored since.
	ReplyDiscarded bool
	// SpaceMoltEndpoint is the game endpoint the mysis plays: "v1", "v2", or "" for the swarm's.
	SpaceMoltEndpoint string
}

// ConfigPatch changes some configuration fields of a mysis; nil fields stay as they are.
type ConfigPatch struct {
	Provider     *string
	Model        *string
	Temperature  *float64
	SystemPrompt *string
	// SpaceMoltEndpoint "" sets the mysis back to the swarm's endpoint.
	SpaceMoltEndpoint *string
}

// Apply returns m's configuration with the patch applied, validated as a whole (a provider change may make an
// empty model invalid).
func (p ConfigPatch) Apply(m NewMysis) (NewMysis, error) {
	if p.Provider != nil {
		m.Provider = *p.Provider
	}
	if p.Model != nil {
		m.Model = *p.Model
	}
	if p.Temperature != nil {
		m.Temperature = *p.Temperature
	}
	if p.SystemPrompt != nil {
		m.SystemPrompt = *p.SystemPrompt
	}
	if p.SpaceMoltEndpoint != nil {
		m.SpaceMoltEndpoint = *p.SpaceMoltEndpoint
	}
	return m, rules.ValidateConfig(m)
}

// Memory is one stored message of a mysis.
type Memory struct {
	ID             int64
	MysisID        string
	Seq            int64
	Turn           int64
	Role           Role
	Source         Source
	SenderID       string
	Content        string
	Reasoning      string
	ToolCalls      []ToolCall
	ToolCallID     string
	ToolName       string
	IdempotencyKey string
	BroadcastID    string
	CreatedAt      time.Time
	// CallArguments (tool results) are the arguments of the call this result answers, as the model sent them;
	// empty when unknown. CallKey is the server-computed distinct-call key (CallKey), empty on other roles.
	CallArguments string
	CallKey       string
}

// OpensTurn reports whether this memory starts a new turn: a user prompt from the commander, the swarm or a nudge.
// Everything else belongs to the turn that is current when it is written.
func OpensTurn(r Role, s Source) bool {
	return r == RoleUser && (s == SourceDirect || s == SourceBroadcast || s == SourceNudge)
}

// IsCommanderMission reports whether a memory with these attributes can be a mission: a commander (sender ”)
// direct message or broadcast. The store's partial index has the same predicate.
func IsCommanderMission(r Role, s Source, senderID string) bool {
	return r == RoleUser && (s == SourceDirect || s == SourceBroadcast) && senderID == ""
}

// Broadcast is one message to the swarm.
type Broadcast struct {
	ID        string
	SenderID  string
	Content   string
	CreatedAt time.Time
}

// Delivery is the outcome of delivering one broadcast to a set of myses.
type Delivery struct {
	Broadcast Broadcast
	// Memories holds the delivered row per target, in target order (new and already present).
	Memories         []Memory
	Delivered        int
	AlreadyDelivered int
}

// Mission is the order a mysis is working on.
type Mission struct {
	Memory Memory
	// GlobalFallback is set when the mysis had no mission of its own and Memory was built from the swarm's
	// latest commander broadcast (ID 0, Seq 0).
	GlobalFallback bool
}

// ComposeWindow is everything the composer needs for one mysis.
type ComposeWindow struct {
	Mysis    Mysis
	Memories []Memory // oldest first, each once: carried rows, then the recent contiguous part
	Mission  *Mission
	// RecentStartSeq is the seq of the first memory of the contiguous recent part (0 when there are no memories).
	RecentStartSeq int64
	// ObjectiveSeq is the seq of the mission memory (0 for none or the global fallback).
	ObjectiveSeq int64
	// TurnTruncated reports that the current turn is longer than MaxTurnRows and its oldest rows were left out.
	TurnTruncated bool
	// CarryOmitted reports that the rows below RecentStartSeq were left out because the query's Known named this
	// window's ObjectiveSeq and RecentStartSeq: the caller holds them.
	CarryOmitted bool
	// CarryCut reports that the byte bound left out rows below RecentStartSeq: the carried rows are not all there.
	CarryCut bool
	// CarryBytes is the size of the carried rows as the response bound counts them (Memory.Bytes, after the result
	// cut): those below RecentStartSeq in Memories, or when CarryOmitted the held ones as the query's Known named
	// them. A caller holding the carried rows sends it back as CarryKnown.Bytes.
	CarryBytes int64
	// RecentOmittedThrough, when above 0, says the recent rows from RecentStartSeq through it were left out too
	// (only with CarryOmitted): the query's Known held them (CarryKnown.RecentThrough).
	RecentOmittedThrough int64
	// RecentBytes is the size of the recent part (the rows from RecentStartSeq on) as the response bound counts them,
	// those left out counted as the query's Known gave them. A caller holding the recent rows sends it back as
	// CarryKnown.RecentBytes.
	RecentBytes int64
}

// MemoryHit is one ranked search result.
type MemoryHit struct {
	Memory  Memory
	Snippet string
	Rank    float32
}

// BroadcastHit is one ranked broadcast search result.
type BroadcastHit struct {
	Broadcast Broadcast
	Snippet   string
	Rank      float32
}

// SearchQuery is a full-text search request.
type SearchQuery struct {
	MysisID       string // required for messages and reasoning, ignored for broadcasts
	Text          string // words, "phrases", -exclusions (searchtext.go)
	Limit         int
	IncludeNudges bool
	Order         SearchOrder // messages only
	Parsed        SearchText  // Text read by ParseSearchText (Normalize sets it)
}

// SearchOrder is how a message search chooses and orders its hits.
type SearchOrder int

const (
	// OrderRelevance returns the best matches first: BM25 over the mysis's whole history (the default).
	OrderRelevance SearchOrder = iota
	// OrderRecency returns the newest matches first.
	OrderRecency
)

// SearchCandidates bounds the memories one search scores: the postings of the query's rarest words are read whole
// while they add up to at most this many memories (a memory's age plays no part), and the other words only score
// them. A query whose every word is more common than that scores the memories holding all of its words, up to this
// many (MessageHits.CandidatesBounded). 1,000 and 16,000 gave the same LoCoMo recall under 20,000 game memories;
// 1,000 halved p95 (docs/benchmarks/2026-12-02-search-v4.md).
const SearchCandidates = 1000

// MessageHits is the answer to a message search.
type MessageHits struct {
	Hits []MemoryHit
	// Matches is how many memories hold at least one of the query's words (and satisfy its phrases and
	// exclusions): exact unless MatchesEstimated, then a lower bound from the mysis's term counts.
	Matches          int64
	MatchesEstimated bool
	// CandidatesBounded is set when every word of the query was too common to read whole, so only the memories
	// holding all of them (newest first, at most SearchCandidates) were scored.
	CandidatesBounded bool
	// Note explains an empty or partial answer in a sentence a model can act on ("" when there is nothing to say).
	Note string
}

// ListFilter selects a page of myses.
type ListFilter struct {
	State     State
	PageSize  int
	AfterName string // exclusive; "" starts at the beginning
}

// Limits shared by validation and the adapters (libs/memoryrules holds them).
const (
	MaxProviderBytes     = rules.MaxProviderBytes
	MaxNameRunes         = 64
	MaxBatch             = rules.MaxBatch
	MaxWindow            = rules.MaxWindow
	DefaultWindow        = rules.DefaultWindow
	DefaultRangeLimit    = rules.DefaultRangeLimit
	MaxRangeLimit        = rules.MaxRangeLimit
	DefaultSearchLimit   = rules.DefaultSearchLimit
	MaxSearchLimit       = rules.MaxSearchLimit
	DefaultPageSize      = rules.DefaultPageSize
	MaxPageSize          = rules.MaxPageSize
	MaxDeliveryTargets   = rules.MaxDeliveryTargets
	MaxContentBytes      = rules.MaxContentBytes
	MaxReplyBytes        = rules.MaxReplyBytes
	MaxShortFieldBytes   = rules.MaxShortFieldBytes
	MaxQueryBytes        = rules.MaxQueryBytes
	MinUsernameRunes     = rules.MinUsernameRunes
	MaxUsernameRunes     = rules.MaxUsernameRunes
	MaxTemperature       = rules.MaxTemperature
	MaxToolCallsPerMsg   = rules.MaxToolCallsPerMsg
	MaxSystemPromptBytes = rules.MaxSystemPromptBytes
)
