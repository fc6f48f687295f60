package mysis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

func reply(content string, calls ...chat.ToolCall) llm.Response {
	return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, Content: content, ToolCalls: calls}, Reasoning: "thinking about " + content}
}

func call(id, name, args string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: name, Arguments: args}
}

func countSource(ms []Memory, src Source) int {
	n := 0
	for _, m := range ms {
		if m.Source == src {
			n++
		}
	}
	return n
}

// Truth table rows 3–5: with no commander message, three nudges open three autonomous turns; the fourth
// autonomous compose says IDLE and no LLM call is made.
func TestThreeUnansweredNudgesGoIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.start()
		h.eventually("idle", func() bool { return h.state() == StateIdle })
		// Idle waits for a message only: an hour of fake time later nothing more has happened.
		advance(time.Hour)

		m := h.store.get(testID)
		if m.StateReason != IdleReason {
			t.Errorf("reason = %q, want %q", m.StateReason, IdleReason)
		}
		if m.EncouragementCount != 3 {
			t.Errorf("encouragement count = %d, want 3", m.EncouragementCount)
		}
		if got := h.provider.count(); got != 3 {
			t.Errorf("LLM calls = %d, want 3 (no call once idle)", got)
		}
		ms := h.store.all(testID)
		if got := countSource(ms, SourceNudge); got != 3 {
			t.Errorf("nudge memories = %d, want 3", got)
		}
		// Every nudge is persisted with its idempotency key and the LLM saw it as the last message.
		for i, req := range h.provider.requests() {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != chat.RoleUser || !strings.Contains(last.Content, fmt.Sprintf("nudge %d", i+1)) {
				t.Errorf("request %d ends with %+v, want nudge %d", i, last, i+1)
			}
		}
		for _, mem := range ms {
			if mem.Source == SourceNudge && !strings.HasPrefix(mem.IdempotencyKey, "nudge:"+testID+":") {
				t.Errorf("nudge key %q", mem.IdempotencyKey)
			}
		}
		if len(h.events.kinds(EventStateChanged)) == 0 {
			t.Error("no state change event published")
		}
	})
}

// Truth table rows 6 and 1: an idle mysis auto-starts on a broadcast and its counter resets to 0.
func TestBroadcastWakesIdleMysisAndResetsCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateIdle, EncouragementCount: 3, StateReason: IdleReason}, Config{})
		h.start()
		advance(time.Hour) // the actor is blocked waiting for a message; no pause or backoff runs it
		if h.provider.count() != 0 || h.state() != StateIdle {
			t.Fatalf("idle mysis ran without a message: calls=%d state=%s", h.provider.count(), h.state())
		}
		// The bus writes the delivery row first, then wakes.
		if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: "Mine iron ore and sell it."}}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeBroadcast)
		h.eventually("broadcast answered", func() bool { return h.provider.count() >= 1 })
		first := h.provider.requests()[0]
		if last := first.Messages[len(first.Messages)-1]; last.Content != "Mine iron ore and sell it." {
			t.Errorf("first request ends with %q, want the broadcast", last.Content)
		}
		// After the broadcast turn the mysis keeps going on nudges, then idles again after three.
		h.eventually("idle again", func() bool { return h.provider.count() == 4 && h.state() == StateIdle })
		h.store.mu.Lock()
		counts := fmt.Sprint(h.store.counts)
		h.store.mu.Unlock()
		if !strings.HasPrefix(counts, "[0 1 2 3") {
			t.Errorf("counter writes = %s, want 0 1 2 3 (reset by the broadcast, then three nudges)", counts)
		}
	})
}

// Truth table row 2 (direct message): an idle mysis also wakes on a direct message.
func TestDirectMessageWakesIdleMysis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateIdle, EncouragementCount: 3}, Config{})
		h.start()
		if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "Report your credits."}}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeDirect)
		h.eventually("direct answered", func() bool { return h.provider.count() >= 1 })
		h.eventually("reason", func() bool { return h.store.get(testID).StateReason != "" })
	})
}

// Truth table row 8 and the stopped state: wakes never start a stopped mysis.
func TestStoppedMysisIsNotAutoStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateStopped}, Config{})
		h.start()
		if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: "Everyone: mine."}}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeBroadcast)
		h.actor.Wake(WakeDirect)
		advance(time.Hour) // both wakes handled, the actor is back to waiting
		if h.provider.count() != 0 || h.state() != StateStopped {
			t.Fatalf("stopped mysis ran: calls=%d state=%s", h.provider.count(), h.state())
		}
		// An explicit start (the API sets running, then wakes) resumes it with the pending broadcast.
		if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateRunning}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeStart)
		h.eventually("started", func() bool { return h.provider.count() >= 1 })
		if last := h.provider.requests()[0].Messages; last[len(last)-1].Content != "Everyone: mine." {
			t.Errorf("first request after start does not answer the pending broadcast")
		}
	})
}

// LESSONS 11: an LLM outage puts the mysis in errored with the reason, and it is retried with growing backoff until
// it works again — no human needed. The retries resume the same turn: no extra nudges are burned.
func TestErroredMysisRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{BackoffMin: 10 * time.Millisecond, BackoffMax: 80 * time.Millisecond})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			if n < 4 {
				return llm.Response{}, &llm.StatusError{Provider: "fake", StatusCode: 503, Message: "overloaded"}
			}
			return reply("back online"), nil
		}
		h.start()
		h.eventually("recovered", func() bool { return h.provider.count() >= 5 })
		// Each failure is stored as errored with its reason, and each retry sets running again.
		var errored int
		for _, ch := range h.store.stateLog() {
			if ch.To == StateErrored {
				errored++
				if !strings.Contains(ch.Reason, "503") {
					t.Errorf("errored reason %q does not name the failure", ch.Reason)
				}
			}
		}
		if errored != 4 {
			t.Errorf("errored written %d times, want 4 (one per failed call)", errored)
		}
		h.eventually("running", func() bool { return h.state() == StateRunning || h.state() == StateIdle })
		h.provider.mu.Lock()
		ts := append([]time.Time(nil), h.provider.times...)
		h.provider.mu.Unlock()
		// On the fake clock the gaps between calls are the backoff delays exactly: 10, 20, 40 then 80 ms (the cap),
		// each less up to 20% jitter.
		for i, want := range []time.Duration{10, 20, 40, 80} {
			want *= time.Millisecond
			if gap := ts[i+1].Sub(ts[i]); gap < want*8/10 || gap > want {
				t.Errorf("delay before retry %d = %v, want %v less up to 20%%", i+1, gap, want)
			}
		}
		// Five LLM calls for the first turn but a single nudge.
		h.stop()
		if got := countSource(h.store.all(testID)[:2], SourceNudge); got != 1 {
			t.Errorf("nudges before the first answer = %d, want 1", got)
		}
		if errs := h.events.kinds(EventError); len(errs) < 4 {
			t.Errorf("error events = %d, want ≥ 4", len(errs))
		}
	})
}

// Memory service down: the actor keeps retrying instead of dying, and resumes when it is back.
func TestMemoryOutageIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.store.setDown(true)
		h.start()
		h.eventually("error noted", func() bool { return h.actor.Status().LastError != "" })
		if h.provider.count() != 0 {
			t.Fatal("LLM called while memory is down")
		}
		h.store.setDown(false)
		h.eventually("turn after recovery", func() bool { return h.provider.count() >= 1 })
	})
}

// The tool loop: each call executed in order, each result stored with its call id and tool name, and the turn
// ends on an answer without tool calls.
func TestToolLoopStoresStructuredCallsAndResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			switch n {
			case 0:
				return reply("checking", call("c1", "get_status", `{}`), call("c2", "mine", `{"a":"x|y"}`)), nil
			case 1:
				return reply("", call("c3", "mine", `{}`)), nil
			case 2:
				return reply("done for now"), nil
			}
			return reply("ok"), nil
		}
		h.start()
		h.eventually("three calls", func() bool { return h.provider.count() >= 3 })
		h.stop()

		ms := h.store.all(testID)
		var roles []string
		for _, m := range ms[:7] {
			roles = append(roles, string(m.Role)+":"+string(m.Source))
		}
		want := "user:nudge assistant:llm tool:tool tool:tool assistant:llm tool:tool assistant:llm"
		if got := strings.Join(roles, " "); got != want {
			t.Fatalf("memories = %s\nwant      %s", got, want)
		}
		if ms[1].ToolCalls[1].Arguments != `{"a":"x|y"}` || ms[1].Reasoning == "" {
			t.Errorf("assistant memory lost structure: %+v", ms[1])
		}
		if ms[2].ToolCallID != "c1" || ms[2].ToolName != "get_status" || ms[3].ToolCallID != "c2" || ms[5].ToolCallID != "c3" {
			t.Errorf("tool results out of order or unlabelled: %+v %+v %+v", ms[2], ms[3], ms[5])
		}
		// Each result carries its call's arguments, so the memory service keys it by call.
		if ms[2].CallArguments != `{}` || ms[3].CallArguments != `{"a":"x|y"}` || ms[5].CallArguments != `{}` {
			t.Errorf("tool results lost their call's arguments: %q %q %q", ms[2].CallArguments, ms[3].CallArguments, ms[5].CallArguments)
		}
		// Every composition was asked with the tools the request is sent with, so their tokens are budgeted.
		h.composer.mu.Lock()
		composed := h.composer.tools
		h.composer.mu.Unlock()
		if len(composed) < 3 {
			t.Fatalf("composed %d times", len(composed))
		}
		for i, tools := range composed {
			if len(tools) != 3 || tools[0].Name != "get_status" || string(tools[1].Parameters) != `{"type":"object"}` {
				t.Errorf("composition %d got tools %+v", i, tools)
			}
		}
		// Seq is gapless and every idempotency key unique.
		keys := map[string]bool{}
		for i, m := range ms {
			if m.Seq != int64(i+1) {
				t.Errorf("seq %d at index %d", m.Seq, i)
			}
			if keys[m.IdempotencyKey] {
				t.Errorf("duplicate key %s", m.IdempotencyKey)
			}
			keys[m.IdempotencyKey] = true
		}
		if st := h.actor.Status(); st.Credits != 1234 || st.Turns < 1 {
			t.Errorf("status = %+v, want credits 1234 and a turn", st)
		}
		if len(h.events.kinds(EventToolCalled)) != 3 || len(h.events.kinds(EventMemoryAppended)) < 7 {
			t.Errorf("events: %d tool, %d memory", len(h.events.kinds(EventToolCalled)), len(h.events.kinds(EventMemoryAppended)))
		}
	})
}

// A model that never stops calling tools is cut at MaxToolIterations LLM calls per turn.
func TestMaxToolIterationsEndsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{MaxToolIterations: 4, TurnPause: time.Hour})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			return reply("", call(fmt.Sprintf("c%d", n), "mine", `{}`)), nil
		}
		h.start()
		h.eventually("four calls", func() bool { return h.provider.count() >= 4 })
		h.eventually("turn counted", func() bool { return h.actor.Status().Turns == 1 })
		advance(59 * time.Minute) // the turn has ended: the actor sits in its hour-long pause
		if got := h.provider.count(); got != 4 {
			t.Errorf("LLM calls = %d, want 4", got)
		}
	})
}

// Stop interrupts at the next safe point: the in-flight LLM call completes and is stored, its tools are not run
// but answered "not executed".
func TestStopInterruptsAfterCurrentLLMCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.provider.gate = make(chan struct{})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			return reply("", call(fmt.Sprintf("c%d", n), "mine", `{}`)), nil
		}
		h.start()
		h.eventually("LLM in flight", func() bool { return h.provider.count() == 1 })
		if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateStopped, Reason: "commander"}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeStop)
		h.provider.gate <- struct{}{}
		h.eventually("assistant stored and its call answered", func() bool { return len(h.store.all(testID)) >= 3 })
		advance(time.Hour) // stopped: only a start could run it
		if len(h.tools.called()) != 0 {
			t.Errorf("tools ran after stop: %v", h.tools.called())
		}
		if h.provider.count() != 1 || h.state() != StateStopped {
			t.Errorf("after stop: calls=%d state=%s", h.provider.count(), h.state())
		}
		// The call the stop cut off is answered "not executed" at once: the loop is complete, nothing is left to guess.
		ms := h.store.all(testID)
		if len(ms) != 3 || ms[2].Role != chat.RoleTool || ms[2].ToolCallID != "c0" || ms[2].Content != NotRunResult ||
			ms[2].IdempotencyKey != fmt.Sprintf("tool:%s:%d:c0", testID, ms[1].Seq) {
			t.Fatalf("after stop, memories = %+v, want nudge, assistant, not-executed result for c0", ms)
		}
		// Started again, the model is asked with that answer in view; the call is not run behind its back.
		if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateRunning}); err != nil {
			t.Fatal(err)
		}
		h.provider.mu.Lock()
		h.provider.gate = nil
		h.provider.mu.Unlock()
		h.actor.Wake(WakeStart)
		h.eventually("the model asked again", func() bool { return h.provider.count() >= 2 })
		req := h.provider.requests()[1]
		if last := req.Messages[len(req.Messages)-1]; last.Role != chat.RoleTool || last.ToolCallID != "c0" || last.Content != NotRunResult {
			t.Errorf("second request ends with %+v, want the not-executed result of c0", last)
		}
		for _, c := range h.tools.called() {
			if c.ID == "c0" {
				t.Errorf("c0 ran after the restart; it was answered as not executed")
			}
		}
	})
}

// A stop between two calls of one assistant message: the running call finishes and is stored, the next one never
// starts and is answered "not executed".
func TestStopBetweenCallsAnswersTheRestAsNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			return reply("", call("a", "mine", `{}`), call("b", "sell", `{}`)), nil
		}
		h.tools.onCall = func(c chat.ToolCall) {
			if c.ID == "a" {
				if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateStopped, Reason: "commander"}); err != nil {
					t.Error(err)
				}
				h.actor.Wake(WakeStop)
			}
		}
		h.start()
		h.eventually("both calls answered", func() bool { return len(h.store.all(testID)) >= 4 })
		advance(time.Hour) // stopped: only a start could run it
		ms := h.store.all(testID)
		if len(ms) != 4 || ms[2].ToolCallID != "a" || ms[2].Content != `{"ok":true,"tool":"mine"}` || ms[3].ToolCallID != "b" || ms[3].Content != NotRunResult {
			t.Fatalf("memories = %+v, want a's real result and b not executed", ms)
		}
		if got := h.tools.called(); len(got) != 1 || got[0].ID != "a" {
			t.Errorf("tools called %v, want only a", got)
		}
		if h.state() != StateStopped || h.provider.count() != 1 {
			t.Errorf("state %s after %d LLM calls, want stopped after 1", h.state(), h.provider.count())
		}
	})
}

// A turn resumed with calls that have no result (the previous owner died during the first of them): reads are
// run again; the call that may have changed the game is not, it is answered "result unknown"; the game-changing
// calls planned after it never ran and are answered "not executed"; then the model is asked, with every call
// answered exactly once.
func TestResumeDoesNotReExecuteMutations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v2       bool // the tools are MCP v2's: action-dispatched
		calls    []chat.ToolCall
		answered []string          // call ids with a stored result before the crash
		ran      []string          // call ids run again on resume
		results  map[string]string // call id → stored content after resume ("" = the tool's real result)
	}{
		{
			name: "cut during a mutation", calls: []chat.ToolCall{call("a", "mine", `{}`)},
			results: map[string]string{"a": InterruptedResult},
		},
		{
			name: "cut during a read, a mutation planned after it", calls: []chat.ToolCall{call("a", "get_status", `{}`), call("b", "mine", `{}`)},
			ran: []string{"a", "b"}, results: map[string]string{"a": "", "b": ""},
		},
		{
			name:  "cut during a mutation, a read and a mutation planned after it",
			calls: []chat.ToolCall{call("a", "sell", `{}`), call("b", "get_status", `{}`), call("c", "mine", `{}`)},
			ran:   []string{"b"}, results: map[string]string{"a": InterruptedResult, "b": "", "c": NotRunResult},
		},
		{
			name: "first call answered, cut during the second", calls: []chat.ToolCall{call("a", "get_status", `{}`), call("b", "sell", `{}`)},
			answered: []string{"a"}, results: map[string]string{"b": InterruptedResult},
		},
		// MCP v2 (issue 29): one tool, spacemolt, reads and moves; its action decides.
		{
			name: "v2: cut during a read action", v2: true, calls: []chat.ToolCall{call("a", "spacemolt", `{"action":"get_status"}`)},
			ran: []string{"a"}, results: map[string]string{"a": ""},
		},
		{
			name: "v2: cut during a mutation action, a read and a mutation planned after it", v2: true,
			calls: []chat.ToolCall{call("a", "spacemolt", `{"action":"travel","id":"main_belt"}`), call("b", "spacemolt", `{"action":"get_status"}`),
				call("c", "spacemolt", `{"action":"mine"}`)},
			ran: []string{"b"}, results: map[string]string{"a": InterruptedResult, "b": "", "c": NotRunResult},
		},
		{
			name: "v2: an action that is not a string is no read", v2: true, calls: []chat.ToolCall{call("a", "spacemolt", `{"action":["get_status"]}`)},
			results: map[string]string{"a": InterruptedResult},
		},
		{
			name: "v2: the tool without actions", v2: true, calls: []chat.ToolCall{call("a", "spacemolt_catalog", `{"type":"items"}`)},
			ran: []string{"a"}, results: map[string]string{"a": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
				h.tools.v2 = tc.v2
				ctx := context.Background()
				if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleUser, Source: SourceBroadcast, Content: "Mine and sell."}}); err != nil {
					t.Fatal(err)
				}
				asst, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleAssistant, Source: SourceLLM, ToolCalls: tc.calls, IdempotencyKey: "llm:" + testID + ":1"}})
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range tc.answered {
					if _, err := h.store.Append(ctx, testID, []NewMemory{{Role: chat.RoleTool, Source: SourceTool, Content: "stored before the crash",
						ToolCallID: id, ToolName: "get_status", IdempotencyKey: fmt.Sprintf("tool:%s:%d:%s", testID, asst[0].Seq, id)}}); err != nil {
						t.Fatal(err)
					}
				}
				h.start()
				h.eventually("the model asked", func() bool { return h.provider.count() >= 1 })
				h.stop()

				var ran []string
				for _, c := range h.tools.called() {
					ran = append(ran, c.ID)
				}
				if strings.Join(ran, ",") != strings.Join(tc.ran, ",") {
					t.Errorf("calls run again = %v, want %v", ran, tc.ran)
				}
				got := map[string]int{}
				for _, m := range h.store.all(testID) {
					if m.Role != chat.RoleTool {
						continue
					}
					got[m.ToolCallID]++
					want, resumed := tc.results[m.ToolCallID]
					if !resumed {
						continue
					}
					if want != "" && m.Content != want || want == "" && !strings.HasPrefix(m.Content, `{`) {
						t.Errorf("result of %s = %q, want %q", m.ToolCallID, m.Content, cmpOr(want, "the tool's result"))
					}
					if key := fmt.Sprintf("tool:%s:%d:%s", testID, asst[0].Seq, m.ToolCallID); m.IdempotencyKey != key {
						t.Errorf("result of %s has key %q, want %q", m.ToolCallID, m.IdempotencyKey, key)
					}
				}
				for _, c := range tc.calls {
					if got[c.ID] != 1 {
						t.Errorf("call %s answered %d times, want once", c.ID, got[c.ID])
					}
				}
				if n := countSource(h.store.all(testID), SourceNudge); n != 0 {
					t.Errorf("%d nudges stored: a resumed turn is not a new autonomous turn", n)
				}
			})
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A call that failed in transport (the game unreachable mid-call) may have been executed by the game: after the
// errored backoff the turn resumes and the mutation is answered "result unknown" instead of being sent again.
func TestFailedMutationIsNotRetriedBlindly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			if n == 0 {
				return reply("", call("a", "sell", `{"item_id":"iron_ore","quantity":5}`)), nil
			}
			return reply("checked"), nil
		}
		h.tools.failOnce = map[string]error{"sell": fmt.Errorf("POST /mcp: context deadline exceeded")}
		h.start()
		h.eventually("the model asked again after the failure", func() bool { return h.provider.count() >= 2 })
		if got := h.tools.called(); len(got) != 1 {
			t.Errorf("sell sent %d times, want once", len(got))
		}
		ms := h.store.all(testID)
		if len(ms) < 3 || ms[2].Role != chat.RoleTool || ms[2].ToolCallID != "a" || ms[2].Content != InterruptedResult {
			t.Fatalf("memories = %+v, want the sell answered with the interrupted result", ms)
		}
	})
}

// Delete ends the actor; its tool session is closed.
func TestDeleteEndsActor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.start()
		h.eventually("one turn", func() bool { return h.actor.Status().Turns == 1 })
		h.store.delete(testID)
		h.actor.Wake(WakeDelete)
		select {
		case <-h.done:
			h.cancel = nil
		case <-time.After(2 * time.Second):
			t.Fatal("actor still running after delete")
		}
		if h.tools.closes != 1 {
			t.Errorf("tool session closes = %d, want 1", h.tools.closes)
		}
	})
}

// LESSONS 8: no turn without tools. A failing tool list errors the mysis (retried), and the LLM is never called
// without tools (the fake provider fails the test if it is).
func TestNoTurnWithoutTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.tools.setPrepareErr(fmt.Errorf("list tools: connection refused"))
		h.start()
		h.eventually("errored", func() bool { return strings.Contains(h.store.get(testID).StateReason, "connection refused") })
		if h.provider.count() != 0 {
			t.Fatal("LLM called before the tool list loaded")
		}
		h.tools.setPrepareErr(nil)
		h.eventually("turn with tools", func() bool { return h.provider.count() >= 1 })
	})
}

// A commander message arriving while the mysis is running opens the next turn with RESET, immediately (the wake
// cuts the pause), and the counter goes back to 0.
func TestDirectMessageDuringPauseResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.start()
		h.eventually("first nudge turn", func() bool { return h.actor.Status().Turns == 1 })
		if c := h.store.get(testID).EncouragementCount; c != 1 {
			t.Fatalf("count = %d, want 1", c)
		}
		if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "Go mine."}}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeDirect)
		h.eventually("second turn", func() bool { return h.actor.Status().Turns == 2 })
		if c := h.store.get(testID).EncouragementCount; c != 0 {
			t.Errorf("count = %d after a direct message, want 0", c)
		}
		if got := h.composer.autonomousCalls(); got != 1 {
			t.Errorf("autonomous composes = %d, want 1 (the direct turn is not autonomous)", got)
		}
	})
}

// Where a turn resumes after a crash, a lease move or a stop.
func TestFindResumePoint(t *testing.T) {
	rp := findResumePoint([]Memory{
		{Seq: 1, Role: chat.RoleUser, Source: SourceBroadcast},
		{Seq: 2, Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call("a", "mine", "{}"), call("b", "sell", "{}")}},
		{Seq: 3, Role: chat.RoleTool, ToolCallID: "a"},
	})
	if !rp.pending || len(rp.unanswered) != 1 || rp.unanswered[0].ID != "b" || rp.assistantSeq != 2 {
		t.Errorf("resume point = %+v", rp)
	}
	for _, tc := range []struct {
		name string
		ms   []Memory
		want bool
	}{
		{"empty", nil, false},
		{"final answer", []Memory{{Role: chat.RoleUser}, {Role: chat.RoleAssistant, Content: "done"}}, false},
		{"prompt waiting", []Memory{{Role: chat.RoleAssistant, Content: "done"}, {Role: chat.RoleUser, Source: SourceDirect}}, true},
		{"nudge stored, LLM failed", []Memory{{Role: chat.RoleUser, Source: SourceNudge}}, true},
	} {
		if got := findResumePoint(tc.ms).pending; got != tc.want {
			t.Errorf("%s: pending = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A graceful shutdown (Stop) lets the in-flight LLM call finish and be stored, then ends Run without running its
// tools (answered "not executed", so the next owner finds a complete loop); the stored state is left running for
// the next owner.
func TestGracefulStopEndsAtSafePoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.provider.gate = make(chan struct{})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			return reply("", call(fmt.Sprintf("c%d", n), "mine", `{}`)), nil
		}
		h.start()
		h.eventually("LLM in flight", func() bool { return h.provider.count() == 1 })
		h.actor.Stop()
		h.provider.gate <- struct{}{}
		select {
		case <-h.done:
			h.cancel = nil
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return after Stop")
		}
		if ms := h.store.all(testID); len(ms) != 3 || ms[2].Content != NotRunResult {
			t.Errorf("memories = %+v, want nudge + assistant + its call answered as not executed", ms)
		}
		if len(h.tools.called()) != 0 || h.state() != StateRunning {
			t.Errorf("after graceful stop: tools=%v state=%s", h.tools.called(), h.state())
		}
	})
}

// A direct message stored while the model is writing its final answer is not buried under that answer: the
// answer is discarded and the model is asked again with the message in view.
func TestDirectMessageDuringFinalAnswerIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.provider.gate = make(chan struct{})
		h.start()
		h.eventually("LLM in flight", func() bool { return h.provider.count() == 1 })
		if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "New orders."}}); err != nil {
			t.Fatal(err)
		}
		h.actor.Wake(WakeDirect)
		h.provider.gate <- struct{}{}
		h.eventually("asked again", func() bool { return h.provider.count() == 2 })
		h.provider.gate <- struct{}{}
		h.eventually("answered", func() bool { return h.actor.Status().Turns >= 1 })
		reqs := h.provider.requests()
		if last := reqs[1].Messages[len(reqs[1].Messages)-1]; !strings.HasSuffix(last.Content, "New orders.") {
			t.Errorf("second request ends with %q, want the direct message", last.Content)
		}
		ms := h.store.all(testID)
		if ms[1].Content != "New orders." || ms[2].Role != chat.RoleAssistant || ms[2].IdempotencyKey != "llm:"+testID+":2" {
			t.Errorf("the direct message is not followed by an answer that saw it: %+v", ms[:3])
		}
	})
}

// Yield (the lease manager handing the mysis to another replica) lets the current turn finish its tool loop — the
// call runs and the model gives its final answer — and only then ends Run: nothing is cut or answered "not run".
func TestYieldEndsAtTurnBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.provider.gate = make(chan struct{})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			if n == 0 {
				return reply("", call("c0", "mine", `{}`)), nil
			}
			return reply("mined"), nil
		}
		h.start()
		h.eventually("LLM in flight", func() bool { return h.provider.count() == 1 })
		h.actor.Yield()
		h.provider.gate <- struct{}{}
		h.eventually("asked again after the tool", func() bool { return h.provider.count() == 2 })
		h.provider.gate <- struct{}{}
		select {
		case <-h.done:
			h.cancel = nil
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return after the yielded turn ended")
		}
		if got := h.tools.called(); len(got) != 1 {
			t.Errorf("tools run %v, want the one call of the turn", got)
		}
		ms := h.store.all(testID)
		for _, m := range ms {
			if m.Content == NotRunResult {
				t.Errorf("a call was answered as not run: %+v", ms)
			}
		}
		if last := ms[len(ms)-1]; last.Role != chat.RoleAssistant || last.Content != "mined" {
			t.Errorf("last memory %+v, want the turn's final answer", last)
		}
	})
}

// A mysis configured onto another SpaceMolt endpoint (issue 29: v1 or v2 per mysis) plays it from its next turn: the
// actor closes its tool session and opens one for the new endpoint, whose tool list the next request carries.
func TestEndpointChangeOpensANewToolSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.start()
		h.eventually("a turn on the swarm's endpoint", func() bool { return h.actor.Status().Turns >= 1 })
		h.tools.mu.Lock()
		h.tools.v2 = true // the session opened next lists the v2 tools
		h.tools.mu.Unlock()
		h.store.setEndpoint(testID, "v2")
		h.actor.Wake(WakeConfigure)
		h.eventually("a turn on v2", func() bool { return h.actor.Status().Turns >= 2 })
		h.stop()
		if got := h.tools.openedFor(); strings.Join(got, ",") != ",v2" {
			t.Fatalf("sessions opened for endpoints %q, want the swarm's, then v2", got)
		}
		h.tools.mu.Lock()
		closes := h.tools.closes
		h.tools.mu.Unlock()
		if closes < 1 {
			t.Errorf("%d sessions closed: the old endpoint's session was left open", closes)
		}
		reqs := h.provider.requests()
		last := reqs[len(reqs)-1]
		if !slices.ContainsFunc(last.Tools, func(t llm.Tool) bool { return t.Name == "spacemolt" }) {
			t.Errorf("the turn after the change sent tools %v, want the v2 session's", last.Tools)
		}
	})
}
