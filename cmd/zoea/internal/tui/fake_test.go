package tui

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// scripted is a Backend holding a small swarm in memory: the golden screens need the same data on every run.
// The real services are driven by the tmux end-to-end test of the zoea binary.
type scripted struct {
	backend.Backend // what the console does not call (search, usage, limits, spend): nil, a call would panic
	mu              sync.Mutex
	myses           []*runnerv1.MysisStatus
	events          chan *busv1.Event
	calls           []string
	history         map[string][]*memoryv1.Memory
	preview         *runnerv1.PreviewContextResponse
}

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func status3() []*runnerv1.MysisStatus {
	mk := func(name string, state memoryv1.MysisState, turns, credits int64, action, lastErr string) *runnerv1.MysisStatus {
		return &runnerv1.MysisStatus{
			Mysis: &memoryv1.Mysis{Id: "id-" + name, Name: name, Provider: "autopilot", Model: "autopilot", Temperature: 0.7,
				State: state, CurrentTurn: turns, LastSeq: turns * 4},
			Turns: turns, Credits: credits, LastAction: action, LastError: lastErr, LastActionAt: timestamppb.New(t0),
		}
	}
	scout := mk("scout-1", memoryv1.MysisState_MYSIS_STATE_RUNNING, 12, 1250, "mine", "")
	// A long-running mysis's usage: the table shows the tokens compact (1.1M), the focus view exact.
	scout.Usage = &memoryv1.UsageTotals{Calls: 412, PromptTokens: 1_098_312, CachedPromptTokens: 880_000, CompletionTokens: 6_734, CostNanos: 1_234_567}
	return []*runnerv1.MysisStatus{
		scout,
		mk("miner-2", memoryv1.MysisState_MYSIS_STATE_IDLE, 3, -1, "get_status", ""),
		mk("trader-3", memoryv1.MysisState_MYSIS_STATE_ERRORED, 7, 80, "sell",
			"ollama: HTTP 500: model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details"),
	}
}

func newScripted() *scripted {
	s := &scripted{myses: status3(), events: make(chan *busv1.Event, 16), history: map[string][]*memoryv1.Memory{}}
	s.history["id-scout-1"] = []*memoryv1.Memory{
		{Seq: 45, Turn: 12, Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_BROADCAST, Content: "Mine copper_ore at main_belt."},
		{Seq: 46, Turn: 12, Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM,
			ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "mine", ArgumentsJson: "{}"}}},
		{Seq: 47, Turn: 12, Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolName: "mine", ToolCallId: "c1",
			Content: `{"mined":"copper_ore","qty":3}`},
	}
	idx := func(i int32) *int32 { return &i }
	s.preview = &runnerv1.PreviewContextResponse{
		Messages: []*composerv1.ChatMessage{
			{Role: memoryv1.Role_ROLE_SYSTEM, Content: "You are a mysis, an autonomous SpaceMolt pilot."},
			{Role: memoryv1.Role_ROLE_USER, Content: "Mine copper_ore at main_belt."},
			{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "get_status", ArgumentsJson: "{}"}}},
			{Role: memoryv1.Role_ROLE_TOOL, Name: "get_status", ToolCallId: "c1", Content: "[superseded get_status result: see memory #40]"},
			{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "c2", Name: "mine", ArgumentsJson: "{}"}}},
			{Role: memoryv1.Role_ROLE_TOOL, Name: "mine", ToolCallId: "c2", Content: "[no result recorded]"},
		},
		Manifest: &composerv1.Manifest{
			Entries: []*composerv1.ManifestEntry{
				{MemoryId: 31, Seq: 31, Disposition: composerv1.Disposition_DISPOSITION_DROPPED, Reason: "earlier turn compressed"},
				{MemoryId: 38, Seq: 38, Disposition: composerv1.Disposition_DISPOSITION_INCLUDED, Reason: "mission", Tokens: 14, MessageIndex: idx(1)},
				{MemoryId: 39, Seq: 39, Disposition: composerv1.Disposition_DISPOSITION_INCLUDED, Reason: "current turn", Tokens: 20, MessageIndex: idx(2)},
				{MemoryId: 40, Seq: 40, Disposition: composerv1.Disposition_DISPOSITION_STUBBED, Reason: "snapshot superseded by a newer result", Tokens: 17, MessageIndex: idx(3)},
				{MemoryId: 41, Seq: 41, Disposition: composerv1.Disposition_DISPOSITION_INCLUDED, Reason: "current turn", Tokens: 18, MessageIndex: idx(4)},
			},
			Tokens:      &composerv1.SectionTokens{System: 30, Mission: 14, CurrentTurn: 55, Synthetic: 9, Total: 108},
			TokenBudget: 8192,
			Synthetic:   []*composerv1.SyntheticMessage{{Index: 5, Kind: "missing_result", Reason: "interrupted tool call: no result recorded", Tokens: 9}},
			Repairs:     []string{`interrupted: memory #41: tool call "c2" has no recorded result`},
		},
	}
	return s
}

// emit changes the swarm the way the runner would for e, then streams e.
func (s *scripted) emit(e *busv1.Event) {
	s.mu.Lock()
	if _, st := s.find(e.GetMysisId()); st != nil {
		switch p := e.GetPayload().(type) {
		case *busv1.Event_StateChanged:
			st.Mysis.State = p.StateChanged.GetTo()
		case *busv1.Event_ToolCalled:
			st.LastAction = p.ToolCalled.GetTool()
		case *busv1.Event_Error:
			st.LastError = p.Error.GetMessage()
		}
	}
	s.mu.Unlock()
	s.events <- e
}

func (s *scripted) record(c string) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *scripted) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *scripted) find(ref string) (int, *runnerv1.MysisStatus) {
	for i, st := range s.myses {
		if st.GetMysis().GetId() == ref || st.GetMysis().GetName() == ref {
			return i, st
		}
	}
	return -1, nil
}

func clone(st *runnerv1.MysisStatus) *runnerv1.MysisStatus {
	return proto.Clone(st).(*runnerv1.MysisStatus)
}

func (s *scripted) List(context.Context) ([]*runnerv1.MysisStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*runnerv1.MysisStatus, len(s.myses))
	for i, st := range s.myses {
		out[i] = clone(st)
	}
	return out, nil
}

func (s *scripted) Get(_ context.Context, ref string) (*runnerv1.MysisStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, st := s.find(ref); st != nil {
		return clone(st), nil
	}
	return nil, status.Errorf(codes.NotFound, "mysis %q not found", ref)
}

func (s *scripted) Create(_ context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.MysisStatus, error) {
	name, provider, model := req.GetName(), req.GetProvider(), req.GetModel()
	s.record("create " + name + " " + provider + " " + model)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, st := s.find(name); st != nil {
		return nil, status.Error(codes.AlreadyExists, `duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`)
	}
	if provider == "" {
		provider = "autopilot"
	}
	if model == "" {
		model = "autopilot"
	}
	st := &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-" + name, Name: name, Provider: provider, Model: model,
		State: memoryv1.MysisState_MYSIS_STATE_RUNNING, Temperature: 0.7}, Credits: -1}
	s.myses = append(s.myses, st)
	return clone(st), nil
}

func (s *scripted) setState(ref string, state memoryv1.MysisState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, st := s.find(ref)
	if st == nil {
		return status.Errorf(codes.NotFound, "mysis %q not found", ref)
	}
	st.Mysis.State = state
	return nil
}

func (s *scripted) Start(_ context.Context, ref string) error {
	s.record("start " + ref)
	return s.setState(ref, memoryv1.MysisState_MYSIS_STATE_RUNNING)
}

func (s *scripted) Stop(_ context.Context, ref string) error {
	s.record("stop " + ref)
	return s.setState(ref, memoryv1.MysisState_MYSIS_STATE_STOPPED)
}

func (s *scripted) Delete(_ context.Context, ref string) error {
	s.record("delete " + ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := s.find(ref)
	if i < 0 {
		return status.Errorf(codes.NotFound, "mysis %q not found", ref)
	}
	s.myses = slices.Delete(s.myses, i, i+1)
	return nil
}

func (s *scripted) Configure(_ context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.MysisStatus, error) {
	desc := "configure " + req.GetMysis()
	if req.Provider != nil {
		desc += " provider=" + req.GetProvider()
	}
	if req.Model != nil {
		desc += " model=" + req.GetModel()
	}
	if req.Temperature != nil {
		desc += " temperature"
	}
	s.record(desc)
	if req.GetProvider() == "autopilot" || (req.Model != nil && req.GetProvider() == "") {
		// what the runner's provider check says about a model on autopilot
		return nil, invalidModel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, st := s.find(req.GetMysis())
	if req.Model != nil {
		st.Mysis.Model = req.GetModel()
	}
	if req.Provider != nil {
		st.Mysis.Provider = req.GetProvider()
	}
	return clone(st), nil
}

func (s *scripted) Broadcast(_ context.Context, text string) (int32, error) {
	s.record("broadcast " + text)
	s.mu.Lock()
	defer s.mu.Unlock()
	return int32(len(s.myses)), nil
}

func (s *scripted) Send(_ context.Context, ref, text string) error {
	s.record("send " + ref + " " + text)
	return nil
}

func (s *scripted) History(_ context.Context, id string, _ int32) ([]*memoryv1.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.history[id], nil
}

func (s *scripted) Preview(_ context.Context, ref string) (*runnerv1.PreviewContextResponse, error) {
	s.record("preview " + ref)
	return s.preview, nil
}

func (s *scripted) Watch(ctx context.Context, connected func(), fn func(*busv1.Event)) error {
	if connected != nil {
		connected()
	}
	for {
		select {
		case e := <-s.events:
			fn(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
