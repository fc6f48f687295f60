package grpcapi

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

func toProtoTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func toProtoState(s memory.State) memoryv1.MysisState {
	switch s {
	case memory.StateIdle:
		return memoryv1.MysisState_MYSIS_STATE_IDLE
	case memory.StateRunning:
		return memoryv1.MysisState_MYSIS_STATE_RUNNING
	case memory.StateStopped:
		return memoryv1.MysisState_MYSIS_STATE_STOPPED
	case memory.StateErrored:
		return memoryv1.MysisState_MYSIS_STATE_ERRORED
	}
	return memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED
}

// fromProtoState maps an API state; UNSPECIFIED becomes StateAny and an unknown number is an error on field.
func fromProtoState(field string, s memoryv1.MysisState) (memory.State, error) {
	switch s {
	case memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED:
		return memory.StateAny, nil
	case memoryv1.MysisState_MYSIS_STATE_IDLE:
		return memory.StateIdle, nil
	case memoryv1.MysisState_MYSIS_STATE_RUNNING:
		return memory.StateRunning, nil
	case memoryv1.MysisState_MYSIS_STATE_STOPPED:
		return memory.StateStopped, nil
	case memoryv1.MysisState_MYSIS_STATE_ERRORED:
		return memory.StateErrored, nil
	}
	return "", errs.InvalidField(field, "unknown state %d", int32(s))
}

// The stored role and source numbers are the proto enum numbers; the converters still go through a switch so an
// enum added to the API without domain support is rejected rather than stored.

func toProtoRole(r memory.Role) memoryv1.Role {
	if r.Valid() {
		return memoryv1.Role(r)
	}
	return memoryv1.Role_ROLE_UNSPECIFIED
}

func fromProtoRole(field string, r memoryv1.Role) (memory.Role, error) {
	switch r {
	case memoryv1.Role_ROLE_SYSTEM, memoryv1.Role_ROLE_USER, memoryv1.Role_ROLE_ASSISTANT, memoryv1.Role_ROLE_TOOL:
		return memory.Role(r), nil
	case memoryv1.Role_ROLE_UNSPECIFIED:
		return 0, errs.InvalidField(field, "required")
	}
	return 0, errs.InvalidField(field, "unknown role %d", int32(r))
}

func toProtoSource(s memory.Source) memoryv1.Source {
	if s.Valid() {
		return memoryv1.Source(s)
	}
	return memoryv1.Source_SOURCE_UNSPECIFIED
}

func fromProtoSource(field string, s memoryv1.Source) (memory.Source, error) {
	switch s {
	case memoryv1.Source_SOURCE_DIRECT, memoryv1.Source_SOURCE_BROADCAST, memoryv1.Source_SOURCE_NUDGE,
		memoryv1.Source_SOURCE_LLM, memoryv1.Source_SOURCE_TOOL, memoryv1.Source_SOURCE_SYSTEM:
		return memory.Source(s), nil
	case memoryv1.Source_SOURCE_UNSPECIFIED:
		return 0, errs.InvalidField(field, "required")
	}
	return 0, errs.InvalidField(field, "unknown source %d", int32(s))
}

func toProtoMysis(m memory.Mysis) *memoryv1.Mysis {
	return &memoryv1.Mysis{
		Id:                 m.ID,
		Name:               m.Name,
		Provider:           m.Provider,
		Model:              m.Model,
		Temperature:        m.Temperature,
		SystemPrompt:       m.SystemPrompt,
		State:              toProtoState(m.State),
		StateReason:        m.StateReason,
		EncouragementCount: m.EncouragementCount,
		CurrentTurn:        m.CurrentTurn,
		LastSeq:            m.LastSeq,
		AccountUsername:    m.AccountUsername,
		CreatedAt:          toProtoTime(m.CreatedAt),
		UpdatedAt:          toProtoTime(m.UpdatedAt),
		ReplyDiscarded:     m.ReplyDiscarded,
		SpacemoltEndpoint:  m.SpaceMoltEndpoint,
	}
}

func toProtoToolCalls(tcs []memory.ToolCall) []*memoryv1.ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]*memoryv1.ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = &memoryv1.ToolCall{Id: tc.ID, Name: tc.Name, ArgumentsJson: tc.Arguments}
	}
	return out
}

func fromProtoToolCalls(tcs []*memoryv1.ToolCall) []memory.ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]memory.ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = memory.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArgumentsJson()}
	}
	return out
}

func toProtoMemory(m memory.Memory) *memoryv1.Memory {
	return &memoryv1.Memory{
		Id:                m.ID,
		MysisId:           m.MysisID,
		Seq:               m.Seq,
		Turn:              m.Turn,
		Role:              toProtoRole(m.Role),
		Source:            toProtoSource(m.Source),
		SenderId:          m.SenderID,
		Content:           m.Content,
		Reasoning:         m.Reasoning,
		ToolCalls:         toProtoToolCalls(m.ToolCalls),
		ToolCallId:        m.ToolCallID,
		ToolName:          m.ToolName,
		IdempotencyKey:    m.IdempotencyKey,
		BroadcastId:       m.BroadcastID,
		CreatedAt:         toProtoTime(m.CreatedAt),
		CallArgumentsJson: m.CallArguments,
		CallKey:           m.CallKey,
	}
}

func fromProtoWindowQuery(req *memoryv1.GetComposeWindowRequest) memory.WindowQuery {
	return memory.WindowQuery{
		MysisID: req.GetMysisId(), Window: int(req.GetWindow()), GlobalFallback: req.GetGlobalMissionFallback(),
		CarryLimit: int(req.GetCarryLimit()), SnapshotTools: req.GetSnapshotTools(), PinnedTools: req.GetPinnedTools(),
		ReplyLimit: int(req.GetReplyLimit()), MaxTurnRows: int(req.GetMaxTurnRows()),
		MaxResultBytes: int(req.GetMaxResultBytes()), RecentFrom: req.GetRecentFromSeq(),
		Known: memory.CarryKnown{ObjectiveSeq: req.GetCarryKnown().GetObjectiveSeq(),
			RecentStartSeq: req.GetCarryKnown().GetRecentStartSeq(), Bytes: req.GetCarryKnown().GetBytes(),
			Seqs: req.GetCarryKnown().GetSeqs(), RecentThrough: req.GetCarryKnown().GetRecentThroughSeq(),
			RecentBytes: req.GetCarryKnown().GetRecentBytes()},
	}
}

func toProtoMemories(ms []memory.Memory) []*memoryv1.Memory {
	out := make([]*memoryv1.Memory, len(ms))
	for i, m := range ms {
		out[i] = toProtoMemory(m)
	}
	return out
}

// fromProtoNewMemory converts one memory to append; prefix is its field path ("memories[3]").
func fromProtoNewMemory(prefix string, n *memoryv1.NewMemory) (memory.NewMemory, error) {
	if n == nil {
		return memory.NewMemory{}, errs.InvalidField(prefix, "required")
	}
	role, err := fromProtoRole(prefix+".role", n.GetRole())
	if err != nil {
		return memory.NewMemory{}, err
	}
	source, err := fromProtoSource(prefix+".source", n.GetSource())
	if err != nil {
		return memory.NewMemory{}, err
	}
	return memory.NewMemory{
		Role:           role,
		Source:         source,
		SenderID:       n.GetSenderId(),
		Content:        n.GetContent(),
		Reasoning:      n.GetReasoning(),
		ToolCalls:      fromProtoToolCalls(n.GetToolCalls()),
		ToolCallID:     n.GetToolCallId(),
		ToolName:       n.GetToolName(),
		IdempotencyKey: n.GetIdempotencyKey(),
		CallArguments:  n.GetCallArgumentsJson(),

		LlmCall: fromProtoLlmCall(n.GetLlmCall()),
	}, nil
}

func toProtoBroadcast(b memory.Broadcast) *memoryv1.Broadcast {
	return &memoryv1.Broadcast{Id: b.ID, SenderId: b.SenderID, Content: b.Content, CreatedAt: toProtoTime(b.CreatedAt)}
}

// fromProtoSearchOrder maps the request's order; unspecified is relevance, a number this server does not know is
// InvalidArgument naming the field.
func fromProtoSearchOrder(o memoryv1.SearchOrder) (memory.SearchOrder, error) {
	switch o {
	case memoryv1.SearchOrder_SEARCH_ORDER_UNSPECIFIED, memoryv1.SearchOrder_SEARCH_ORDER_RELEVANCE:
		return memory.OrderRelevance, nil
	case memoryv1.SearchOrder_SEARCH_ORDER_RECENCY:
		return memory.OrderRecency, nil
	}
	return 0, errs.InvalidField("order", "unknown search order %d (use SEARCH_ORDER_RELEVANCE or SEARCH_ORDER_RECENCY)", int32(o))
}

func toProtoMemoryHits(hs []memory.MemoryHit) []*memoryv1.MemoryHit {
	out := make([]*memoryv1.MemoryHit, len(hs))
	for i, h := range hs {
		out[i] = &memoryv1.MemoryHit{Memory: toProtoMemory(h.Memory), Snippet: h.Snippet, Rank: h.Rank}
	}
	return out
}

func toProtoBroadcastHits(hs []memory.BroadcastHit) []*memoryv1.BroadcastHit {
	out := make([]*memoryv1.BroadcastHit, len(hs))
	for i, h := range hs {
		out[i] = &memoryv1.BroadcastHit{Broadcast: toProtoBroadcast(h.Broadcast), Snippet: h.Snippet, Rank: h.Rank}
	}
	return out
}

// toProtoAccount converts an account; withPassword is false for responses that must not carry it.
func toProtoAccount(a memory.Account, withPassword bool) *memoryv1.Account {
	out := &memoryv1.Account{Username: a.Username, Empire: a.Empire, MysisId: a.MysisID, CreatedAt: toProtoTime(a.CreatedAt)}
	if withPassword {
		out.Password = a.Password
	}
	return out
}

// pageToken is the opaque ListMyses cursor: the last name returned and the filter it was issued for.
type pageToken struct {
	After string `json:"a"`
	State string `json:"s,omitempty"`
}

func encodePageToken(t pageToken) string {
	b, _ := json.Marshal(t) // a struct of strings always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(s string, state memory.State) (string, error) {
	if s == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var t pageToken
	if err != nil || json.Unmarshal(b, &t) != nil || t.After == "" {
		return "", errs.InvalidField("page_token", "malformed page token; pass next_page_token from a previous response")
	}
	if t.State != string(state) {
		return "", errs.InvalidField("page_token", "page token was issued for a different state filter")
	}
	return t.After, nil
}

// fromProtoAppendCondition reads an append's optional condition (if_no_prompt_after_seq, state_change).
func fromProtoAppendCondition(req *memoryv1.AppendMemoriesRequest) (memory.AppendCondition, error) {
	var c memory.AppendCondition
	c.IfNoPromptAfterSeq = req.IfNoPromptAfterSeq
	if sc := req.GetStateChange(); sc != nil {
		state, err := fromProtoState("state_change.state", sc.GetState())
		if err != nil {
			return c, err
		}
		if state == memory.StateAny {
			return c, errs.InvalidField("state_change.state", "required")
		}
		expected, err := fromProtoState("state_change.expected_state", sc.GetExpectedState())
		if err != nil {
			return c, err
		}
		c.State = &memory.StateChange{State: state, Reason: sc.GetReason(), EncouragementCount: sc.EncouragementCount, Expected: expected}
	}
	return c, nil // memory.Service validates the condition
}
