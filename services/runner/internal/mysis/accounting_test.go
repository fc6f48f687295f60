package mysis

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// fakeSpend stops every call while limited; it prices each call at 7 nanodollars.
type fakeSpend struct {
	mu      sync.Mutex
	limited bool
	checks  int
	// counted counts checks on counts read with the composition (CheckCounted).
	counted int
}

func (f *fakeSpend) set(limited bool) {
	f.mu.Lock()
	f.limited = limited
	f.mu.Unlock()
}

func (f *fakeSpend) Check(_ context.Context, _ Mysis, _ int) (*SpendStop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	if f.limited {
		return &SpendStop{Reason: SpendReasonPrefix + "$2.00 per day, resets 00:00 UTC", Scope: "mysis", Until: time.Now().Add(time.Hour)}, nil
	}
	return nil, nil
}

func (f *fakeSpend) CheckCounted(m Mysis, tokens int, _ SpendCounts) (*SpendStop, error) {
	f.mu.Lock()
	f.counted++
	f.mu.Unlock()
	return f.Check(context.Background(), m, tokens)
}

func (f *fakeSpend) Cost(string, string, llm.Usage) int64 { return 7 }

// TestSpendLimitIdlesAndResumes: at a limit no call is made, the mysis idles with the limit as reason and an event;
// a wake after the limit is lifted resumes it, and its reply is stored.
func TestSpendLimitIdlesAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning, Provider: "fake", Model: "m"}, Config{})
		sp := &fakeSpend{limited: true}
		h.actor.deps.Spend = sp
		h.start()
		h.eventually("idle by the spend limit", func() bool {
			m := h.store.get(testID)
			return m.State == StateIdle && strings.HasPrefix(m.StateReason, SpendReasonPrefix)
		})
		if n := h.provider.count(); n != 0 {
			t.Fatalf("%d LLM calls made at the limit", n)
		}
		if evs := h.events.kinds(EventSpendLimited); len(evs) != 1 || evs[0].Message != "mysis" || evs[0].Reason != h.store.get(testID).StateReason {
			t.Fatalf("spend events %+v", evs)
		}
		sp.mu.Lock()
		counted := sp.counted
		sp.mu.Unlock()
		if counted != 1 {
			t.Fatalf("%d checks on the counts read with the composition, want 1 (the turn's check reads nothing itself)", counted)
		}
		sp.set(false)
		h.actor.Wake(WakeConfigure)
		h.eventually("resumed after the limit was lifted", func() bool { return h.provider.count() > 0 })
		h.eventually("an assistant reply stored", func() bool {
			for _, m := range h.store.all(testID) {
				if m.Role == "assistant" {
					return true
				}
			}
			return false
		})
	})
}

type fakeCallLog struct {
	mu    sync.Mutex
	calls []LlmCall
}

func (f *fakeCallLog) RecordCalls(_ context.Context, _ string, calls []LlmCall) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, calls...)
	return nil
}

func (f *fakeCallLog) get() []LlmCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LlmCall(nil), f.calls...)
}

// TestFailedCallIsRecorded: a call that fails after retries is recorded alone, with its error and retry count;
// the mysis errors (and retries later) as before.
func TestFailedCallIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning, Provider: "fake", Model: "m"}, Config{})
		log := &fakeCallLog{}
		h.actor.deps.Calls = log
		h.provider.script = func(int, llm.Request) (llm.Response, error) {
			return llm.Response{}, &llm.RetriedError{Retries: 3, Err: &llm.StatusError{Provider: "fake", StatusCode: 503, Message: "overloaded"}}
		}
		h.start()
		h.eventually("the failed call recorded", func() bool { return len(log.get()) > 0 })
		c := log.get()[0]
		if c.Retries != 3 || !strings.Contains(c.Error, "HTTP 503") || c.Provider != "fake" || c.Model != "m" || len(c.CallID) != 36 || c.StartedAt.IsZero() {
			t.Fatalf("recorded %+v", c)
		}
		h.eventually("errored", func() bool {
			for _, ev := range h.events.kinds(EventStateChanged) {
				if ev.To == StateErrored {
					return true
				}
			}
			return false
		})
	})
}
