// Package contract is the llm.Provider contract suite: the promises the runner relies on, checked the same way
// against every adapter from that adapter's own tests (each with its own fake server or none).
package contract

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// Run checks p against req. p must answer req the same way every time it is asked (fake servers replay one reply)
// with at least one tool call, and must be able to answer it at least twice.
func Run(t *testing.T, p llm.Provider, req llm.Request) {
	t.Helper()
	if p.Name() == "" {
		t.Error("Name() is empty; the registry needs it")
	}
	first, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	checkReply(t, req, first)

	// Same request, same reply: invented ids must be stable, or replays and prompt caches break.
	second, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	if !reflect.DeepEqual(first.Message, second.Message) {
		t.Errorf("same request, different messages:\n%+v\n%+v", first.Message, second.Message)
	}

	// A cancelled context fails fast instead of answering.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Chat(ctx, req); err == nil {
		t.Error("Chat with a cancelled context succeeded")
	} else if llm.IsRetryable(err) {
		t.Errorf("a cancelled call must not look retryable: %v", err)
	} else if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call error %v does not wrap context.Canceled", err)
	}
}

func checkReply(t *testing.T, req llm.Request, resp llm.Response) {
	t.Helper()
	m := resp.Message
	if m.Role != chat.RoleAssistant {
		t.Errorf("reply role %q, want assistant", m.Role)
	}
	if len(m.ToolCalls) == 0 {
		t.Fatalf("the contract request must produce a tool call; got %+v", m)
	}
	offered := map[string]bool{}
	for _, tl := range req.Tools {
		offered[tl.Name] = true
	}
	seen := map[string]bool{}
	for _, c := range m.ToolCalls {
		if c.ID == "" || seen[c.ID] {
			t.Errorf("tool call id %q is empty or repeated", c.ID)
		}
		seen[c.ID] = true
		for _, old := range req.Messages {
			for _, oc := range old.ToolCalls {
				if oc.ID == c.ID {
					t.Errorf("tool call id %q repeats one from the conversation", c.ID)
				}
			}
		}
		if !offered[c.Name] {
			t.Errorf("tool call %q names a tool that was not offered", c.Name)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil {
			t.Errorf("tool call %s arguments %q are not a JSON object: %v", c.Name, c.Arguments, err)
		}
	}
	if resp.Usage.PromptTokens < 0 || resp.Usage.CompletionTokens < 0 {
		t.Errorf("negative usage %+v", resp.Usage)
	}
}
