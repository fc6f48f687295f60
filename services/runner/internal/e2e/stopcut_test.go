package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// TestStopAfterOwnerDiedAnswersCutCalls: the owner of a running mysis dies inside a game action (its lease is left
// to expire, its history ends with calls that have no result) and the commander stops the mysis before any other
// replica has taken it. Every call must still get exactly one result: the replica that takes the stopped mysis's
// lease answers the cut call "result unknown" and the one after it "not executed" without running either, before
// it reports the stop taken in; a later start resumes the mysis without a second answer to any call (issue 26:
// `make chaos` found two autopilot `mine` calls left open after its final StopMysis).
func TestStopAfterOwnerDiedAnswersCutCalls(t *testing.T) {
	// Long enough that a loaded machine's stall cannot let the dead owner's renewed lease lapse before the stop.
	const ttl = 5 * time.Second
	s := startStack(t, "ZOEA_SIM_TICK=300ms")
	ctx := context.Background()

	// The history a runner killed during `mine` leaves: a prompt, the model's three calls, the first answered, the
	// second in flight at the kill, the third never started.
	created, err := s.memory.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "cut-stop", Provider: "autopilot", SystemPrompt: "You are a mysis."})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetMysis().GetId()
	if _, err := s.memory.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: id, State: memoryv1.MysisState_MYSIS_STATE_RUNNING, Reason: "started by commander"}); err != nil {
		t.Fatal(err)
	}
	appendOne := func(m *memoryv1.NewMemory) *memoryv1.Memory {
		t.Helper()
		resp, err := s.memory.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{m}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetMemories()[0]
	}
	prompt := appendOne(&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "Mine iron ore, then sell it."})
	calls := []*memoryv1.ToolCall{
		{Id: "call_status", Name: "get_status", ArgumentsJson: "{}"},
		{Id: "call_mine", Name: "mine", ArgumentsJson: "{}"},
		{Id: "call_sell", Name: "sell", ArgumentsJson: `{"item_id":"iron_ore","quantity":1}`},
	}
	asst := appendOne(&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, ToolCalls: calls,
		IdempotencyKey: fmt.Sprintf("llm:%s:%d", id, prompt.GetSeq())})
	appendOne(&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "call_status", ToolName: "get_status",
		CallArgumentsJson: "{}", Content: `{"player":{"credits":1000}}`, IdempotencyKey: fmt.Sprintf("tool:%s:%d:call_status", id, asst.GetSeq())})

	// The dead owner's lease: held (renewed here) until the stop is recorded, then left to expire as a killed
	// replica's does. No other replica can take the mysis before the stop.
	bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
	defer bcancel()
	deadBus, err := swarmbus.Connect(bctx, s.natsURL, swarmbus.Options{Name: "e2e-dead-owner", LeaseTTL: ttl, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer deadBus.Close()
	dead, err := deadBus.Leases("dead-owner")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dead.Acquire(ctx, id); err != nil || !ok {
		t.Fatalf("the dead owner's lease: acquired %v, %v", ok, err)
	}
	dies, died := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(died)
		tick := time.NewTicker(ttl / 10)
		defer tick.Stop()
		for {
			select {
			case <-dies:
				return
			case <-tick.C:
				if err := dead.Renew(ctx, id); err != nil {
					t.Logf("the dead owner's renewal before the stop: %v (the holder check after the stop decides)", err)
				}
			}
		}
	}()

	b := s.startRunnerOpts(t, "B", nil, func(c *app.Config) { c.DefaultProvider = "autopilot"; c.LeaseTTL = ttl }, app.Options{})
	if _, err := b.swarm.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: id, Reason: "stopped by commander"}); err != nil {
		t.Fatal(err)
	}
	if owner, err := dead.Owner(ctx, id); err != nil || owner != "dead-owner" {
		t.Fatalf("lease holder when the stop was recorded: %q, %v; want the dead owner", owner, err)
	}
	close(dies) // the owner is gone: its lease expires within the TTL
	<-died

	// B takes the stopped mysis over and reports the stop taken in: by then the cut calls are answered.
	s.eventually(t, ttl+20*time.Second, "B's actor to take the stopped mysis in", func() bool {
		st, ok := s.statuses.Get(id)
		return ok && st.Owner == "B" && st.State == mysis.StateStopped
	})
	answers := func() map[string][]string {
		out := map[string][]string{}
		for _, m := range s.allMemories(t, id) {
			if m.GetRole() == memoryv1.Role_ROLE_TOOL {
				out[m.GetToolCallId()] = append(out[m.GetToolCallId()], m.GetContent())
			}
		}
		return out
	}
	want := map[string]string{"call_status": `{"player":{"credits":1000}}`, "call_mine": mysis.InterruptedResult, "call_sell": mysis.NotRunResult}
	got := answers()
	for callID, w := range want {
		if a := got[callID]; len(a) != 1 || a[0] != w {
			t.Errorf("after the stop, call %s answered %q; want once with %q", callID, a, w)
		}
	}
	if t.Failed() {
		for _, m := range s.allMemories(t, id) {
			t.Logf("seq %d %s %s %s: %.80s", m.GetSeq(), m.GetRole(), m.GetSource(), m.GetToolCallId(), m.GetContent())
		}
		t.FailNow()
	}
	s.checkHistory(t, id, nil)
	everyCallAnsweredOnce(t, s.allMemories(t, id))

	// A later start resumes the mysis: it plays again, and no call gets a second answer.
	mark := s.allMemories(t, id)
	markSeq := mark[len(mark)-1].GetSeq()
	if _, err := b.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: id}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 30*time.Second, "the mysis to play again after the start", func() bool {
		st, ok := s.statuses.Get(id)
		if !ok || st.State != mysis.StateRunning {
			return false
		}
		n := 0
		for _, m := range afterSeq(s.allMemories(t, id), markSeq) {
			if m.GetRole() == memoryv1.Role_ROLE_TOOL {
				n++
			}
		}
		return n >= 2
	})
	if _, err := b.swarm.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: id}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 30*time.Second, "the second stop taken in", func() bool {
		st, ok := s.statuses.Get(id)
		return ok && st.State == mysis.StateStopped
	})
	got = answers()
	for callID, w := range want {
		if a := got[callID]; len(a) != 1 || a[0] != w {
			t.Errorf("after the start and a second stop, call %s answered %q; want once with %q", callID, a, w)
		}
	}
	s.checkHistory(t, id, nil)
	everyCallAnsweredOnce(t, s.allMemories(t, id))
}

// everyCallAnsweredOnce asserts that every tool call in ms has exactly one result (checkHistory catches a second
// answer, not a missing one).
func everyCallAnsweredOnce(t *testing.T, ms []*memoryv1.Memory) {
	t.Helper()
	answered := map[string]int{}
	for _, m := range ms {
		if m.GetRole() == memoryv1.Role_ROLE_TOOL {
			answered[m.GetToolCallId()]++
		}
	}
	for _, m := range ms {
		for _, c := range m.GetToolCalls() {
			if n := answered[c.GetId()]; n != 1 {
				t.Errorf("call %s (%s, seq %d) has %d results, want exactly 1", c.GetId(), c.GetName(), m.GetSeq(), n)
			}
		}
	}
}
