package mysis

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// LlmCall is the accounting of one LLM call, stored with the assistant memory it produced (NewMemory.LlmCall) or,
// for a failed or discarded call, on its own (CallLog).
type LlmCall struct {
	CallID             string
	Provider           string
	Model              string
	PromptTokens       int64
	CachedPromptTokens int64
	CompletionTokens   int64
	ReasoningTokens    int64
	// ComposedTokens is the composer's own count of the request, so a gap with PromptTokens shows.
	ComposedTokens int64
	Latency        time.Duration
	Retries        int
	// Error is why the call failed ("" for a success, and for a reply that was discarded unstored).
	Error     string
	CostNanos int64
	StartedAt time.Time
	// Discarded marks a paid reply thrown away unstored because a commander prompt arrived while the model wrote it
	// (recorded on its own). The memory service then marks the mysis (Mysis.ReplyDiscarded) until its next final
	// answer, so whichever runner owns the mysis next keeps its next answer.
	Discarded bool
}

// SpendReasonPrefix starts the state reason of a mysis that a spend limit made idle; the actor recognises its own
// stops by it and resumes them when the limit allows.
const SpendReasonPrefix = "spend limit reached: "

// SpendStop says that a spend limit forbids the next call.
type SpendStop struct {
	// Reason is the state reason, e.g. "spend limit reached: $2.00 per day, resets 00:00 UTC".
	Reason string
	// Scope is "mysis" or "swarm".
	Scope string
	// Until is when the limiting window rolls over; zero for a total limit (only raising it helps).
	Until time.Time
}

// SpendCounts are the counts of one spend check as the memory service read them in the compose round trip
// (Composition.Spend). The actor hands them to Spend.CheckCounted without looking inside.
type SpendCounts struct {
	// At is the time whose windows were counted (ComposeRequest.SpendAt); the check judges as of it.
	At time.Time
	// Data holds the counts in the form the Spend implementation reads (usage.Snapshot for usage.Guard); the
	// adapter that read them fills it.
	Data any
}

// Spend prices calls and enforces spend limits. Counts live in the memory service, so every replica and every
// restart sees the same numbers.
type Spend interface {
	// Check reports whether a call for mysis m with a prompt of about promptTokens tokens would exceed a limit
	// (nil: it may go ahead). It reads the counts itself.
	Check(ctx context.Context, m Mysis, promptTokens int) (*SpendStop, error)
	// CheckCounted is Check on counts read with the composition, as fresh as Check's own read would be.
	CheckCounted(m Mysis, promptTokens int, counts SpendCounts) (*SpendStop, error)
	// Cost is the price of a call in billionths of a US dollar.
	Cost(provider, model string, u llm.Usage) int64
}

// CallLog stores calls that produced no memory.
type CallLog interface {
	RecordCalls(ctx context.Context, mysisID string, calls []LlmCall) error
}

// Clock is the time source of spend windows; tests inject one to roll a window over.
type Clock interface {
	Now() time.Time
	// After fires once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Metrics observes the actor for dashboards. Every method must be cheap and never block.
type Metrics interface {
	// StartLLMCall opens the span of one LLM call; end records it (tokens, duration, cost, error).
	StartLLMCall(ctx context.Context, m Mysis) (context.Context, func(LlmCall))
	// TurnDone counts a finished turn; outcome is "ok", "interrupted" or "error".
	TurnDone(ctx context.Context, m Mysis, outcome string)
	// ToolCalled counts one tool call by tool and outcome.
	ToolCalled(ctx context.Context, tool string, isError bool, took time.Duration)
	// Composed records the size of one composed request against its budget.
	Composed(ctx context.Context, m Mysis, tokens, budget int)
	// SpendStopped counts a call a spend limit prevented.
	SpendStopped(ctx context.Context, m Mysis, scope string)
	// ReplyDiscarded counts a paid final answer thrown away because a commander prompt arrived while the model
	// wrote it (at most one per turn; see runTurn).
	ReplyDiscarded(ctx context.Context, m Mysis)
}

type noMetrics struct{}

func (noMetrics) StartLLMCall(ctx context.Context, _ Mysis) (context.Context, func(LlmCall)) {
	return ctx, func(LlmCall) {}
}
func (noMetrics) TurnDone(context.Context, Mysis, string)                 {}
func (noMetrics) ToolCalled(context.Context, string, bool, time.Duration) {}
func (noMetrics) Composed(context.Context, Mysis, int, int)               {}
func (noMetrics) SpendStopped(context.Context, Mysis, string)             {}
func (noMetrics) ReplyDiscarded(context.Context, Mysis)                   {}

// newCallID returns a random UUID (v4): the call's idempotency key in the memory service.
func newCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// callRecord builds a call's accounting from what the provider returned.
func (a *Actor) callRecord(m Mysis, id string, started time.Time, took time.Duration, composed int, resp llm.Response, err error) LlmCall {
	c := LlmCall{
		CallID: id, Provider: m.Provider, Model: m.Model, ComposedTokens: int64(composed), StartedAt: started,
		Latency: took,
	}
	if err != nil {
		// Stored and summed into reports: redacted before the cut, like a state reason.
		c.Error, c.Retries = truncate(a.red().String(err.Error()), 1000), llm.RetriesOf(err)
		return c
	}
	u := resp.Usage
	c.PromptTokens, c.CachedPromptTokens = int64(u.PromptTokens), int64(u.CachedPromptTokens)
	c.CompletionTokens, c.ReasoningTokens = int64(u.CompletionTokens), int64(u.ReasoningTokens)
	c.Retries = resp.Retries
	if a.deps.Spend != nil {
		c.CostNanos = a.deps.Spend.Cost(m.Provider, m.Model, u)
	}
	return c
}

// recordAlone stores a call without a memory (failed or discarded); best effort, it must not fail the turn.
func (a *Actor) recordAlone(ctx context.Context, c LlmCall) {
	if a.deps.Calls == nil {
		return
	}
	if err := a.deps.Calls.RecordCalls(context.WithoutCancel(ctx), a.id, []LlmCall{c}); err != nil {
		a.log.Warn("could not record an LLM call", "call_id", c.CallID, "err", err)
	}
}

// checkSpend asks the spend guard before a call. At a limit the mysis goes idle with the limit as its reason, an
// event is published, and the turn ends without calling the model.
//
// counts, when set, are the counts the composition read in its round trip (ComposeRequest.SpendAt): read just
// before, in the same request that composed, they are as fresh as a read of their own (issue 16).
func (a *Actor) checkSpend(ctx context.Context, m Mysis, promptTokens int, counts *SpendCounts) error {
	if a.deps.Spend == nil {
		return nil
	}
	a.lastPrompt = promptTokens
	var stop *SpendStop
	var err error
	if counts != nil {
		stop, err = a.deps.Spend.CheckCounted(m, promptTokens, *counts)
	} else {
		stop, err = a.deps.Spend.Check(ctx, m, promptTokens)
	}
	if err != nil {
		// Without the counts the call could overspend; the errored state retries with backoff.
		return fmt.Errorf("spend check: %w", err)
	}
	if stop == nil {
		return nil
	}
	a.metrics.SpendStopped(ctx, m, stop.Scope)
	a.log.Info("spend limit reached", "scope", stop.Scope, "reason", stop.Reason, "until", stop.Until)
	a.publish(ctx, Event{Kind: EventSpendLimited, Reason: stop.Reason, Message: stop.Scope, Until: stop.Until})
	a.transition(ctx, StateRunning, StateIdle, stop.Reason, nil)
	return errInterrupted
}

// spendIdle handles an idle mysis that a spend limit stopped: it resumes when the limit allows again (window
// rolled over, limit raised), otherwise it waits for the window's end or a wake. It reports false for any other
// idle mysis.
func (a *Actor) spendIdle(ctx context.Context, m Mysis) bool {
	if !strings.HasPrefix(m.StateReason, SpendReasonPrefix) || a.deps.Spend == nil {
		return false
	}
	a.takeWakes()
	// Checked with the size of the request that was refused: a limit raised a little, but not enough for that
	// request, must not resume the mysis only to stop it again at once, over and over.
	stop, err := a.deps.Spend.Check(ctx, m, a.lastPrompt)
	if err != nil {
		if ctx.Err() == nil {
			a.noteError(ctx, fmt.Errorf("spend check: %w", err))
			a.wait(ctx, a.nextBackoff())
		}
		return true
	}
	if stop == nil {
		a.transition(ctx, StateIdle, StateRunning, "spend limit lifted", nil)
		return true
	}
	if stop.Reason != m.StateReason {
		// Another limit holds now (the day's after the hour's): say so.
		a.transition(ctx, StateIdle, StateIdle, stop.Reason, nil)
	}
	var rollover <-chan time.Time
	if !stop.Until.IsZero() {
		rollover = a.clock.After(max(stop.Until.Sub(a.clock.Now()), 0))
	}
	if a.hasPending() || a.stopping.Load() {
		return true
	}
	select {
	case <-ctx.Done():
	case <-a.sig:
	case <-rollover:
	}
	return true
}
