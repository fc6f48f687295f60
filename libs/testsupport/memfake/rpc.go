package memfake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/callkey"
	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// The fake's own bounds; every request rule and limit is libs/memoryrules', the package the real service validates
// with.
const (
	callLookback = rules.CallLookback
)

func injected(fault Fault) error { return status.Error(fault.Code, "injected failure") }

func notFound(id string) error { return errs.NotFoundf("mysis %s not found", id) }

// stateOf is the rules' state of a wire state (unknown numbers are no valid state).
func stateOf(s memoryv1.MysisState) rules.State {
	switch s {
	case memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED:
		return rules.StateAny
	case memoryv1.MysisState_MYSIS_STATE_IDLE:
		return rules.StateIdle
	case memoryv1.MysisState_MYSIS_STATE_RUNNING:
		return rules.StateRunning
	case memoryv1.MysisState_MYSIS_STATE_STOPPED:
		return rules.StateStopped
	case memoryv1.MysisState_MYSIS_STATE_ERRORED:
		return rules.StateErrored
	}
	return rules.State("unknown")
}

// validateStateChange checks a state change as the real service does (rules.ValidateStateChange).
func validateStateChange(state, expected memoryv1.MysisState, enc *int32, reason string) error {
	return rules.ValidateStateChange(rules.StateChange{State: stateOf(state), Expected: stateOf(expected), EncouragementCount: enc, Reason: reason})
}

// llmCallOf is the rules' value of a wire LLM call.
func llmCallOf(c *memoryv1.LlmCall) rules.LlmCall {
	out := rules.LlmCall{
		CallID: c.GetCallId(), Provider: c.GetProvider(), Model: c.GetModel(), PromptTokens: c.GetPromptTokens(),
		CachedPromptTokens: c.GetCachedPromptTokens(), CompletionTokens: c.GetCompletionTokens(),
		ReasoningTokens: c.GetReasoningTokens(), ComposedTokens: c.GetComposedTokens(), LatencyMS: c.GetLatencyMs(),
		Retries: c.GetRetries(), Error: c.GetError(), CostNanos: c.GetCostNanos(), Discarded: c.GetDiscarded(),
	}
	if c.StartedAt != nil {
		out.StartedAt = c.GetStartedAt().AsTime()
	}
	return out
}

// newMemoryOf is the rules' value of a wire memory to append (the enum numbers are the stored ones).
func newMemoryOf(m *memoryv1.NewMemory) rules.NewMemory {
	out := rules.NewMemory{
		Role: rules.Role(m.GetRole()), Source: rules.Source(m.GetSource()), SenderID: m.GetSenderId(), Content: m.GetContent(),
		Reasoning: m.GetReasoning(), ToolCallID: m.GetToolCallId(), ToolName: m.GetToolName(),
		IdempotencyKey: m.GetIdempotencyKey(), CallArguments: m.GetCallArgumentsJson(),
	}
	if r := m.GetRole(); int32(r) != int32(out.Role) {
		out.Role = rules.RoleUnspecified // out of int16's range: no role
	}
	if s := m.GetSource(); int32(s) != int32(out.Source) {
		out.Source = rules.SourceUnspecified
	}
	for _, tc := range m.GetToolCalls() {
		out.ToolCalls = append(out.ToolCalls, rules.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArgumentsJson()})
	}
	if m.GetLlmCall() != nil {
		c := llmCallOf(m.GetLlmCall())
		out.LlmCall = &c
	}
	return out
}

// storedOf is what a stored memory holds of what its appender chose, for rules.PayloadMismatch.
func storedOf(m *memoryv1.Memory) rules.NewMemory {
	out := rules.NewMemory{
		Role: rules.Role(m.GetRole()), Source: rules.Source(m.GetSource()), SenderID: m.GetSenderId(), Content: m.GetContent(),
		Reasoning: m.GetReasoning(), ToolCallID: m.GetToolCallId(), ToolName: m.GetToolName(), CallArguments: m.GetCallArgumentsJson(),
	}
	for _, tc := range m.GetToolCalls() {
		out.ToolCalls = append(out.ToolCalls, rules.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArgumentsJson()})
	}
	return out
}

// validateNew checks a batch to append as the real service does (rules.ValidateNewMemories).
func validateNew(ms []*memoryv1.NewMemory) error {
	if len(ms) > rules.MaxBatch { // before converting, like the real service's transport
		return rules.ValidateNewMemories(make([]rules.NewMemory, len(ms)))
	}
	out := make([]rules.NewMemory, len(ms))
	for i, m := range ms {
		out[i] = newMemoryOf(m)
	}
	return rules.ValidateNewMemories(out)
}

// CreateMysis implements MemoryService.CreateMysis.
func (f *Fake) CreateMysis(_ context.Context, req *memoryv1.CreateMysisRequest) (*memoryv1.CreateMysisResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("CreateMysis"); ok {
		return nil, injected(fault)
	}
	if err := rules.ValidateNewMysis(rules.NewMysis{Name: req.GetName(), Provider: req.GetProvider(), Model: req.GetModel(),
		Temperature: req.GetTemperature(), SystemPrompt: req.GetSystemPrompt(), SpaceMoltEndpoint: req.GetSpacemoltEndpoint()}); err != nil {
		return nil, err
	}
	if _, ok := f.byName[req.GetName()]; ok {
		return nil, &errs.Error{Kind: errs.Exists, Msg: "a mysis with this name already exists", Reason: errs.ReasonMysisNameTaken}
	}
	now := timestamppb.Now()
	m := &memoryv1.Mysis{
		Id: uuid.NewString(), Name: req.GetName(), Provider: req.GetProvider(), Model: req.GetModel(),
		Temperature: req.GetTemperature(), SystemPrompt: req.GetSystemPrompt(), State: memoryv1.MysisState_MYSIS_STATE_IDLE,
		SpacemoltEndpoint: req.GetSpacemoltEndpoint(), CreatedAt: now, UpdatedAt: now,
	}
	f.myses[m.Id] = m
	f.byName[m.Name] = m.Id
	f.keys[m.Id] = map[string]*memoryv1.Memory{}
	return &memoryv1.CreateMysisResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis)}, nil
}

// mysisLocked returns a mysis by id, validating the id; the caller holds f.mu.
func (f *Fake) mysisLocked(raw string) (*memoryv1.Mysis, error) {
	id, err := rules.ParseID("mysis_id", raw)
	if err != nil {
		return nil, err
	}
	m, ok := f.myses[id]
	if !ok {
		return nil, notFound(id)
	}
	return m, nil
}

// GetMysis implements MemoryService.GetMysis.
func (f *Fake) GetMysis(_ context.Context, req *memoryv1.GetMysisRequest) (*memoryv1.GetMysisResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetMysis"); ok {
		return nil, injected(fault)
	}
	m, err := f.mysisLocked(req.GetMysisId())
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetMysisResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis)}, nil
}

// GetMysisByName implements MemoryService.GetMysisByName.
func (f *Fake) GetMysisByName(_ context.Context, req *memoryv1.GetMysisByNameRequest) (*memoryv1.GetMysisByNameResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetMysisByName"); ok {
		return nil, injected(fault)
	}
	id, ok := f.byName[req.GetName()]
	if !ok {
		return nil, errs.NotFoundf("mysis %q not found", req.GetName())
	}
	return &memoryv1.GetMysisByNameResponse{Mysis: proto.Clone(f.myses[id]).(*memoryv1.Mysis)}, nil
}

// ListMyses implements MemoryService.ListMyses (ordered by name; the page token is an offset).
func (f *Fake) ListMyses(_ context.Context, req *memoryv1.ListMysesRequest) (*memoryv1.ListMysesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("ListMyses"); ok {
		return nil, injected(fault)
	}
	size, err := rules.Limit("page_size", int(req.GetPageSize()), rules.DefaultPageSize, rules.MaxPageSize)
	if err != nil {
		return nil, err
	}
	if st := stateOf(req.GetState()); st != rules.StateAny && !st.Valid() {
		return nil, errs.InvalidField("state", "unknown state")
	}
	offset := 0
	if t := req.GetPageToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return nil, errs.InvalidField("page_token", "malformed")
		}
		offset = n
	}
	names := make([]string, 0, len(f.byName))
	for name, id := range f.byName {
		if st := req.GetState(); st == memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED || f.myses[id].GetState() == st {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	resp := &memoryv1.ListMysesResponse{}
	for i := offset; i < len(names) && i < offset+size; i++ {
		resp.Myses = append(resp.Myses, proto.Clone(f.myses[f.byName[names[i]]]).(*memoryv1.Mysis))
	}
	if offset+size < len(names) {
		resp.NextPageToken = strconv.Itoa(offset + size)
	}
	return resp, nil
}

// SetMysisState implements MemoryService.SetMysisState: a compare-and-set when expected_state is given.
func (f *Fake) SetMysisState(_ context.Context, req *memoryv1.SetMysisStateRequest) (*memoryv1.SetMysisStateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("SetMysisState"); ok {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	if err := validateStateChange(req.GetState(), req.GetExpectedState(), req.EncouragementCount, req.GetReason()); err != nil {
		return nil, err
	}
	m, ok := f.myses[id]
	if !ok {
		return nil, notFound(id)
	}
	prev := m.GetState()
	if e := req.GetExpectedState(); e != memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED && e != prev {
		return nil, &errs.Error{Kind: errs.Conflict, Reason: errs.ReasonStateChanged,
			Msg: fmt.Sprintf("mysis %s is %s, not %s: state unchanged", id, stateName(prev), stateName(e))}
	}
	f.setStateLocked(m, req.GetState(), req.GetReason(), req.EncouragementCount)
	return &memoryv1.SetMysisStateResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis), PreviousState: prev}, nil
}

func stateName(s memoryv1.MysisState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "MYSIS_STATE_"))
}

// setStateLocked applies a state change; the caller holds f.mu.
func (f *Fake) setStateLocked(m *memoryv1.Mysis, state memoryv1.MysisState, reason string, enc *int32) {
	m.State, m.StateReason, m.UpdatedAt = state, reason, timestamppb.Now()
	if enc != nil {
		m.EncouragementCount = *enc
	}
	f.changedLocked()
}

// opensTurn reports whether a memory starts a new turn: a user prompt from the commander, the swarm or a nudge.
func opensTurn(r memoryv1.Role, s memoryv1.Source) bool {
	return r == memoryv1.Role_ROLE_USER && (s == memoryv1.Source_SOURCE_DIRECT || s == memoryv1.Source_SOURCE_BROADCAST || s == memoryv1.Source_SOURCE_NUDGE)
}

// appendLocked writes one row unless its idempotency key exists; calls are the tool calls a tool result's arguments
// come from when it has none. The caller holds f.mu.
func (f *Fake) appendLocked(mysisID string, nm *memoryv1.NewMemory, broadcastID string, calls []*memoryv1.ToolCall) (*memoryv1.Memory, bool) {
	if k := nm.GetIdempotencyKey(); k != "" {
		if m, ok := f.keys[mysisID][k]; ok {
			return m, false
		}
	}
	y := f.myses[mysisID]
	y.LastSeq++
	if opensTurn(nm.GetRole(), nm.GetSource()) {
		y.CurrentTurn++
	}
	if nm.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(nm.GetToolCalls()) == 0 {
		y.ReplyDiscarded = false // a final answer ends the turn's discard allowance
	}
	y.UpdatedAt = timestamppb.Now()
	f.nextID++
	m := &memoryv1.Memory{
		Id: f.nextID, MysisId: mysisID, Seq: y.LastSeq, Turn: y.CurrentTurn, Role: nm.GetRole(), Source: nm.GetSource(),
		SenderId: nm.GetSenderId(), Content: nm.GetContent(), Reasoning: nm.GetReasoning(), ToolCallId: nm.GetToolCallId(),
		ToolName: nm.GetToolName(), IdempotencyKey: nm.GetIdempotencyKey(), BroadcastId: broadcastID, CreatedAt: timestamppb.Now(),
	}
	for _, tc := range nm.GetToolCalls() {
		m.ToolCalls = append(m.ToolCalls, proto.Clone(tc).(*memoryv1.ToolCall))
	}
	if m.Role == memoryv1.Role_ROLE_TOOL {
		args := nm.GetCallArgumentsJson()
		if args == "" {
			for _, c := range calls {
				if c.GetId() == m.ToolCallId {
					args = c.GetArgumentsJson()
					break
				}
			}
		}
		m.CallArgumentsJson, m.CallKey = args, callkey.Of(m.ToolName, args)
	}
	f.memories[mysisID] = append(f.memories[mysisID], m)
	if c := nm.GetLlmCall(); c != nil {
		f.recordCallLocked(mysisID, llmCallOf(c)) // stored with its reply, counted like a recorded call
	}
	f.changedLocked()
	if k := nm.GetIdempotencyKey(); k != "" {
		f.keys[mysisID][k] = m
	}
	return m, true
}

// storedCallsLocked is the tool calls of the newest assistant memory with calls among the mysis's last
// callLookback rows: where a tool result appended without its arguments finds them. The caller holds f.mu.
func (f *Fake) storedCallsLocked(mysisID string) []*memoryv1.ToolCall {
	ms := f.memories[mysisID]
	for i := len(ms) - 1; i >= 0 && i >= len(ms)-callLookback; i-- {
		if ms[i].GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(ms[i].GetToolCalls()) > 0 {
			return ms[i].GetToolCalls()
		}
	}
	return nil
}

// AppendMemories implements MemoryService.AppendMemories: idempotent per key (the same key with other content is
// refused, rules.PayloadMismatch), optionally conditional on no prompt
// having arrived and on the mysis's state (with a state change in the same step).
func (f *Fake) AppendMemories(_ context.Context, req *memoryv1.AppendMemoriesRequest) (*memoryv1.AppendMemoriesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault, faulty := f.enter("AppendMemories")
	if faulty && !fault.AfterCommit {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	if err := validateNew(req.GetMemories()); err != nil {
		return nil, err
	}
	if sc := req.GetStateChange(); sc != nil {
		if err := validateStateChange(sc.GetState(), sc.GetExpectedState(), sc.EncouragementCount, sc.GetReason()); err != nil {
			return nil, err
		}
	}
	if req.IfNoPromptAfterSeq != nil && req.GetIfNoPromptAfterSeq() < 0 {
		return nil, errs.InvalidField("if_no_prompt_after_seq", "must not be negative")
	}
	y, ok := f.myses[id]
	if !ok {
		return nil, notFound(id)
	}
	for i, nm := range req.GetMemories() {
		// A key sent again with other content is refused before anything is written, as by the real store.
		if m, ok := f.keys[id][nm.GetIdempotencyKey()]; ok && nm.GetIdempotencyKey() != "" {
			if field := rules.PayloadMismatch(newMemoryOf(nm), storedOf(m)); field != "" {
				return nil, rules.KeyReused(i, nm.GetIdempotencyKey(), field)
			}
		}
	}
	resp := &memoryv1.AppendMemoriesResponse{}
	if f.fullRetryLocked(id, req.GetMemories()) {
		for _, nm := range req.GetMemories() {
			resp.Memories = append(resp.Memories, proto.Clone(f.keys[id][nm.GetIdempotencyKey()]).(*memoryv1.Memory))
		}
		return f.afterCommit(resp, fault, faulty)
	}
	if req.IfNoPromptAfterSeq != nil {
		after := req.GetIfNoPromptAfterSeq()
		ms := f.memories[id]
		for i := len(ms) - 1; i >= 0 && ms[i].GetSeq() > after; i-- {
			if m := ms[i]; m.GetRole() == memoryv1.Role_ROLE_USER &&
				(m.GetSource() == memoryv1.Source_SOURCE_DIRECT || m.GetSource() == memoryv1.Source_SOURCE_BROADCAST) {
				return nil, &errs.Error{Kind: errs.Conflict, Reason: rules.ReasonPromptArrived,
					Msg: fmt.Sprintf("mysis %s: a prompt arrived at seq %d, after seq %d: nothing appended", id, m.GetSeq(), after)}
			}
		}
	}
	if sc := req.GetStateChange(); sc != nil {
		if e := sc.GetExpectedState(); e != memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED && e != y.GetState() {
			return nil, errs.Conflictf("mysis %s is %s, not %s: nothing appended, state unchanged", id, stateName(y.GetState()), stateName(e))
		}
		f.setStateLocked(y, sc.GetState(), sc.GetReason(), sc.EncouragementCount)
	}
	calls := f.storedCallsLocked(id)
	for _, nm := range req.GetMemories() {
		if nm.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(nm.GetToolCalls()) > 0 {
			calls = nm.GetToolCalls()
		}
		m, _ := f.appendLocked(id, nm, "", calls)
		resp.Memories = append(resp.Memories, proto.Clone(m).(*memoryv1.Memory))
	}
	return f.afterCommit(resp, fault, faulty)
}

// fullRetryLocked reports whether every memory of a batch carries an idempotency key already stored.
func (f *Fake) fullRetryLocked(id string, ms []*memoryv1.NewMemory) bool {
	for _, nm := range ms {
		if _, ok := f.keys[id][nm.GetIdempotencyKey()]; nm.GetIdempotencyKey() == "" || !ok {
			return false
		}
	}
	return true
}

func (f *Fake) afterCommit(resp *memoryv1.AppendMemoriesResponse, fault Fault, faulty bool) (*memoryv1.AppendMemoriesResponse, error) {
	if faulty {
		return nil, status.Error(fault.Code, "injected failure after commit")
	}
	return resp, nil
}

// ListRecentMemories implements MemoryService.ListRecentMemories: the newest `limit` memories, oldest first.
func (f *Fake) ListRecentMemories(_ context.Context, req *memoryv1.ListRecentMemoriesRequest) (*memoryv1.ListRecentMemoriesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("ListRecentMemories"); ok {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	n, err := rules.Limit("limit", int(req.GetLimit()), rules.DefaultWindow, rules.MaxWindow)
	if err != nil {
		return nil, err
	}
	if _, ok := f.myses[id]; !ok {
		return nil, notFound(id)
	}
	ms := f.memories[id]
	ms = ms[max(0, len(ms)-n):]
	ms = keepNewestWithin(ms, maxResponseBytes)
	resp := &memoryv1.ListRecentMemoriesResponse{Memories: make([]*memoryv1.Memory, len(ms))}
	for i, m := range ms {
		resp.Memories[i] = proto.Clone(m).(*memoryv1.Memory)
	}
	return resp, nil
}

// RecordBroadcast implements MemoryService.RecordBroadcast: idempotent on the broadcast id (the same id with other
// content is refused) and per mysis.
func (f *Fake) RecordBroadcast(_ context.Context, req *memoryv1.RecordBroadcastRequest) (*memoryv1.RecordBroadcastResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault, faulty := f.enter("RecordBroadcast")
	if faulty && !fault.AfterCommit {
		return nil, injected(fault)
	}
	bid := uuid.NewString()
	if req.GetBroadcastId() != "" {
		var err error
		if bid, err = rules.ParseID("broadcast_id", req.GetBroadcastId()); err != nil {
			return nil, err
		}
	}
	sender, err := rules.ValidateSenderID("sender_id", req.GetSenderId())
	if err != nil {
		return nil, err
	}
	if err := rules.ValidateBroadcastContent(req.GetContent()); err != nil {
		return nil, err
	}
	ids, err := rules.ParseTargets("target_mysis_ids", req.GetTargetMysisIds(), false)
	if err != nil {
		return nil, err
	}
	if b, ok := f.broadcasts[bid]; ok {
		// A retry delivers what was recorded; the same id with other content is refused, as by the real store.
		if field := rules.BroadcastMismatch(sender, req.GetContent(), b.GetSenderId(), b.GetContent()); field != "" {
			return nil, rules.BroadcastKeyReused(bid, field)
		}
	}
	if _, ok := f.myses[sender]; sender != "" && !ok {
		return nil, &errs.Error{Kind: errs.NotFound, Field: "sender_id", Msg: "no mysis has this id"}
	}
	targets := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, ok := f.myses[id]; !ok {
			return nil, notFound(id) // unknown explicit targets: nothing is delivered
		}
		targets = append(targets, id)
	}
	b, ok := f.broadcasts[bid]
	if !ok {
		b = &memoryv1.Broadcast{Id: bid, SenderId: sender, Content: req.GetContent(), CreatedAt: timestamppb.Now()}
		f.broadcasts[bid] = b
		f.bcOrder = append(f.bcOrder, bid)
	}
	if len(req.GetTargetMysisIds()) == 0 {
		for id := range f.myses {
			if id != b.GetSenderId() {
				targets = append(targets, id)
			}
		}
	}
	slices.Sort(targets)
	targets = slices.Compact(targets)
	resp := &memoryv1.RecordBroadcastResponse{Broadcast: proto.Clone(b).(*memoryv1.Broadcast)}
	for _, id := range targets {
		if f.delivered[bid][id] {
			resp.AlreadyDeliveredCount++
			continue
		}
		f.appendLocked(id, &memoryv1.NewMemory{
			Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_BROADCAST, SenderId: b.GetSenderId(), Content: b.GetContent(),
		}, bid, nil)
		if f.delivered[bid] == nil {
			f.delivered[bid] = map[string]bool{}
		}
		f.delivered[bid][id] = true
		resp.DeliveredCount++
	}
	if _, ok := f.recorded[bid]; !ok {
		f.recorded[bid] = time.Now()
	}
	if faulty {
		return nil, status.Error(fault.Code, "injected failure after commit")
	}
	return resp, nil
}

// RecordLlmCalls implements MemoryService.RecordLlmCalls: the calls are validated and stored once per call_id (a
// retried call_id is not counted again), summed into usage and spend (usage.go); a new discarded call sets the
// mysis's reply_discarded, which its next final answer clears.
func (f *Fake) RecordLlmCalls(_ context.Context, req *memoryv1.RecordLlmCallsRequest) (*memoryv1.RecordLlmCallsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, faulty := f.enter("RecordLlmCalls"); faulty {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	calls := req.GetCalls()
	if len(calls) > rules.MaxCallsPerCall { // before converting, like the real service's transport
		return nil, rules.ValidateLlmCalls(make([]rules.LlmCall, len(calls)))
	}
	in := make([]rules.LlmCall, len(calls))
	for i, c := range calls {
		in[i] = llmCallOf(c)
	}
	if err := rules.ValidateLlmCalls(in); err != nil {
		return nil, err
	}
	y, ok := f.myses[id]
	if !ok {
		return nil, notFound(id)
	}
	n := 0
	for _, c := range in {
		if !f.recordCallLocked(id, c) {
			continue
		}
		n++
		if c.Discarded && !y.GetReplyDiscarded() {
			y.ReplyDiscarded, y.UpdatedAt = true, timestamppb.Now()
		}
	}
	f.changedLocked()
	return &memoryv1.RecordLlmCallsResponse{RecordedCount: int32(n)}, nil
}
