package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

func getStatus(t *testing.T, r *runner, name string) *runnerv1.MysisStatus {
	t.Helper()
	resp, err := r.swarm.GetMysis(context.Background(), &runnerv1.GetMysisRequest{Mysis: name})
	if err != nil {
		t.Fatalf("GetMysis %s: %v", name, err)
	}
	return resp.GetStatus()
}

// afterSeq returns the memories of ms with seq > seq.
func afterSeq(ms []*memoryv1.Memory, seq int64) []*memoryv1.Memory {
	for i, m := range ms {
		if m.GetSeq() > seq {
			return ms[i:]
		}
	}
	return nil
}

func hasToolLoop(ms []*memoryv1.Memory, tool string) bool {
	for i, m := range ms {
		if m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) > 0 && m.GetToolCalls()[0].GetName() == tool {
			for _, r := range ms[i+1:] {
				if r.GetRole() == memoryv1.Role_ROLE_TOOL && r.GetToolCallId() == m.GetToolCalls()[0].GetId() {
					return true
				}
			}
		}
	}
	return false
}

// TestSwarmLifecycle: a started mysis with no orders goes idle after three nudges; a direct message wakes it;
// a broadcast wakes the whole swarm; tool loops are stored structurally; search never crosses myses; no password
// is ever stored; every request sent to the model is valid and carries tools.
func TestSwarmLifecycle(t *testing.T) {
	s := startStack(t)
	p := newProbe()
	r := s.startRunner(t, "r1", []llm.Provider{p}, nil)
	ctx := context.Background()

	solo, err := r.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "solo", Model: "scripted", Start: true})
	if err != nil {
		t.Fatal(err)
	}
	soloID := solo.GetStatus().GetMysis().GetId()
	s.eventually(t, 30*time.Second, "solo idle after three nudges", func() bool {
		m := getStatus(t, r, "solo").GetMysis()
		return m.GetState() == memoryv1.MysisState_MYSIS_STATE_IDLE && m.GetStateReason() == mysis.IdleReason
	})
	ms := s.allMemories(t, soloID)
	nudges := 0
	for _, m := range ms {
		if m.GetSource() == memoryv1.Source_SOURCE_NUDGE {
			nudges++
		}
	}
	if nudges != 3 || !hasToolLoop(ms, "get_status") {
		t.Fatalf("solo: %d nudges (want 3), tool loop stored: %v", nudges, hasToolLoop(ms, "get_status"))
	}

	// A direct message wakes the idle mysis.
	lastSeq := ms[len(ms)-1].GetSeq()
	if _, err := s.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "solo", Content: "Report your status, captain."}); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, 20*time.Second, "solo answers the direct message", func() bool {
		return hasToolLoop(afterSeq(s.allMemories(t, soloID), lastSeq), "get_status")
	})

	// Two more myses, idle; a broadcast wakes all three.
	ids := map[string]string{"solo": soloID}
	for _, name := range []string{"alpha", "beta"} {
		resp, err := r.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: name, Model: "scripted"})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = resp.GetStatus().GetMysis().GetId()
	}
	before := map[string]int64{}
	for name, id := range ids {
		all := s.allMemories(t, id)
		if len(all) > 0 {
			before[name] = all[len(all)-1].GetSeq()
		}
	}
	if _, err := s.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Mission: check your status and report to the swarm."}); err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		s.eventually(t, 20*time.Second, name+" answers the broadcast", func() bool {
			return hasToolLoop(afterSeq(s.allMemories(t, id), before[name]), "get_status")
		})
	}
	s.eventually(t, 10*time.Second, "live status with credits", func() bool {
		st := getStatus(t, r, "alpha")
		return st.GetOwner() == "r1" && st.GetCredits() >= 0 && st.GetTurns() > 0 && st.GetLastAction() != ""
	})

	// Search isolation (LESSONS 6): beta searching alpha's username finds nothing of alpha's; alpha finds its own
	// get_status result.
	alphaUser := getStatus(t, r, "alpha").GetMysis().GetAccountUsername()
	if alphaUser == "" {
		t.Fatal("alpha has no account username")
	}
	searchResult := func(name string) []map[string]any {
		t.Helper()
		id := ids[name]
		from := s.allMemories(t, id)
		mark := from[len(from)-1].GetSeq()
		// Stopped first, so the order cannot race with the mysis's own mission turns; a start resumes it and the
		// pending direct message opens the next turn.
		if _, err := r.swarm.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: name}); err != nil {
			t.Fatal(err)
		}
		s.eventually(t, 10*time.Second, name+" stopped", func() bool {
			return getStatus(t, r, name).GetMysis().GetState() == memoryv1.MysisState_MYSIS_STATE_STOPPED
		})
		// The actor reports the stop in its live status once it has taken it in, after its in-flight LLM call or
		// tool (the safe point).
		s.eventually(t, 10*time.Second, name+"'s actor at its safe point", func() bool {
			st, ok := s.statuses.Get(id)
			return ok && st.State == mysis.StateStopped
		})
		mark = s.allMemories(t, id)[len(s.allMemories(t, id))-1].GetSeq()
		if _, err := s.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: name, Content: "SEARCH: " + alphaUser}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: name}); err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		defer func() {
			if out == nil {
				for _, m := range afterSeq(s.allMemories(t, id), mark-2) {
					t.Logf("%s seq %d turn %d %s %s %s key=%s calls=%v: %.100s", name, m.GetSeq(), m.GetTurn(), m.GetRole(), m.GetSource(), m.GetToolName(), m.GetIdempotencyKey(), m.GetToolCalls(), m.GetContent())
				}
			}
		}()
		s.eventually(t, 20*time.Second, name+" search result", func() bool {
			for _, m := range afterSeq(s.allMemories(t, id), mark) {
				if m.GetRole() == memoryv1.Role_ROLE_TOOL && m.GetToolName() == "zoea_search_messages" {
					var res struct {
						Results []map[string]any `json:"results"`
					}
					if err := json.Unmarshal([]byte(m.GetContent()), &res); err != nil {
						t.Fatalf("search result is not JSON: %s", m.GetContent())
					}
					out = res.Results
					return true
				}
			}
			return false
		})
		for _, h := range out {
			mid := int64(h["memory_id"].(float64))
			if _, err := s.memory.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: id, MemoryId: mid}); err != nil {
				t.Errorf("%s's search returned memory %d that is not its own: %v", name, mid, err)
			}
		}
		return out
	}
	// The memory service indexes tool results in the background (ZOEA_FTS_INDEX_INTERVAL): wait until alpha's
	// get_status result is searchable, so beta's search below could find it were isolation broken, and alpha's will.
	s.eventually(t, 10*time.Second, "alpha's get_status result searchable", func() bool {
		resp, err := s.memory.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: ids["alpha"], Query: alphaUser, Limit: 5})
		if err != nil {
			t.Fatalf("SearchMessages: %v", err)
		}
		for _, h := range resp.GetHits() {
			if h.GetMemory().GetToolName() == "get_status" {
				return true
			}
		}
		return false
	})
	for _, h := range searchResult("beta") {
		if h["tool"] == "get_status" {
			t.Errorf("beta's search for %q returned a get_status result: %v", alphaUser, h)
		}
	}
	found := false
	for _, h := range searchResult("alpha") {
		if h["tool"] == "get_status" {
			found = true
		}
	}
	if !found {
		t.Errorf("alpha's search for its own username %q found no get_status result", alphaUser)
	}

	r.Stop(t)
	for _, id := range ids {
		s.checkHistory(t, id, []string{s.password(t, ids["solo"]), s.password(t, ids["alpha"]), s.password(t, ids["beta"])})
	}
	if p.invalid.Load() != 0 || p.noTools.Load() != 0 {
		t.Errorf("model got %d invalid requests and %d without tools", p.invalid.Load(), p.noTools.Load())
	}
}

// TestReplicaHandover: a replica joins one that runs six myses and gets half of them (moved at turn boundaries);
// then the first stops mid-turn and the other takes its myses over within the lease TTL, and they keep playing,
// with no memory lost or duplicated.
func TestReplicaHandover(t *testing.T) {
	s := startStack(t)
	p := newProbe()
	p.delay = 100 * time.Millisecond // turns are long enough to be cut in the middle
	// r1 starts alone and leases every mysis; r2 joins afterwards and is handed its fair share, three.
	r1 := s.startRunner(t, "r1", []llm.Provider{p}, nil)
	ctx := context.Background()

	ids := map[string]string{}
	for _, name := range []string{"m1", "m2", "m3", "m4", "m5", "m6"} {
		resp, err := r1.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: name, Model: "scripted", Start: true})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = resp.GetStatus().GetMysis().GetId()
	}
	if _, err := s.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Mission: keep checking your status."}); err != nil {
		t.Fatal(err)
	}
	owners := func(r *runner) map[string]string {
		out := map[string]string{}
		resp, err := r.swarm.ListMyses(ctx, &runnerv1.ListMysesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range resp.GetMyses() {
			out[st.GetMysis().GetName()] = st.GetOwner()
		}
		return out
	}
	s.eventually(t, 20*time.Second, "r1 owns all six", func() bool {
		o := owners(r1)
		for name := range ids {
			if o[name] != "r1" {
				return false
			}
		}
		return true
	})
	r2 := s.startRunner(t, "r2", []llm.Provider{p}, nil)
	s.eventually(t, 20*time.Second, "three myses on each replica, all playing", func() bool {
		o := owners(r2)
		n := 0
		for name, id := range ids {
			if o[name] == "" || len(s.allMemories(t, id)) < 4 {
				return false
			}
			if o[name] == "r1" {
				n++
			}
		}
		return n == 3
	})
	o := owners(r2)
	var fromR1 []string
	for name, owner := range o {
		if owner == "r1" {
			fromR1 = append(fromR1, name)
		}
	}
	t.Logf("owners before the handover: %v", o)
	if len(fromR1) != len(ids)/2 {
		t.Fatalf("r1 owned %d of %d myses before the handover (owners %v); want its fair share", len(fromR1), len(ids), o)
	}
	marks := map[string]int64{}
	for _, name := range fromR1 {
		ms := s.allMemories(t, ids[name])
		marks[name] = ms[len(ms)-1].GetSeq()
	}
	stopped := time.Now()
	r1.Stop(t)
	s.eventually(t, 3*time.Second+5*time.Second, "r2 owns every mysis", func() bool {
		for _, owner := range owners(r2) {
			if owner != "r2" {
				return false
			}
		}
		return true
	})
	t.Logf("handover took %v", time.Since(stopped))
	for _, name := range fromR1 {
		s.eventually(t, 20*time.Second, name+" keeps playing on r2", func() bool {
			return hasToolLoop(afterSeq(s.allMemories(t, ids[name]), marks[name]), "get_status")
		})
	}
	r2.Stop(t)
	for _, id := range ids {
		s.checkHistory(t, id, nil)
	}
	if p.invalid.Load() != 0 || p.noTools.Load() != 0 {
		t.Errorf("model got %d invalid requests and %d without tools", p.invalid.Load(), p.noTools.Load())
	}
}

// TestAutopilotSwarmEarnsCredits: three autopilot myses get a broadcast mission, play the starter loop against the
// simulator and earn credits (scored by the simulator's /admin/stats); their memories hold the tool loops.
func TestAutopilotSwarmEarnsCredits(t *testing.T) { autopilotSwarmEarns(t, "") }

// TestAutopilotSwarmEarnsCreditsOnMCPv2 is the same swarm playing the simulator's /mcp/v2 (16 action tools).
func TestAutopilotSwarmEarnsCreditsOnMCPv2(t *testing.T) { autopilotSwarmEarns(t, "/v2") }

func autopilotSwarmEarns(t *testing.T, pathSuffix string) {
	s := startStack(t)
	r := s.startRunner(t, "r1", nil, func(c *app.Config) {
		c.DefaultProvider = "autopilot"
		c.SpaceMoltURL = s.sim.MCPURL() + pathSuffix
	})
	ctx := context.Background()
	ids := map[string]string{}
	for _, name := range []string{"miner-a", "miner-b", "miner-c"} {
		resp, err := r.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = resp.GetStatus().GetMysis().GetId()
	}
	if _, err := s.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: "Mission: mine iron ore in main_belt and sell it at sol_central."}); err != nil {
		t.Fatal(err)
	}
	var stats simStats
	s.eventually(t, 120*time.Second, "every mysis has earned credits", func() bool {
		stats = s.simStats(t)
		earned := 0
		for _, p := range stats.Players {
			if p.CreditsEarned > 0 {
				earned++
			}
		}
		return earned == len(ids)
	})
	t.Logf("simulator totals: %+v", stats.Totals)
	// The admin API shows where each mysis is and what its ship holds, from the game's own results.
	s.eventually(t, 60*time.Second, "every mysis's ship in view", func() bool {
		list, err := r.swarm.ListMyses(ctx, &runnerv1.ListMysesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, st := range list.GetMyses() {
			if sh := st.GetShip(); sh.GetSystem() != "" && sh.GetMaxHull() > 0 && sh.GetCargoCapacity() > 0 && sh.GetSeenAt() != nil {
				seen++
			}
		}
		return seen == len(ids)
	})
	var passwords []string
	for _, id := range ids {
		passwords = append(passwords, s.password(t, id))
	}
	r.Stop(t)
	for name, id := range ids {
		ms := s.checkHistory(t, id, passwords)
		for _, tool := range []string{"mine", "sell"} {
			if pathSuffix != "" {
				tool = "spacemolt" // v2: the actions of one tool
			}
			if !hasToolLoop(ms, tool) {
				t.Errorf("%s: no %s tool loop stored", name, tool)
			}
		}
	}
}
