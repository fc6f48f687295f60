package mysis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// fakeStore is the Store port over the shared in-memory memory service (libs/testsupport/memfake, which passes the same
// contract suite as the real service, libs/testsupport/memorycontract), called in process: seq, turns, idempotency keys,
// conditional appends and compare-and-set states are the shared fake's. This package cannot use the runner's real
// adapter (memoryclient imports mysis), so fakeStore converts the way memoryclient does — errors round-trip through
// the gRPC status mapping (libs/server ToStatus/FromStatus) — and maps the tests' mysis ids ("m-1") to the service's
// UUIDs. What the tests inject and count lives here, around the fake: an outage, the counters, a hook before each
// append.
type fakeStore struct {
	mem *memfake.Fake

	mu    sync.Mutex
	ids   map[string]string // test id → service id
	names map[string]string // service id → test id
	down  bool              // every call fails Unavailable
	// counts is every encouragement count written, in order.
	counts []int
	// states is every state written (SetState or a conditional append), in order.
	states []StateChange
	// condAppends counts conditional appends (AppendIf with a condition).
	condAppends int
	// reads counts Recent calls, stateCalls SetState calls.
	reads, stateCalls int
	// beforeAppend, when set, is called with each batch before it is appended.
	beforeAppend func([]NewMemory)
	// gets counts GetMysis calls (the composer's own read of the record is not one).
	gets int
}

func newFakeStore() *fakeStore {
	return &fakeStore{mem: memfake.New(nil), ids: map[string]string{}, names: map[string]string{}}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// wire is what a client of the real service gets for err: the status the service sends, back as a libs/errs error.
func wire(err error) error {
	if err == nil {
		return nil
	}
	return server.FromStatus(server.ToStatus(context.Background(), quietLog, err))
}

// add creates m through the memory API (with its state, reason and encouragement count).
func (s *fakeStore) add(m Mysis) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Provider == "" {
		m.Provider = "fake"
	}
	if m.SystemPrompt == "" {
		m.SystemPrompt = "You play SpaceMolt."
	}
	name := m.Name
	if name == "" {
		name = m.ID
	}
	ctx := context.Background()
	resp, err := s.mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: name, Provider: m.Provider, Model: m.Model,
		Temperature: m.Temperature, SystemPrompt: m.SystemPrompt})
	if err != nil {
		panic(fmt.Sprintf("fakeStore.add(%s): %v", m.ID, err))
	}
	id := resp.GetMysis().GetId()
	s.ids[m.ID], s.names[id] = id, m.ID
	if m.State == "" {
		m.State = StateIdle
	}
	n := int32(m.EncouragementCount)
	if _, err := s.mem.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: id, State: protoState(m.State),
		Reason: m.StateReason, EncouragementCount: &n}); err != nil {
		panic(fmt.Sprintf("fakeStore.add(%s): %v", m.ID, err))
	}
}

// idLocked is the service id of a test id; the caller holds s.mu.
func (s *fakeStore) idLocked(id string) (string, error) {
	if s.down {
		return "", errs.Unavailablef(nil, "memory down")
	}
	sid, ok := s.ids[id]
	if !ok {
		return "", errs.NotFoundf("mysis %s not found", id)
	}
	return sid, nil
}

// get is the test's own look at a mysis: not counted as a GetMysis of the code under test.
func (s *fakeStore) get(id string) Mysis {
	m, err := s.lookup(context.Background(), id)
	if err != nil {
		panic(fmt.Sprintf("fakeStore.get(%s): %v", id, err))
	}
	return m
}

// setEndpoint configures a mysis's SpaceMolt endpoint through the memory API, as ConfigureMysis does.
func (s *fakeStore) setEndpoint(id, endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.mem.UpdateMysisConfig(context.Background(), &memoryv1.UpdateMysisConfigRequest{MysisId: s.ids[id], SpacemoltEndpoint: &endpoint}); err != nil {
		panic(fmt.Sprintf("fakeStore.setEndpoint(%s): %v", id, err))
	}
}

func (s *fakeStore) setDown(v bool) {
	s.mu.Lock()
	s.down = v
	s.mu.Unlock()
}

// all is every memory of a mysis, oldest first.
func (s *fakeStore) all(id string) []Memory {
	s.mu.Lock()
	sid := s.ids[id]
	s.mu.Unlock()
	var out []Memory
	for _, m := range s.mem.Memories(sid) {
		out = append(out, fromProtoMemory(m))
	}
	return out
}

func (s *fakeStore) GetMysis(ctx context.Context, id string) (Mysis, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.lookup(ctx, id)
}

// lookup is GetMysis without counting: the composer reads the record with its window.
func (s *fakeStore) lookup(ctx context.Context, id string) (Mysis, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.idLocked(id)
	if err != nil {
		return Mysis{}, err
	}
	resp, err := s.mem.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: sid})
	if err != nil {
		return Mysis{}, wire(err)
	}
	return s.fromProtoMysisLocked(resp.GetMysis()), nil
}

func (s *fakeStore) SetState(ctx context.Context, id string, ch StateChange) (Mysis, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.idLocked(id)
	if err != nil {
		return Mysis{}, err
	}
	s.stateCalls++
	req := &memoryv1.SetMysisStateRequest{MysisId: sid, State: protoState(ch.To), Reason: ch.Reason, ExpectedState: protoState(ch.Expected)}
	if ch.Count != nil {
		n := int32(*ch.Count)
		req.EncouragementCount = &n
	}
	resp, err := s.mem.SetMysisState(ctx, req)
	if err != nil {
		return Mysis{}, wire(err)
	}
	s.states = append(s.states, ch)
	if ch.Count != nil {
		s.counts = append(s.counts, *ch.Count)
	}
	return s.fromProtoMysisLocked(resp.GetMysis()), nil
}

func (s *fakeStore) Append(ctx context.Context, id string, ms []NewMemory) ([]Memory, error) {
	return s.AppendIf(ctx, id, ms, AppendCondition{})
}

// AppendIf is one AppendMemories carrying the condition, decided by the memory service under its lock.
// beforeAppend, when set, runs first (outside the lock): a test lands a commander message exactly there.
func (s *fakeStore) AppendIf(ctx context.Context, id string, ms []NewMemory, c AppendCondition) ([]Memory, error) {
	if f := s.beforeAppend; f != nil {
		f(ms)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.IfNoPromptAfter != nil || c.State != nil {
		s.condAppends++
	}
	sid, err := s.idLocked(id)
	if err != nil {
		return nil, err
	}
	req := &memoryv1.AppendMemoriesRequest{MysisId: sid, IfNoPromptAfterSeq: c.IfNoPromptAfter}
	for _, m := range ms {
		req.Memories = append(req.Memories, toProtoNewMemory(m))
	}
	if ch := c.State; ch != nil {
		req.StateChange = &memoryv1.AppendStateChange{State: protoState(ch.To), Reason: ch.Reason, ExpectedState: protoState(ch.Expected)}
		if ch.Count != nil {
			n := int32(*ch.Count)
			req.StateChange.EncouragementCount = &n
		}
	}
	// A full retry (every key already stored) changes no state: its count is not written again.
	stored := map[string]bool{}
	for _, m := range s.mem.Memories(sid) {
		stored[m.GetIdempotencyKey()] = true
	}
	retry := true
	for _, m := range ms {
		retry = retry && m.IdempotencyKey != "" && stored[m.IdempotencyKey]
	}
	resp, err := s.mem.AppendMemories(ctx, req)
	if err != nil {
		err = wire(err)
		if errs.ReasonOf(err) == "PROMPT_ARRIVED" {
			return nil, fmt.Errorf("%w: %w", ErrPromptArrived, err)
		}
		return nil, err
	}
	if ch := c.State; ch != nil && !retry {
		s.states = append(s.states, *ch)
		if ch.Count != nil {
			s.counts = append(s.counts, *ch.Count)
		}
	}
	out := make([]Memory, len(resp.GetMemories()))
	for i, m := range resp.GetMemories() {
		out[i] = fromProtoMemory(m)
	}
	return out, nil
}

// RecordCalls is the CallLog port over the shared fake's RecordLlmCalls (converted as memorypb.ToProtoLlmCall does):
// a discarded call marks the mysis's reply_discarded there.
func (s *fakeStore) RecordCalls(ctx context.Context, id string, calls []LlmCall) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.idLocked(id)
	if err != nil {
		return err
	}
	req := &memoryv1.RecordLlmCallsRequest{MysisId: sid}
	for _, c := range calls {
		req.Calls = append(req.Calls, toProtoLlmCall(&c))
	}
	_, err = s.mem.RecordLlmCalls(ctx, req)
	return wire(err)
}

func (s *fakeStore) Recent(ctx context.Context, id string, limit int) ([]Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	sid, err := s.idLocked(id)
	if err != nil {
		return nil, err
	}
	resp, err := s.mem.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: sid, Limit: int32(limit)})
	if err != nil {
		return nil, wire(err)
	}
	out := make([]Memory, len(resp.GetMemories()))
	for i, m := range resp.GetMemories() {
		out[i] = fromProtoMemory(m)
	}
	return out, nil
}

// stateLog returns every state written so far, in order.
func (s *fakeStore) stateLog() []StateChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StateChange(nil), s.states...)
}

func (s *fakeStore) counters() (reads, stateCalls, condAppends int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.stateCalls, s.condAppends
}

// delete makes the mysis unknown, as DeleteMysis does.
func (s *fakeStore) delete(id string) {
	s.mu.Lock()
	delete(s.names, s.ids[id])
	delete(s.ids, id)
	s.mu.Unlock()
}

// The conversions of the runner's memoryclient.

func (s *fakeStore) fromProtoMysisLocked(m *memoryv1.Mysis) Mysis {
	return Mysis{
		ID: s.names[m.GetId()], Name: m.GetName(), Provider: m.GetProvider(), Model: m.GetModel(), Temperature: m.GetTemperature(),
		SystemPrompt: m.GetSystemPrompt(), State: fromProtoState(m.GetState()), StateReason: m.GetStateReason(),
		EncouragementCount: int(m.GetEncouragementCount()), CurrentTurn: m.GetCurrentTurn(), LastSeq: m.GetLastSeq(),
		AccountUsername: m.GetAccountUsername(), ReplyDiscarded: m.GetReplyDiscarded(), SpaceMoltEndpoint: m.GetSpacemoltEndpoint(),
	}
}

func fromProtoMemory(m *memoryv1.Memory) Memory {
	return Memory{
		ID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(), Role: chatpb.FromProtoRole(m.GetRole()), Source: fromProtoSource(m.GetSource()),
		SenderID: m.GetSenderId(), Content: m.GetContent(), Reasoning: m.GetReasoning(), ToolCalls: chatpb.FromProtoToolCalls(m.GetToolCalls()),
		ToolCallID: m.GetToolCallId(), ToolName: m.GetToolName(), IdempotencyKey: m.GetIdempotencyKey(), CallArguments: m.GetCallArgumentsJson(),
	}
}

// toProtoLlmCall is memorypb.ToProtoLlmCall (which imports this package, so the test cannot use it).
func toProtoLlmCall(c *LlmCall) *memoryv1.LlmCall {
	out := &memoryv1.LlmCall{
		CallId: c.CallID, Provider: c.Provider, Model: c.Model, PromptTokens: c.PromptTokens,
		CachedPromptTokens: c.CachedPromptTokens, CompletionTokens: c.CompletionTokens, ReasoningTokens: c.ReasoningTokens,
		ComposedTokens: c.ComposedTokens, LatencyMs: c.Latency.Milliseconds(), Retries: int32(c.Retries), Error: c.Error,
		CostNanos: c.CostNanos, Discarded: c.Discarded,
	}
	if !c.StartedAt.IsZero() {
		out.StartedAt = timestamppb.New(c.StartedAt)
	}
	return out
}

func toProtoNewMemory(m NewMemory) *memoryv1.NewMemory {
	out := &memoryv1.NewMemory{
		Role: chatpb.ToProtoRole(m.Role), Source: protoSources[m.Source], SenderId: m.SenderID, Content: m.Content,
		Reasoning: m.Reasoning, ToolCallId: m.ToolCallID, ToolName: m.ToolName, IdempotencyKey: m.IdempotencyKey,
		CallArgumentsJson: m.CallArguments,
	}
	if m.LlmCall != nil {
		out.LlmCall = toProtoLlmCall(m.LlmCall) // validated by the fake as the real service does (libs/memoryrules)
	}
	for _, c := range m.ToolCalls {
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, &memoryv1.ToolCall{Id: c.ID, Name: c.Name, ArgumentsJson: args})
	}
	return out
}

var protoSources = map[Source]memoryv1.Source{
	SourceDirect: memoryv1.Source_SOURCE_DIRECT, SourceBroadcast: memoryv1.Source_SOURCE_BROADCAST,
	SourceNudge: memoryv1.Source_SOURCE_NUDGE, SourceLLM: memoryv1.Source_SOURCE_LLM,
	SourceTool: memoryv1.Source_SOURCE_TOOL, SourceSystem: memoryv1.Source_SOURCE_SYSTEM,
}

func fromProtoSource(s memoryv1.Source) Source {
	for k, v := range protoSources {
		if v == s {
			return k
		}
	}
	return Source(fmt.Sprintf("unknown(%d)", s))
}

var protoStates = map[State]memoryv1.MysisState{
	StateIdle: memoryv1.MysisState_MYSIS_STATE_IDLE, StateRunning: memoryv1.MysisState_MYSIS_STATE_RUNNING,
	StateStopped: memoryv1.MysisState_MYSIS_STATE_STOPPED, StateErrored: memoryv1.MysisState_MYSIS_STATE_ERRORED,
}

func protoState(s State) memoryv1.MysisState { return protoStates[s] } // "" is UNSPECIFIED

func fromProtoState(s memoryv1.MysisState) State {
	for k, v := range protoStates {
		if v == s {
			return k
		}
	}
	return State(fmt.Sprintf("unknown(%d)", s))
}

// fakeComposer follows the composer's contract for the encouragement counter: an autonomous turn gets a nudge
// (INCREMENT) until three went unanswered (IDLE); a turn opened by a commander message gets RESET; mid-turn NONE.
// Its messages are the whole stored history, so the tests also prove the loop writes a valid conversation.
type fakeComposer struct {
	store *fakeStore
	mu    sync.Mutex
	calls []bool       // begin_autonomous_turn per call
	tools [][]llm.Tool // tools per call
	// appends are the rows each call carried (ComposeRequest.Append), previous the compaction each passed back.
	appends  [][]NewMemory
	previous []Compaction
	// before, when set, runs at the start of each call with its index; an error fails the call before anything is
	// stored. after, when set, runs once the rows are stored; an error fails the call (a lost response).
	before, after func(n int) error
	// noRelay makes it behave like a composer from before the relay: Append is ignored, nothing comes back.
	noRelay bool
}

func (c *fakeComposer) Compose(ctx context.Context, id string, req ComposeRequest) (Composition, error) {
	autonomous := req.BeginAutonomousTurn
	c.mu.Lock()
	n := len(c.calls)
	c.calls = append(c.calls, autonomous)
	c.tools = append(c.tools, req.Tools)
	c.appends = append(c.appends, req.Append)
	c.previous = append(c.previous, req.Previous)
	before, after := c.before, c.after
	if c.noRelay {
		req.Append, req.SpendAt = nil, time.Time{}
	}
	c.mu.Unlock()
	if before != nil {
		if err := before(n); err != nil {
			return Composition{}, err
		}
	}
	// As the memory service does: the relayed rows first, then the window and the mysis record.
	var appended []Memory
	if len(req.Append) > 0 {
		var err error
		if appended, err = c.store.Append(ctx, id, req.Append); err != nil {
			return Composition{}, err
		}
	}
	if after != nil {
		if err := after(n); err != nil {
			return Composition{}, err
		}
	}
	m, err := c.store.lookup(ctx, id)
	if err != nil {
		return Composition{}, err
	}
	ms := c.store.all(id)
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: m.SystemPrompt}}
	var maxSeq int64
	for _, mem := range ms {
		maxSeq = mem.Seq
		if prev := &msgs[len(msgs)-1]; prev.Role == chat.RoleUser && mem.Role == chat.RoleUser {
			prev.Content += "\n\n" + mem.Content // adjacent prompts are joined, as the composer does
			continue
		}
		msg := chat.Message{Role: mem.Role, Content: mem.Content, ToolCalls: mem.ToolCalls, ToolCallID: mem.ToolCallID, Name: mem.ToolName}
		if mem.Role == chat.RoleTool {
			// As the composer does: a result stored after newer prompts is moved back next to its call.
			msgs = placeResult(msgs, msg)
			continue
		}
		msgs = append(msgs, msg)
	}
	comp := Composition{Messages: msgs, MaxSeq: maxSeq, Action: ActionNone, NextCount: m.EncouragementCount, Mysis: &m, Appended: appended,
		Compaction: Compaction{Boundary: int64(n+1) * 4, Seq: int64(n+1)*4 + 1}} // a new one on every call

	if !req.SpendAt.IsZero() {
		comp.Spend = &SpendCounts{At: req.SpendAt}
	}
	if autonomous {
		if m.EncouragementCount >= 3 {
			comp.Action = ActionIdle
			return comp, nil
		}
		comp.Action, comp.NextCount = ActionIncrement, m.EncouragementCount+1
		comp.Nudge = fmt.Sprintf("Continue your mission (nudge %d).", comp.NextCount)
		comp.Messages = append(comp.Messages, chat.Message{Role: chat.RoleUser, Content: comp.Nudge})
		return comp, nil
	}
	// A turn opened by a commander message that has no assistant reply yet: RESET.
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == chat.RoleAssistant {
			break
		}
		if ms[i].Role == chat.RoleUser {
			if ms[i].Source == SourceDirect || ms[i].Source == SourceBroadcast {
				comp.Action, comp.NextCount = ActionReset, 0
			}
			break
		}
	}
	return comp, nil
}

// placeResult inserts a tool result after its call's assistant message and the results already following it.
func placeResult(msgs []chat.Message, res chat.Message) []chat.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != chat.RoleAssistant || !slices.ContainsFunc(msgs[i].ToolCalls, func(c chat.ToolCall) bool { return c.ID == res.ToolCallID }) {
			continue
		}
		j := i + 1
		for j < len(msgs) && msgs[j].Role == chat.RoleTool {
			j++
		}
		return slices.Insert(msgs, j, res)
	}
	return append(msgs, res)
}

func (c *fakeComposer) autonomousCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.calls {
		if a {
			n++
		}
	}
	return n
}

// fakeProvider answers with a script and validates every request it receives.
type fakeProvider struct {
	t      *testing.T
	mu     sync.Mutex
	reqs   []llm.Request
	times  []time.Time
	script func(n int, req llm.Request) (llm.Response, error)
	gate   chan struct{} // when set, each call waits for a receive
}

func (p *fakeProvider) Name() string { return "fake" }

func (p *fakeProvider) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := chatvalid.Strict.Validate(req.Messages); err != nil {
		p.t.Errorf("provider got an invalid request: %v", err)
	}
	if len(req.Tools) == 0 {
		p.t.Errorf("provider called without tools (LESSONS 8)")
	}
	p.mu.Lock()
	n := len(p.reqs)
	p.reqs = append(p.reqs, req)
	p.times = append(p.times, time.Now())
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}
	if p.script == nil {
		return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, Content: "ok"}}, nil
	}
	return p.script(n, req)
}

func (p *fakeProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

func (p *fakeProvider) requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.reqs...)
}

type fakeProviders struct{ p llm.Provider }

func (f fakeProviders) Provider(name string) (llm.Provider, error) {
	if name != "fake" {
		return nil, errs.InvalidField("provider", "unknown provider %q", name)
	}
	return f.p, nil
}

// fakeTools records calls; prepareErr makes Prepare fail until cleared; failOnce makes the next call of a tool fail
// in transport (the game unreachable); onCall runs during each call, before it returns.
type fakeTools struct {
	mu         sync.Mutex
	calls      []chat.ToolCall
	prepareErr error
	prepares   int
	closes     int
	failOnce   map[string]error
	onCall     func(chat.ToolCall)
	// results, when set, answer calls of these tools instead of the built-in results.
	results map[string]ToolResult
	// v2 adds MCP v2's action-dispatched tools to the list, annotated as the tool router annotates them.
	v2 bool
	// opened is the SpaceMolt endpoint of each session opened.
	opened []string
}

func (f *fakeTools) Open(m Mysis) ToolSession {
	f.mu.Lock()
	f.opened = append(f.opened, m.SpaceMoltEndpoint)
	f.mu.Unlock()
	return &fakeSession{f: f}
}

// openedFor is the SpaceMolt endpoint of every session opened, in order.
func (f *fakeTools) openedFor() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.opened...)
}

func (f *fakeTools) setPrepareErr(err error) {
	f.mu.Lock()
	f.prepareErr = err
	f.mu.Unlock()
}

func (f *fakeTools) called() []chat.ToolCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chat.ToolCall(nil), f.calls...)
}

type fakeSession struct{ f *fakeTools }

func (s *fakeSession) Prepare(context.Context) ([]llm.Tool, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.prepares++
	if s.f.prepareErr != nil {
		return nil, s.f.prepareErr
	}
	list := []llm.Tool{
		{Name: "get_status", Parameters: []byte(`{"type":"object"}`), ReadOnly: true},
		{Name: "mine", Parameters: []byte(`{"type":"object"}`)},
		{Name: "sell", Parameters: []byte(`{"type":"object"}`)},
	}
	if s.f.v2 {
		list = append(list,
			llm.Tool{Name: "spacemolt", Parameters: []byte(`{"type":"object","properties":{"action":{"type":"string"}}}`), ReadOnlyActions: []string{"get_status", "help"}},
			llm.Tool{Name: "spacemolt_catalog", Parameters: []byte(`{"type":"object"}`), ReadOnly: true})
	}
	return list, nil
}

func (s *fakeSession) Call(_ context.Context, c chat.ToolCall) (ToolResult, error) {
	s.f.mu.Lock()
	s.f.calls = append(s.f.calls, c)
	err := s.f.failOnce[c.Name]
	delete(s.f.failOnce, c.Name)
	onCall := s.f.onCall
	res, scripted := s.f.results[c.Name]
	s.f.mu.Unlock()
	if scripted {
		return res, nil
	}
	if onCall != nil {
		onCall(c)
	}
	if err != nil {
		return ToolResult{}, err
	}
	if c.Name == "get_status" {
		credits := int64(1234)
		return ToolResult{Content: `{"player":{"credits":1234}}`, Credits: &credits}, nil
	}
	return ToolResult{Content: fmt.Sprintf(`{"ok":true,"tool":%q}`, c.Name)}, nil
}

func (s *fakeSession) Close() {
	s.f.mu.Lock()
	s.f.closes++
	s.f.mu.Unlock()
}

type fakeEvents struct {
	mu  sync.Mutex
	evs []Event
}

func (f *fakeEvents) Publish(_ context.Context, ev Event) {
	f.mu.Lock()
	f.evs = append(f.evs, ev)
	f.mu.Unlock()
}

func (f *fakeEvents) kinds(k EventKind) []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Event
	for _, e := range f.evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// harness wires an actor to fakes and runs it.
type harness struct {
	t        *testing.T
	store    *fakeStore
	composer *fakeComposer
	provider *fakeProvider
	tools    *fakeTools
	events   *fakeEvents
	actor    *Actor
	done     chan error
	cancel   context.CancelFunc
}

const testID = "m-1"

func newHarness(t *testing.T, m Mysis, cfg Config) *harness {
	t.Helper()
	st := newFakeStore()
	if m.ID == "" {
		m.ID = testID
	}
	st.add(m)
	h := &harness{t: t, store: st, composer: &fakeComposer{store: st}, provider: &fakeProvider{t: t}, tools: &fakeTools{}, events: &fakeEvents{}}
	if cfg.TurnPause == 0 {
		cfg.TurnPause = time.Millisecond
	}
	if cfg.BackoffMin == 0 {
		cfg.BackoffMin, cfg.BackoffMax = 5*time.Millisecond, 40*time.Millisecond
	}
	h.actor = New(m.ID, Deps{Store: st, Composer: h.composer, Tools: h.tools, Providers: fakeProviders{h.provider}, Events: h.events, Calls: st}, cfg)
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.actor.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		h.t.Error("actor did not stop")
	}
	h.cancel = nil
}

// eventually waits until cond holds. Every harness test runs in a synctest bubble: synctest.Wait returns once
// the actor and the fakes are all blocked (on a wake, a gate, a pause or a backoff timer), so cond is checked only
// when nothing is in flight; while it does not hold, the fake clock moves on, which fires the actor's next timer.
// The limit is fake time, so it costs nothing and the outcome does not depend on the machine's speed.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		synctest.Wait()
		if cond() {
			return
		}
		if !time.Now().Before(deadline) {
			h.t.Fatalf("still waiting for %s after %v of fake time", what, 10*time.Second)
		}
		advance(time.Millisecond)
	}
}

// advance moves the bubble's fake clock on by d: it returns once every other goroutine of the bubble is blocked
// and every timer due within d has fired, then waits for what those timers started to settle. A test that asserts
// "nothing happened" advances past every deadline that could make something happen, then looks.
func advance(d time.Duration) {
	time.Sleep(d) // fake time: inside a synctest bubble this only advances the clock once all else is blocked
	synctest.Wait()
}

func (h *harness) state() State { return h.store.get(testID).State }
