package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// fakeClock is the injected clock of spend windows, shared by every replica of a test.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
}

type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock and fires the waiters it passes.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// costlyProbe is the probe reporting fixed usage per call.
type costlyProbe struct{ *probe }

func (p costlyProbe) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := p.probe.Chat(ctx, req)
	resp.Usage = llm.Usage{PromptTokens: 1000, CompletionTokens: 50}
	return resp, err
}

// TestSpendLimitHolds: a per-mysis token limit stops the mysis before the call that would exceed it (no call is
// made), still holds after a runner restart and with two replicas, lifts itself when the day rolls over on the
// injected clock, and lifts when the limit is raised.
func TestSpendLimitHolds(t *testing.T) {
	s := startStack(t)
	p := costlyProbe{newProbe()}
	clock := &fakeClock{now: time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)}
	opts := app.Options{Clock: clock}
	r1 := s.startRunnerOpts(t, "r1", []llm.Provider{p}, nil, opts)
	ctx := context.Background()

	if _, err := r1.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "capped", Model: "scripted", Start: true}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 30*time.Second, "capped idle after its nudges", func() bool {
		m := getStatus(t, r1, "capped").GetMysis()
		return m.GetState() == memoryv1.MysisState_MYSIS_STATE_IDLE && m.GetStateReason() == mysis.IdleReason
	})
	n1 := p.calls.Load()
	used := getStatus(t, r1, "capped").GetUsage()
	if used.GetCalls() != n1 || used.GetPromptTokens() != 1000*n1 || used.GetCompletionTokens() != 50*n1 {
		t.Fatalf("usage %+v after %d calls", used, n1)
	}
	// The day holds what it used plus one token: the next prompt does not fit.
	limit := used.GetPromptTokens() + used.GetCompletionTokens() + 1
	set, err := r1.swarm.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "capped", Limits: []*memoryv1.SpendLimit{
		{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: limit}}})
	if err != nil {
		t.Fatal(err)
	}
	if ls := set.GetStatus().GetSpendLimits(); len(ls) != 1 || ls[0].GetAmount() != limit {
		t.Fatalf("effective limits %+v", ls)
	}
	wantReason := "spend limit reached: " + strconv.FormatInt(limit, 10) + " tokens per day, resets 00:00 UTC"
	limited := func(r *runner) func() bool {
		return func() bool {
			m := getStatus(t, r, "capped").GetMysis()
			return m.GetState() == memoryv1.MysisState_MYSIS_STATE_IDLE && m.GetStateReason() == wantReason
		}
	}
	if _, err := r1.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "capped"}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 30*time.Second, "capped stopped by its limit", limited(r1))
	if got := p.calls.Load(); got != n1 {
		t.Fatalf("the limit let %d more calls through", got-n1)
	}

	// A restart and a second replica read the same counts from the database.
	r1.Stop(t)
	r2 := s.startRunnerOpts(t, "r2", []llm.Provider{p}, nil, opts)
	s.startRunnerOpts(t, "r3", []llm.Provider{p}, nil, opts)
	if _, err := r2.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "capped"}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 30*time.Second, "capped stopped again after a restart, with two replicas", func() bool {
		m := getStatus(t, r2, "capped").GetMysis()
		return m.GetState() == memoryv1.MysisState_MYSIS_STATE_IDLE && m.GetStateReason() == wantReason &&
			getStatus(t, r2, "capped").GetOwner() != ""
	})
	if got := p.calls.Load(); got != n1 {
		t.Fatalf("after the restart the limit let %d more calls through", got-n1)
	}

	// Midnight on the injected clock: the day window rolls over and the mysis resumes by itself, until the new
	// day's count reaches the limit again.
	clock.Advance(3 * time.Hour)
	s.eventually(t, 30*time.Second, "capped resumes after the day rolls over and is stopped again", func() bool {
		return p.calls.Load() > n1 && limited(r2)()
	})
	id := getStatus(t, r2, "capped").GetMysis().GetId()
	// All calls since the rollover are in the new day (the injected clock stamps them).
	day, err := s.memory.GetUsage(ctx, &memoryv1.GetUsageRequest{MysisIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	newDay := day.GetTotal().GetPromptTokens() + day.GetTotal().GetCompletionTokens() - (used.GetPromptTokens() + used.GetCompletionTokens())
	if newDay <= 0 || newDay > limit {
		t.Fatalf("the new day used %d tokens against a limit of %d", newDay, limit)
	}

	// Raising the limit lets it go on at once.
	before := p.calls.Load()
	if _, err := r2.swarm.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "capped", Limits: []*memoryv1.SpendLimit{
		{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: 1 << 40}}}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 30*time.Second, "capped resumes when its limit is raised", func() bool {
		m := getStatus(t, r2, "capped").GetMysis()
		return p.calls.Load() > before && !strings.HasPrefix(m.GetStateReason(), mysis.SpendReasonPrefix)
	})

	// Bad limits are refused with the field named.
	_, err = r2.swarm.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "capped", Limits: []*memoryv1.SpendLimit{{Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: 5}}})
	if err == nil || !strings.Contains(err.Error(), "limits[0].window") {
		t.Fatalf("limit without a window: %v", err)
	}
}
