package mysis

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// answersByCall returns the stored results of each call id, in order.
func answersByCall(ms []Memory) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		if m.Role == chat.RoleTool {
			out[m.ToolCallID] = append(out[m.ToolCallID], m.Content)
		}
	}
	return out
}

// checkAnsweredOnce asserts that every tool call in the history has exactly one result, and the listed calls the
// listed one.
func checkAnsweredOnce(t *testing.T, ms []Memory, want map[string]string) {
	t.Helper()
	got := answersByCall(ms)
	for _, m := range ms {
		for _, c := range m.ToolCalls {
			if n := len(got[c.ID]); n != 1 {
				t.Errorf("call %s (%s, seq %d) has %d results, want exactly 1: %q", c.ID, c.Name, m.Seq, n, got[c.ID])
			}
		}
	}
	for id, w := range want {
		if a := got[id]; len(a) != 1 || a[0] != w {
			t.Errorf("call %s answered %q, want once with %q", id, a, w)
		}
	}
}

// The owner of a running mysis died inside a game action and the mysis was stopped before anyone resumed it: the
// actor that takes the stopped mysis answers the cut call "result unknown" and the one after it "not executed",
// without opening a tool session or asking the model, before it reports the stop taken in. A later start resumes
// without a second answer to any call (issue 26).
func TestStoppedMysisGetsItsCutCallsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateStopped}, Config{TurnPause: time.Hour})
		ctx := context.Background()
		if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "Mine, then sell."}}); err != nil {
			t.Fatal(err)
		}
		asst, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleAssistant, Source: SourceLLM, IdempotencyKey: "llm:" + testID + ":1",
			ToolCalls: []chat.ToolCall{call("a", "get_status", "{}"), call("b", "mine", "{}"), call("c", "sell", `{"item_id":"iron_ore"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		aSeq := asst[0].Seq
		if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleTool, Source: SourceTool, ToolCallID: "a", ToolName: "get_status",
			CallArguments: "{}", Content: `{"player":{"credits":5}}`, IdempotencyKey: fmt.Sprintf("tool:%s:%d:a", testID, aSeq)}}); err != nil {
			t.Fatal(err)
		}
		// A broadcast after the cut: the answers look past it.
		if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: "Report."}}); err != nil {
			t.Fatal(err)
		}

		h.start()
		h.eventually("the stop taken in", func() bool { return h.actor.Status().State == StateStopped })
		want := map[string]string{"a": `{"player":{"credits":5}}`, "b": InterruptedResult, "c": NotRunResult}
		checkAnsweredOnce(t, h.store.all(testID), want)
		for _, m := range h.store.all(testID) {
			if m.Role == chat.RoleTool && m.ToolCallID != "a" && m.IdempotencyKey != fmt.Sprintf("tool:%s:%d:%s", testID, aSeq, m.ToolCallID) {
				t.Errorf("answer to %s stored under key %q, want the call's key", m.ToolCallID, m.IdempotencyKey)
			}
		}
		h.tools.mu.Lock()
		prepares := h.tools.prepares
		h.tools.mu.Unlock()
		if n := len(h.tools.called()); n != 0 || prepares != 0 {
			t.Errorf("a stopped mysis touched the game: %d calls, %d tool sessions prepared", n, prepares)
		}
		if n := h.provider.count(); n != 0 {
			t.Errorf("the model was asked %d times for a stopped mysis", n)
		}

		// Broadcasts to the stopped mysis open no call: each costs one short read, not the resume window.
		reads, _, _ := h.store.counters()
		for i := range 3 {
			if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: fmt.Sprintf("Report %d.", i)}}); err != nil {
				t.Fatal(err)
			}
			h.actor.Wake(WakeBroadcast)
			synctest.Wait()
		}
		if after, _, _ := h.store.counters(); after-reads != 3 {
			t.Errorf("3 broadcasts to the stopped mysis cost %d memory reads, want 3", after-reads)
		}

		// Started again: it resumes with the loop complete and plays on; no call gets a second answer.
		if _, err := h.store.SetState(ctx, testID, StateChange{To: StateRunning, Reason: "started by commander"}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeStart)
		h.eventually("the model asked after the start", func() bool { return h.provider.count() >= 1 })
		h.stop()
		checkAnsweredOnce(t, h.store.all(testID), want)
	})
}

// A game action failed in transport (the turn errored, retried after a backoff) and the commander stopped the mysis
// before the retry: the stop answers the failed call "result unknown" and the call after it "not executed"; neither
// is sent to the game again.
func TestErroredMysisStoppedBeforeItsRetryGetsItsCallsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour, BackoffMin: time.Hour, BackoffMax: time.Hour})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			return reply("", call("a", "sell", `{"item_id":"iron_ore"}`), call("b", "mine", "{}")), nil
		}
		h.tools.failOnce = map[string]error{"sell": fmt.Errorf("POST /mcp: context deadline exceeded")}
		h.start()
		h.eventually("errored by the failed call", func() bool { return h.state() == StateErrored })
		if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateStopped, Reason: "stopped by commander"}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeStop)
		h.eventually("the stop taken in", func() bool { return h.actor.Status().State == StateStopped })
		checkAnsweredOnce(t, h.store.all(testID), map[string]string{"a": InterruptedResult, "b": NotRunResult})
		if got := h.tools.called(); len(got) != 1 || got[0].Name != "sell" {
			t.Errorf("calls sent to the game: %+v, want the one sell", got)
		}
		if n := h.provider.count(); n != 1 {
			t.Errorf("the model was asked %d times, want once", n)
		}
	})
}
