package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// gameActions are the SpaceMolt tools the autopilot calls that change the game.
var gameActions = map[string]bool{"undock": true, "travel": true, "mine": true, "dock": true, "sell": true, "refuel": true}

// TestReplicaCrashTakeover: replica A (the runner binary, a separate process) plays four autopilot myses against
// the simulator; replica B (in-process) runs alongside with nothing to do. A is killed with SIGKILL while a mysis
// is inside a game action: nothing is released, nothing is stopped at a safe point. B must take every mysis over
// within the lease TTL and keep playing, and every history must come out whole: what A stored is all still there
// (nothing lost), seq gapless, idempotency keys unique, every tool call answered exactly once, no second answer
// to the same prompt or iteration — and the action A was cut in is not executed again but answered "result
// unknown" (README "Cut tool calls").
func TestReplicaCrashTakeover(t *testing.T) {
	const ttl = 3 * time.Second
	// Game actions block until the next tick: with a 300 ms tick a mysis spends most of its time inside one,
	// which is where a crash hurts.
	s := startStack(t, "ZOEA_SIM_TICK=300ms")
	a := s.startRunnerProcess(t, "A", "ZOEA_LEASE_TTL="+ttl.String())
	ctx := context.Background()

	names := []string{"crash-1", "crash-2", "crash-3", "crash-4"}
	ids := map[string]string{}
	for _, name := range names {
		resp, err := a.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = resp.GetStatus().GetMysis().GetId()
	}
	if _, err := s.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Mission: mine iron ore in main_belt and sell it at sol_central."}); err != nil {
		t.Fatal(err)
	}
	owners := func(r runnerv1.SwarmServiceClient) map[string]string {
		out := map[string]string{}
		resp, err := r.ListMyses(ctx, &runnerv1.ListMysesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range resp.GetMyses() {
			out[st.GetMysis().GetName()] = st.GetOwner()
		}
		return out
	}
	s.eventually(t, 60*time.Second, "A plays every mysis (a game action stored for each)", func() bool {
		for _, id := range ids {
			if !slices.ContainsFunc(s.allMemories(t, id), func(m *memoryv1.Memory) bool {
				return m.GetRole() == memoryv1.Role_ROLE_TOOL && gameActions[m.GetToolName()]
			}) {
				return false
			}
		}
		return true
	})

	scanned := make(chan struct{}, 1)
	b := s.startRunnerOpts(t, "B", nil, func(c *app.Config) { c.DefaultProvider = "autopilot"; c.LeaseTTL = ttl },
		app.Options{OnLeaseScan: func() {
			select {
			case scanned <- struct{}{}:
			default:
			}
		}})
	// B acquires nothing: once its first lease scan has tried every mysis, its lease watch shows A holding them all
	// (a lease B took would show B, and stay B: A's renewal cannot take it back).
	select {
	case <-scanned:
	case <-time.After(30 * time.Second):
		t.Fatal("B finished no lease scan within 30s")
	}
	s.eventually(t, 10*time.Second, "B to see A holding every lease", func() bool {
		held := owners(b.swarm)
		for _, owner := range held {
			if owner != "A" {
				return false
			}
		}
		return len(held) == len(names)
	})

	// Kill A the moment one of its myses has stored a game action that has no result yet: the call is in flight.
	newest := func(id string) *memoryv1.Memory {
		resp, err := s.memory.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: 1})
		if err != nil || len(resp.GetMemories()) == 0 {
			return nil
		}
		return resp.GetMemories()[0]
	}
	inAction := func(m *memoryv1.Memory) bool {
		return m != nil && m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) > 0 && gameActions[m.GetToolCalls()[0].GetName()]
	}
	// A publishes an event for each memory it stores, so the check runs right after each one.
	var killed time.Time
	s.eventually(t, 30*time.Second, "a mysis inside a game action", func() bool {
		for _, name := range names {
			if inAction(newest(ids[name])) {
				a.proc.Kill() // SIGKILL
				killed = time.Now()
				return true
			}
		}
		return false
	})
	if !a.proc.Exited() {
		t.Fatal("A is still running after SIGKILL")
	}

	// What A left behind: nothing can change it until B holds the leases.
	before := map[string][]*memoryv1.Memory{}
	cut := map[string]*memoryv1.Memory{} // myses whose newest memory is a game action without its result
	for _, name := range names {
		before[name] = s.allMemories(t, ids[name])
		if m := before[name][len(before[name])-1]; inAction(m) {
			cut[name] = m
		}
	}
	if len(cut) == 0 {
		t.Fatal("after the kill no mysis has an unanswered game action (the action finished between the check and the kill)")
	}
	for name, m := range cut {
		t.Logf("%s cut inside %s (call %s, seq %d)", name, m.GetToolCalls()[0].GetName(), m.GetToolCalls()[0].GetId(), m.GetSeq())
	}

	// Take-over: B holds every lease, then every mysis has a new memory written by B.
	s.eventually(t, ttl+10*time.Second, "B owns every mysis", func() bool {
		for _, owner := range owners(b.swarm) {
			if owner != "B" {
				return false
			}
		}
		return true
	})
	leased := time.Since(killed)
	resumed := map[string]time.Duration{}
	s.eventually(t, ttl+15*time.Second, "every mysis acts again on B", func() bool {
		for _, name := range names {
			if _, ok := resumed[name]; ok {
				continue
			}
			mark := before[name][len(before[name])-1].GetSeq()
			if m := newest(ids[name]); m != nil && m.GetSeq() > mark {
				resumed[name] = time.Since(killed)
			}
		}
		return len(resumed) == len(names)
	})
	var slowest time.Duration
	for _, d := range resumed {
		slowest = max(slowest, d)
	}
	t.Logf("take-over after SIGKILL (lease TTL %v): every lease held by B after %v, every mysis acting again after %v (per mysis: %v)",
		ttl, leased.Round(time.Millisecond), slowest.Round(time.Millisecond), roundAll(resumed))
	// The lease expires at most a TTL after A's last renewal; the watch and the acquisition add little.
	if leased > ttl+2*time.Second {
		t.Errorf("take-over took %v, want within the lease TTL %v (+2s slack for expiry detection)", leased, ttl)
	}

	// B keeps playing: two more complete game actions per mysis.
	for _, name := range names {
		mark := before[name][len(before[name])-1].GetSeq()
		s.eventually(t, 60*time.Second, name+" keeps playing on B", func() bool {
			n := 0
			for _, m := range afterSeq(s.allMemories(t, ids[name]), mark) {
				if m.GetRole() == memoryv1.Role_ROLE_TOOL && gameActions[m.GetToolName()] && m.GetContent() != mysis.InterruptedResult {
					n++
				}
			}
			return n >= 2
		})
	}
	if st := getStatus(t, b, names[0]); st.GetOwner() != "B" {
		t.Errorf("status of %s after the take-over: owner %q, want B", names[0], st.GetOwner())
	}
	b.Stop(t)

	var passwords []string
	for _, name := range names {
		passwords = append(passwords, s.password(t, ids[name]))
	}
	for _, name := range names {
		after := s.checkHistory(t, ids[name], passwords)
		// Nothing A stored was lost or rewritten.
		if len(after) < len(before[name]) {
			t.Errorf("%s: %d memories after the take-over, %d before", name, len(after), len(before[name]))
			continue
		}
		for i, m := range before[name] {
			if !proto.Equal(m, after[i]) {
				t.Errorf("%s: memory seq %d changed across the take-over:\nbefore %v\nafter  %v", name, m.GetSeq(), m, after[i])
			}
		}
		// The cut action was answered exactly once, with "result unknown", and not sent to the game again.
		if c, ok := cut[name]; ok {
			callID := c.GetToolCalls()[0].GetId()
			var answers []string
			for _, m := range after {
				if m.GetRole() == memoryv1.Role_ROLE_TOOL && m.GetToolCallId() == callID {
					answers = append(answers, m.GetContent())
				}
			}
			if len(answers) != 1 || answers[0] != mysis.InterruptedResult {
				t.Errorf("%s: the cut %s call %s was answered %q, want once with the interrupted result", name, c.GetToolCalls()[0].GetName(), callID, answers)
			}
		}
		interrupted, notRun := 0, 0
		for _, m := range after {
			switch m.GetContent() {
			case mysis.InterruptedResult:
				interrupted++
			case mysis.NotRunResult:
				notRun++
			}
		}
		t.Logf("%s: %d memories (%d before the crash), %d answered 'result unknown', %d 'not executed'", name, len(after), len(before[name]), interrupted, notRun)
	}
}

func roundAll(m map[string]time.Duration) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := ""
	for _, n := range names {
		out += fmt.Sprintf("%s=%v ", n, m[n].Round(time.Millisecond))
	}
	return out
}
