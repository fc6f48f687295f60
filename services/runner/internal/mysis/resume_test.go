package mysis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// cutCallThenBroadcast stores the history a runner killed during a game action leaves when the commander keeps
// talking: a prompt, the model's call to sell, no result, then newer broadcasts. It returns the assistant's seq.
func cutCallThenBroadcast(t *testing.T, h *harness, broadcasts int) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: "Sell the ore."}}); err != nil {
		t.Fatal(err)
	}
	asst, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleAssistant, Source: SourceLLM,
		ToolCalls: []chat.ToolCall{call("a", "sell", `{"item_id":"iron_ore"}`)}, IdempotencyKey: "llm:" + testID + ":1"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range broadcasts {
		if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: fmt.Sprintf("Status report %d.", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	return asst[0].Seq
}

// checkAnsweredFirst asserts that call a was answered exactly once, with the unknown-result text and the call's
// key, that it was never sent to the game again, and that the model's first request already carried that answer.
func checkAnsweredFirst(t *testing.T, h *harness, asstSeq int64) {
	t.Helper()
	var results []Memory
	for _, m := range h.store.all(testID) {
		if m.Role == chat.RoleTool && m.ToolCallID == "a" {
			results = append(results, m)
		}
	}
	if len(results) != 1 {
		t.Fatalf("call a answered %d times, want exactly once: %+v", len(results), h.store.all(testID))
	}
	if r := results[0]; r.Content != InterruptedResult || r.IdempotencyKey != fmt.Sprintf("tool:%s:%d:a", testID, asstSeq) {
		t.Errorf("answer = %q key %q, want the unknown result under the call's key", r.Content, r.IdempotencyKey)
	}
	if n := len(h.tools.called()); n != 0 {
		t.Errorf("sell sent to the game %d times after the cut, want 0", n)
	}
	reqs := h.provider.requests()
	if len(reqs) == 0 {
		t.Fatal("the model was never asked")
	}
	found := false
	for _, m := range reqs[0].Messages {
		found = found || m.Role == chat.RoleTool && m.ToolCallID == "a" && m.Content == InterruptedResult
	}
	if !found {
		t.Errorf("the first request after the resume lacks the answer to the cut call: %+v", reqs[0].Messages)
	}
}

// A runner killed during a game action while broadcasts arrive: the resume looks back past the newer prompts and
// answers the cut call "result unknown" before the model is asked about anything (issue 26, item 1).
func TestCutCallBehindNewerPromptsIsAnsweredFirst(t *testing.T) {
	for _, n := range []int{1, 3, 70} { // 70: more prompts than the resume window of 50
		t.Run(fmt.Sprintf("%d broadcasts", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
				asstSeq := cutCallThenBroadcast(t, h, n)
				h.start()
				h.eventually("the model asked", func() bool { return h.provider.count() >= 1 })
				h.stop()
				checkAnsweredFirst(t, h, asstSeq)
			})
		})
	}
}

// The resume itself is cut (the runner killed again while it stores the answer, before or after the write
// landed) and a new owner resumes: the cut call still ends with exactly one answer, written before the model runs.
func TestInterruptedResumeAnswersTheCutCallOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool // killed after the memory service stored the compose's rows, or before
	}{{"killed before the write", false}, {"killed after the write", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
				asstSeq := cutCallThenBroadcast(t, h, 2)
				reached, release := make(chan struct{}), make(chan struct{})
				hang := func(n int) error {
					if n != 0 {
						return nil
					}
					close(reached)
					<-release
					return errors.New("connection reset: the runner was killed")
				}
				if tc.after {
					h.composer.after = hang
				} else {
					h.composer.before = hang
				}
				h.start()
				<-reached
				h.cancel() // the kill: the actor's context ends while the compose is in flight
				close(release)
				if err := <-h.done; err != nil {
					t.Fatalf("Run: %v", err)
				}
				h.cancel = nil
				if h.provider.count() != 0 {
					t.Fatal("the model was asked during the cut resume")
				}

				// The next owner.
				h.composer.before, h.composer.after = nil, nil
				h.actor = New(testID, h.actor.deps, h.actor.cfg)
				h.start()
				h.eventually("the model asked", func() bool { return h.provider.count() >= 1 })
				h.stop()
				checkAnsweredFirst(t, h, asstSeq)
			})
		})
	}
}

// Results already stored before the newer prompts count: only the calls without one are answered, in order.
func TestFindResumePointLooksPastNewerPrompts(t *testing.T) {
	calls := []chat.ToolCall{call("a", "get_status", "{}"), call("b", "sell", "{}"), call("c", "mine", "{}")}
	for _, tc := range []struct {
		name string
		ms   []Memory
		want string // unanswered call ids
	}{
		{"call, broadcast", []Memory{{Seq: 1, Role: chat.RoleAssistant, ToolCalls: calls}, {Seq: 2, Role: chat.RoleUser, Source: SourceBroadcast}}, "a,b,c"},
		{"call, result, broadcasts", []Memory{{Seq: 1, Role: chat.RoleAssistant, ToolCalls: calls}, {Seq: 2, Role: chat.RoleTool, ToolCallID: "a"},
			{Seq: 3, Role: chat.RoleUser, Source: SourceBroadcast}, {Seq: 4, Role: chat.RoleUser, Source: SourceDirect}}, "b,c"},
		{"call, result, broadcast, result", []Memory{{Seq: 1, Role: chat.RoleAssistant, ToolCalls: calls}, {Seq: 2, Role: chat.RoleTool, ToolCallID: "a"},
			{Seq: 3, Role: chat.RoleUser, Source: SourceBroadcast}, {Seq: 4, Role: chat.RoleTool, ToolCallID: "b"}}, "c"},
		{"final answer, broadcast", []Memory{{Seq: 1, Role: chat.RoleAssistant, Content: "done"}, {Seq: 2, Role: chat.RoleUser, Source: SourceBroadcast}}, ""},
		{"all answered, nudge", []Memory{{Seq: 1, Role: chat.RoleAssistant, ToolCalls: calls[:1]}, {Seq: 2, Role: chat.RoleTool, ToolCallID: "a"},
			{Seq: 3, Role: chat.RoleUser, Source: SourceNudge}}, ""},
	} {
		rp := findResumePoint(tc.ms)
		var ids []string
		for _, c := range rp.unanswered {
			ids = append(ids, c.ID)
		}
		if got := strings.Join(ids, ","); got != tc.want || !rp.pending || got != "" && rp.assistantSeq != 1 {
			t.Errorf("%s: unanswered %q (assistant seq %d, pending %v), want %q at seq 1", tc.name, got, rp.assistantSeq, rp.pending, tc.want)
		}
	}
}
