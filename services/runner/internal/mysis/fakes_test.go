package mysis

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// fakeStore is an in-memory memory service with the same contract: gapless seq, idempotency keys, turns opened by
// user memories, compare-and-set states.
type fakeStore struct {
	mu       sync.Mutex
	myses    map[string]*Mysis
	memories map[string][]Memory
	nextID   int64
	down     bool  // every call fails Unavailable
	counts   []int // every encouragement count written, in order
	// states is every state written (SetState or a conditional append), in order.
	states  []StateChange
	appends int
	// condAppends counts conditional appends (AppendIf with a condition).
	condAppends int
	// reads counts Recent calls, stateCalls SetState calls.
	reads, stateCalls int
	// beforeAppend, when set, is called with each batch before it is appended.
	beforeAppend func([]NewMemory)
}

func newFakeStore() *fakeStore {
	return &fakeStore{myses: map[string]*Mysis{}, memories: map[string][]Memory{}}
}

func (s *fakeStore) add(m Mysis) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Provider == "" {
		m.Provider = "fake"
	}
	if m.SystemPrompt == "" {
		m.SystemPrompt = "You play SpaceMolt."
	}
	s.myses[m.ID] = &m
}

func (s *fakeStore) get(id string) Mysis {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.myses[id]
}

func (s *fakeStore) setDown(v bool) {
	s.mu.Lock()
	s.down = v
	s.mu.Unlock()
}

func (s *fakeStore) all(id string) []Memory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Memory(nil), s.memories[id]...)
}

func (s *fakeStore) GetMysis(_ context.Context, id string) (Mysis, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return Mysis{}, errs.Unavailablef(nil, "memory down")
	}
	m, ok := s.myses[id]
	if !ok {
		return Mysis{}, errs.NotFoundf("mysis %s", id)
	}
	return *m, nil
}

func (s *fakeStore) SetState(_ context.Context, id string, ch StateChange) (Mysis, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return Mysis{}, errs.Unavailablef(nil, "memory down")
	}
	m, ok := s.myses[id]
	if !ok {
		return Mysis{}, errs.NotFoundf("mysis %s", id)
	}
	s.stateCalls++
	if ch.Expected != "" && m.State != ch.Expected {
		return Mysis{}, errs.Conflictf("state is %s, not %s", m.State, ch.Expected)
	}
	m.State, m.StateReason = ch.To, ch.Reason
	s.states = append(s.states, ch)
	if ch.Count != nil {
		m.EncouragementCount = *ch.Count
		s.counts = append(s.counts, *ch.Count)
	}
	return *m, nil
}

func (s *fakeStore) Append(ctx context.Context, id string, ms []NewMemory) ([]Memory, error) {
	return s.AppendIf(ctx, id, ms, AppendCondition{})
}

// AppendIf decides the condition under the store's lock, as the memory service does in the append's transaction.
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
	if s.down {
		return nil, errs.Unavailablef(nil, "memory down")
	}
	my, ok := s.myses[id]
	if !ok {
		return nil, errs.NotFoundf("mysis %s", id)
	}
	for _, nm := range ms {
		if err := storeRefuses(nm); err != nil {
			return nil, err
		}
	}
	retry := true
	for _, nm := range ms {
		if nm.IdempotencyKey == "" || !slices.ContainsFunc(s.memories[id], func(m Memory) bool { return m.IdempotencyKey == nm.IdempotencyKey }) {
			retry = false
		}
	}
	if !retry && c.IfNoPromptAfter != nil {
		for _, m := range s.memories[id] {
			if m.Seq > *c.IfNoPromptAfter && m.Role == chat.RoleUser && (m.Source == SourceDirect || m.Source == SourceBroadcast) {
				return nil, fmt.Errorf("prompt at seq %d: %w", m.Seq, ErrPromptArrived)
			}
		}
	}
	if !retry && c.State != nil {
		if c.State.Expected != "" && my.State != c.State.Expected {
			return nil, errs.Conflictf("state is %s, not %s", my.State, c.State.Expected)
		}
		my.State, my.StateReason = c.State.To, c.State.Reason
		s.states = append(s.states, *c.State)
		if c.State.Count != nil {
			my.EncouragementCount = *c.State.Count
			s.counts = append(s.counts, *c.State.Count)
		}
	}
	var out []Memory
	for _, nm := range ms {
		if nm.IdempotencyKey != "" {
			found := false
			for _, old := range s.memories[id] {
				if old.IdempotencyKey == nm.IdempotencyKey {
					out = append(out, old)
					found = true
					break
				}
			}
			if found {
				continue
			}
		}
		if nm.Role == chat.RoleUser {
			my.CurrentTurn++
		}
		s.nextID++
		my.LastSeq++
		m := Memory{ID: s.nextID, Seq: my.LastSeq, Turn: my.CurrentTurn, Role: nm.Role, Source: nm.Source, SenderID: nm.SenderID,
			Content: nm.Content, Reasoning: nm.Reasoning, ToolCalls: nm.ToolCalls, ToolCallID: nm.ToolCallID, ToolName: nm.ToolName,
			IdempotencyKey: nm.IdempotencyKey, CallArguments: nm.CallArguments}
		s.memories[id] = append(s.memories[id], m)
		s.appends++
		out = append(out, m)
	}
	return out, nil
}

func (s *fakeStore) Recent(_ context.Context, id string, limit int) ([]Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.down {
		return nil, errs.Unavailablef(nil, "memory down")
	}
	ms := s.memories[id]
	if len(ms) > limit {
		ms = ms[len(ms)-limit:]
	}
	return append([]Memory(nil), ms...), nil
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

func (s *fakeStore) delete(id string) {
	s.mu.Lock()
	delete(s.myses, id)
	delete(s.memories, id)
	s.mu.Unlock()
}

// fakeComposer follows the composer's contract for the encouragement counter: an autonomous turn gets a nudge
// (INCREMENT) until three went unanswered (IDLE); a turn opened by a commander message gets RESET; mid-turn NONE.
// Its messages are the whole stored history, so the tests also prove the loop writes a valid conversation.
type fakeComposer struct {
	store *fakeStore
	mu    sync.Mutex
	calls []bool       // begin_autonomous_turn per call
	tools [][]llm.Tool // tools per call
}

func (c *fakeComposer) Compose(ctx context.Context, id string, autonomous bool, tools []llm.Tool) (Composition, error) {
	c.mu.Lock()
	c.calls = append(c.calls, autonomous)
	c.tools = append(c.tools, tools)
	c.mu.Unlock()
	m, err := c.store.GetMysis(ctx, id)
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
		msgs = append(msgs, chat.Message{Role: mem.Role, Content: mem.Content, ToolCalls: mem.ToolCalls, ToolCallID: mem.ToolCallID, Name: mem.ToolName})
	}
	comp := Composition{Messages: msgs, MaxSeq: maxSeq, Action: ActionNone, NextCount: m.EncouragementCount}
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
}

func (f *fakeTools) Open(Mysis) ToolSession { return &fakeSession{f: f} }

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
	return []llm.Tool{
		{Name: "get_status", Parameters: []byte(`{"type":"object"}`), ReadOnly: true},
		{Name: "mine", Parameters: []byte(`{"type":"object"}`)},
		{Name: "sell", Parameters: []byte(`{"type":"object"}`)},
	}, nil
}

func (s *fakeSession) Call(_ context.Context, c chat.ToolCall) (ToolResult, error) {
	s.f.mu.Lock()
	s.f.calls = append(s.f.calls, c)
	err := s.f.failOnce[c.Name]
	delete(s.f.failOnce, c.Name)
	onCall := s.f.onCall
	s.f.mu.Unlock()
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
	h.actor = New(m.ID, Deps{Store: st, Composer: h.composer, Tools: h.tools, Providers: fakeProviders{h.provider}, Events: h.events}, cfg)
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
