package mysis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// resultsOf counts the stored tool results answering the given call ids.
func resultsOf(ms []Memory, ids ...string) int {
	n := 0
	for _, m := range ms {
		for _, id := range ids {
			if m.Role == chat.RoleTool && m.ToolCallID == id {
				n++
			}
		}
	}
	return n
}

// Issue 16, the crash-safety rule: every tool result but the iteration's last is stored before the next call
// starts; the last one is stored by the next compose call (its memory round trip), keyed like any result.
func TestOnlyTheLastToolResultRidesWithTheCompose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
			if n == 0 {
				return reply("", call("c1", "get_status", `{}`), call("c2", "mine", `{}`), call("c3", "sell", `{}`)), nil
			}
			return reply("done"), nil
		}
		storedAtCall := map[string]int{}
		h.tools.onCall = func(c chat.ToolCall) {
			storedAtCall[c.ID] = resultsOf(h.store.all(testID), "c1", "c2", "c3")
		}
		h.start()
		h.eventually("the turn done", func() bool { return h.actor.Status().Turns >= 1 })
		h.stop()
		if storedAtCall["c1"] != 0 || storedAtCall["c2"] != 1 || storedAtCall["c3"] != 2 {
			t.Fatalf("results stored when each call started: %v, want c1:0 c2:1 c3:2", storedAtCall)
		}
		h.composer.mu.Lock()
		appends := h.composer.appends
		h.composer.mu.Unlock()
		if len(appends) != 2 || len(appends[0]) != 0 || len(appends[1]) != 1 {
			t.Fatalf("compose calls carried %v, want nothing, then the last result", appends)
		}
		ms := h.store.all(testID)
		last := appends[1][0]
		if last.ToolCallID != "c3" || last.IdempotencyKey != fmt.Sprintf("tool:%s:%d:c3", testID, ms[1].Seq) || resultsOf(ms, "c3") != 1 {
			t.Fatalf("carried %+v, want c3's result keyed tool:%s:%d:c3, stored once", last, testID, ms[1].Seq)
		}
		if ms[len(ms)-1].Role != chat.RoleAssistant || ms[len(ms)-2].ToolCallID != "c3" {
			t.Fatalf("the answer must follow c3's result: %+v", ms)
		}
		var announced bool
		for _, ev := range h.events.kinds(EventMemoryAppended) {
			if len(ev.Seqs) == 1 && ev.Seqs[0] == ms[len(ms)-2].Seq && ev.Role == chat.RoleTool {
				announced = true
			}
		}
		if !announced {
			t.Error("the result stored by the compose call was not announced")
		}
	})
}

// Every compose passes back the compaction the one before it returned (ComposeRequest.Previous), across the turns
// of one actor, so any composer replica extends the request before; the first knows none.
func TestComposePassesBackThePreviousCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Second})
		h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
			if n%3 == 2 {
				return reply("done"), nil
			}
			return reply("", call(fmt.Sprintf("c%d", n), "get_status", `{}`)), nil
		}
		h.start()
		h.eventually("two turns done", func() bool { return h.actor.Status().Turns >= 2 })
		h.stop()
		h.composer.mu.Lock()
		previous := h.composer.previous
		h.composer.mu.Unlock()
		if len(previous) < 6 {
			t.Fatalf("%d compose calls, want at least 6 (two turns of three)", len(previous))
		}
		for n, p := range previous {
			want := Compaction{}
			if n > 0 {
				want = Compaction{Boundary: int64(n) * 4, Seq: int64(n)*4 + 1} // what call n-1 returned
			}
			if p != want {
				t.Fatalf("compose call %d passed back %+v, want %+v: %+v", n, p, want, previous)
			}
		}
	})
}

// A compose call whose response is lost after the memory service stored the carried result (the runner sees an
// error): the result is appended again under the same key — nothing is written twice — the turn fails, and the
// retried turn finds every call answered, so no call runs again.
func TestLostComposeResponseWritesNothingTwice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool // the failure comes after the rows were stored (lost response) or before (composer down)
	}{{"lost response", true}, {"composer down", false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
				h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
					if n == 0 {
						return reply("", call("c1", "mine", `{}`)), nil
					}
					return reply("done"), nil
				}
				var once sync.Once
				fail := func(n int) error {
					var err error
					if n == 1 {
						once.Do(func() { err = errs.Unavailablef(nil, "composer unreachable") })
					}
					return err
				}
				if tc.after {
					h.composer.after = fail
				} else {
					h.composer.before = fail
				}
				h.start()
				h.eventually("answered after the retry", func() bool {
					ms := h.store.all(testID)
					return len(ms) > 0 && ms[len(ms)-1].Role == chat.RoleAssistant && ms[len(ms)-1].Content == "done"
				})
				h.stop()
				ms := h.store.all(testID)
				if resultsOf(ms, "c1") != 1 || len(h.tools.called()) != 1 {
					t.Fatalf("c1 answered %d times, run %d times; want once and once: %+v", resultsOf(ms, "c1"), len(h.tools.called()), ms)
				}
				for _, m := range ms {
					if m.Content == InterruptedResult {
						t.Fatalf("the stored result was taken for a cut call: %+v", ms)
					}
				}
			})
		})
	}
}

// After its own final answer the actor starts the next turn without GetMysis: the composition reads the record.
// Three autonomous turns and the idle decision cost two GetMysis: the first turn's and the one after idling.
func TestTurnAfterOwnAnswerStartsWithoutGetMysis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.start()
		h.eventually("idle", func() bool { return h.state() == StateIdle && h.actor.Status().State == StateIdle })
		h.stop()
		h.store.mu.Lock()
		gets := h.store.gets
		h.store.mu.Unlock()
		if n := h.provider.count(); n != 3 || gets != 2 {
			t.Fatalf("%d LLM calls and %d GetMysis; want 3 and 2", n, gets)
		}
	})
}

// A stop whose wake was lost, landing in the pause after a turn: the next turn's composition reads the stopped
// state and the turn ends before a nudge is stored or the model is called.
func TestStopWithoutWakeSeenByTheComposition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.provider.script = func(int, llm.Request) (llm.Response, error) {
			if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateStopped, Reason: "stopped by the commander"}); err != nil {
				t.Error(err)
			}
			return reply("ok"), nil
		}
		h.start()
		h.eventually("stopped and seen", func() bool { return h.actor.Status().State == StateStopped })
		h.stop()
		if n := h.provider.count(); n != 1 {
			t.Fatalf("%d LLM calls, want 1 (none after the stop)", n)
		}
		if n := countSource(h.store.all(testID), SourceNudge); n != 1 {
			t.Fatalf("%d nudges, want 1 (none after the stop)", n)
		}
	})
}

// A direct message whose wake was lost, stored in the pause after a turn: the turn that starts from the carried
// record sees a newer memory than its own answer in the composition and starts again from a fresh read, so the
// message is answered (RESET, no nudge on top of it).
func TestPromptWithoutWakeRestartsTheTurnFromAFreshRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.composer.before = func(n int) error {
			if n == 1 {
				_, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "New orders."}})
				return err
			}
			return nil
		}
		h.start()
		h.eventually("the message answered", func() bool { return h.provider.count() >= 2 })
		h.stop()
		ms := h.store.all(testID)
		if len(ms) < 4 || ms[2].Content != "New orders." || ms[3].Role != chat.RoleAssistant {
			t.Fatalf("want nudge, answer, direct message, answer; got %+v", ms)
		}
		h.composer.mu.Lock()
		calls := append([]bool(nil), h.composer.calls...)
		h.composer.mu.Unlock()
		if len(calls) < 3 || !calls[0] || !calls[1] || calls[2] {
			t.Fatalf("compose calls (autonomous) = %v, want true, true (discarded), false", calls)
		}
		h.store.mu.Lock()
		counts := append([]int(nil), h.store.counts...)
		h.store.mu.Unlock()
		if len(counts) < 2 || counts[0] != 1 || counts[1] != 0 {
			t.Fatalf("counts written %v, want 1 (the first nudge), then 0 (reset by the message)", counts)
		}
	})
}

// A composer (or memory service) from before the relay ignores the carried result: the actor stores it on its own
// and composes again, so the model still sees every call answered, once.
func TestComposerWithoutRelayStillGetsTheResultStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		h.composer.noRelay = true
		h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
			if n == 0 {
				return reply("", call("c1", "mine", `{}`)), nil
			}
			return reply("done"), nil
		}
		h.start()
		h.eventually("the turn done", func() bool { return h.actor.Status().Turns >= 1 })
		h.stop()
		ms := h.store.all(testID)
		if resultsOf(ms, "c1") != 1 || len(h.tools.called()) != 1 {
			t.Fatalf("c1 answered %d times, run %d times; want once and once", resultsOf(ms, "c1"), len(h.tools.called()))
		}
		reqs := h.provider.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d LLM calls, want 2", len(reqs))
		}
		if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != chat.RoleTool || last.ToolCallID != "c1" || last.Content != `{"ok":true,"tool":"mine"}` {
			t.Fatalf("second request ends with %+v, want c1's own result", last)
		}
	})
}
