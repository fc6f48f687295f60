package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// badModel answers each commander message with one of the malformed replies of the robustness campaign, then,
// once its calls are answered, with a final text. It counts requests that break a provider rule.
type badModel struct {
	replies [][]chat.ToolCall
	calls   atomic.Int64
	invalid atomic.Int64
	mu      sync.Mutex
	done    map[int]bool // orders already carried out
}

func (p *badModel) Name() string { return "openai" }

func (p *badModel) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	p.calls.Add(1)
	if err := chatvalid.Strict.Validate(req.Messages); err != nil {
		p.invalid.Add(1)
	}
	// The newest order anywhere in the request: a direct message that lands while the model answers a nudge is
	// stored after that answer's prompt (the runner's check for it is best effort), so it need not be the last
	// message. Each order is carried out once; anything else gets a plain answer.
	i := -1
	for _, m := range req.Messages {
		if m.Role != chat.RoleUser {
			continue
		}
		for _, part := range strings.Split(m.Content, "BAD ")[1:] {
			var n int
			if _, err := fmt.Sscanf(part, "%d", &n); err != nil || n < 0 || n >= len(p.replies) {
				return llm.Response{}, fmt.Errorf("bad order %q", part)
			}
			i = max(i, n)
		}
	}
	p.mu.Lock()
	fresh := i >= 0 && !p.done[i]
	if fresh {
		p.done[i] = true
	}
	p.mu.Unlock()
	if !fresh {
		return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, Content: "Understood."}}, nil
	}
	return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, Content: "\x00trying\xff", ToolCalls: p.replies[i]}}, nil
}

// TestBadModelRepliesAreStoredAndAnswered runs the campaign's malformed model output through a real runner, memory
// service and composer: every reply is stored, every call answered exactly once (bad ones with a tool error), the
// mysis never goes errored and the model is asked once per step, not again and again.
func TestBadModelRepliesAreStoredAndAnswered(t *testing.T) {
	s := startStack(t)
	many := make([]chat.ToolCall, 130)
	for i := range many {
		many[i] = chat.ToolCall{ID: fmt.Sprintf("m%d", i), Name: "get_status", Arguments: `{}`}
	}
	p := &badModel{done: map[int]bool{}, replies: [][]chat.ToolCall{
		{{ID: "a", Name: "get_status", Arguments: `{"a":1`}},
		{{ID: "b", Name: "get_status", Arguments: `{} extra`}},
		{{ID: "dup", Name: "get_status", Arguments: `{}`}, {ID: "dup", Name: "get_status", Arguments: `{}`}},
		{{ID: "e", Name: "", Arguments: `{}`}},
		{{ID: strings.Repeat("i", 300), Name: "get_status", Arguments: `{}`}},
		many,
	}}
	r := s.startRunner(t, "r1", []llm.Provider{p}, nil)
	ctx := context.Background()
	created, err := r.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "bad-model", Model: "scripted", Start: true})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetStatus().GetMysis().GetId()
	for i := range p.replies {
		if _, err := s.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "bad-model", Content: fmt.Sprintf("BAD %d", i)}); err != nil {
			t.Fatal(err)
		}
		s.eventually(t, 60*time.Second, fmt.Sprintf("the answer to BAD %d", i), func() bool {
			ms := s.allMemories(t, id)
			seen, called := false, false
			for _, m := range ms {
				if m.GetRole() == memoryv1.Role_ROLE_USER && m.GetContent() == fmt.Sprintf("BAD %d", i) {
					seen = true
				}
				called = called || seen && len(m.GetToolCalls()) > 0
				if called && m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && m.GetContent() == "Understood." {
					return true
				}
			}
			return false
		})
		if st := getStatus(t, r, "bad-model").GetMysis().GetState(); st == memoryv1.MysisState_MYSIS_STATE_ERRORED {
			t.Fatalf("after BAD %d the mysis is errored: %s", i, getStatus(t, r, "bad-model").GetMysis().GetStateReason())
		}
	}
	ms := s.checkHistory(t, id, nil)
	errorsSeen, okSeen := 0, 0
	for _, m := range ms {
		if m.GetRole() != memoryv1.Role_ROLE_TOOL {
			continue
		}
		if strings.HasPrefix(m.GetContent(), "Error: invalid_tool_call:") {
			errorsSeen++
		} else {
			okSeen++
		}
	}
	// Bad: 2 argument errors, 1 missing name, the 17th of the 130 calls (the 113 after it are discarded).
	// Run: 2 duplicates, the long id, 16 of the 130.
	if errorsSeen != 4 || okSeen != 2+1+16 {
		t.Errorf("tool results: %d errors (want 4), %d run (want 19)", errorsSeen, okSeen)
	}
	if n := p.invalid.Load(); n != 0 {
		t.Errorf("%d requests to the model broke a provider rule", n)
	}
	// Each BAD prompt costs the model two requests (the reply, then the answer after the results); the autonomous
	// nudges after each answer add some. A retry loop would multiply them.
	if n := p.calls.Load(); n > int64(len(p.replies))*2+12 {
		t.Errorf("%d model requests for %d bad replies: the runner asked again instead of answering", n, len(p.replies))
	}
}
