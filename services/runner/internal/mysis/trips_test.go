package mysis

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// The race the conditional append closes: a commander message stored after the model's final answer was produced
// but before it is appended (where a separate "did a prompt arrive?" read could not see it). The store refuses the
// answer in the append itself, the paid call is recorded alone and the model is asked again with the message in
// view; the message is answered by a reply that saw it.
func TestDirectMessageRacingTheFinalAnswerAppendIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		var once sync.Once
		h.store.beforeAppend = func(ms []NewMemory) {
			if ms[0].Role != chat.RoleAssistant || len(ms[0].ToolCalls) > 0 {
				return
			}
			once.Do(func() {
				if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "New orders."}}); err != nil {
					t.Error(err)
				}
				h.actor.Wake(WakeDirect)
			})
		}
		h.start()
		h.eventually("answered", func() bool { return h.actor.Status().Turns >= 1 })
		reqs := h.provider.requests()
		if len(reqs) < 2 {
			t.Fatalf("LLM calls = %d, want the answer discarded and the model asked again", len(reqs))
		}
		if last := reqs[1].Messages[len(reqs[1].Messages)-1]; !strings.HasSuffix(last.Content, "New orders.") {
			t.Errorf("second request ends with %q, want the direct message", last.Content)
		}
		ms := h.store.all(testID)
		if len(ms) < 3 || ms[0].Source != SourceNudge || ms[1].Content != "New orders." || ms[2].Role != chat.RoleAssistant || ms[2].IdempotencyKey != "llm:"+testID+":2" {
			t.Fatalf("want nudge, direct message, then an answer that saw it (key llm:%s:2); got %+v", testID, ms)
		}
	})
}

// A nudge and its encouragement count are one conditional append (no separate SetMysisState), and after the actor's
// own final answer the next turn starts without reading memories: only the first turn reads where it stands.
func TestNudgeAndCountInOneCallAndNoReadAfterOwnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		readsAtThirdCall := make(chan int, 1)
		h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
			if n == 2 {
				reads, _, _ := h.store.counters()
				readsAtThirdCall <- reads
			}
			return reply("ok"), nil
		}
		h.start()
		h.eventually("idle", func() bool { return h.state() == StateIdle })
		if got := <-readsAtThirdCall; got != 1 {
			t.Errorf("memory reads before the third turn's LLM call = %d, want 1 (the first turn only)", got)
		}
		_, stateCalls, cond := h.store.counters()
		// Three nudges, each with its count, and three final answers, each conditional; one SetMysisState: idle.
		if cond != 6 || stateCalls != 1 {
			t.Errorf("conditional appends = %d (want 6), SetMysisState calls = %d (want 1: the idle transition)", cond, stateCalls)
		}
		if m := h.store.get(testID); m.EncouragementCount != 3 || countSource(h.store.all(testID), SourceNudge) != 3 {
			t.Errorf("count = %d, nudges = %d; want 3 and 3", m.EncouragementCount, countSource(h.store.all(testID), SourceNudge))
		}
	})
}

// A state change that lands between the composition and the nudge (a stop) fails the nudge's compare-and-set: the
// turn is interrupted with nothing stored and no LLM call, as before the nudge and the count became one call.
func TestStopBeforeNudgeInterruptsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{})
		h.store.beforeAppend = func(ms []NewMemory) {
			if ms[0].Source == SourceNudge {
				if _, err := h.store.SetState(context.Background(), testID, StateChange{To: StateStopped, Reason: "stopped by the commander"}); err != nil {
					t.Error(err)
				}
			}
		}
		h.start()
		h.eventually("stopped and seen", func() bool { return h.state() == StateStopped && h.actor.Status().State == StateStopped })
		h.stop()
		if n := h.provider.count(); n != 0 {
			t.Errorf("LLM calls = %d, want 0", n)
		}
		if ms := h.store.all(testID); len(ms) != 0 {
			t.Errorf("stored %+v, want nothing", ms)
		}
	})
}
