package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// stopAfterKill is the fault that leaves stopped myses with cut calls (issue 26): the runner holding more myses is
// killed with -9 while one of them is inside a tool call, and every mysis it held is stopped through the other at
// once, before the killed one's leases expire, so no owner resumes the cut tool
// loops; the replica that then takes each stopped mysis must answer its cut calls without running them. Once they
// are answered (or 30 s have passed) the myses are started again and play on.
type stopAfterKill struct {
	mu     sync.Mutex
	rounds int
	myses  int           // stopped right after the kill, over all rounds
	cut    int           // calls without a result right after the stop
	worst  time.Duration // kill → every cut call answered, the slowest round
	open   []string      // calls still without a result 30 s after the kill
	errs   []string
}

func (s *stopAfterKill) fault(ctx context.Context, e *env, mem memoryv1.MemoryServiceClient, swarms []runnerv1.SwarmServiceClient) fault {
	var ids []string
	var killed time.Time
	var stopper runnerv1.SwarmServiceClient
	return fault{name: "runner SIGKILL, its myses stopped at once", do: func() error {
		// The victim is the replica holding more myses (after the NATS faults one may hold them all for a while).
		victim := ""
		for wait := time.Now().Add(15 * time.Second); victim == "" && time.Now().Before(wait); time.Sleep(500 * time.Millisecond) {
			held := map[string][]string{}
			for _, sw := range swarms {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				list, err := sw.ListMyses(cctx, &runnerv1.ListMysesRequest{})
				cancel()
				if err != nil {
					continue
				}
				for _, st := range list.GetMyses() {
					if name := st.GetMysis().GetName(); strings.HasPrefix(name, "pilot-") || strings.HasPrefix(name, "slow-") {
						held[st.GetOwner()] = append(held[st.GetOwner()], st.GetMysis().GetId())
					}
				}
				break
			}
			if len(held["r1"])+len(held["r2"]) > 0 {
				victim = "r1"
				if len(held["r2"]) > len(held["r1"]) {
					victim = "r2"
				}
				ids = append(ids[:0], held[victim]...)
			}
		}
		if victim == "" {
			return errors.New("no runner holds a swarm mysis 15 s after the previous fault")
		}
		stopper = swarms[1]
		if victim == "r2" {
			stopper = swarms[0]
		}
		// Kill it the moment one of its myses is inside a tool call (its newest memory is the model's call), as a
		// crash would most often find it; a game action waits for the simulator's tick, so the kill lands in it.
		for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait) && !inCall(ctx, mem, ids); {
			time.Sleep(5 * time.Millisecond)
		}
		p := e.procs["runner-"+victim]
		p.kill()
		killed = time.Now()
		for _, id := range ids {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := stopper.StopMysis(cctx, &runnerv1.StopMysisRequest{Mysis: id, Reason: "chaos: stopped right after its owner's kill"})
			cancel()
			if err != nil {
				return fmt.Errorf("stop %s through the other runner: %w", id, err)
			}
		}
		// The victim's leases last up to 3 s after its last renewal: nobody has resumed these myses yet.
		cut := 0
		for _, id := range ids {
			ms, err := recentMemories(ctx, mem, id)
			if err != nil {
				return err
			}
			cut += len(unansweredCalls(ms))
		}
		s.mu.Lock()
		s.rounds++
		s.myses += len(ids)
		s.cut += cut
		s.mu.Unlock()
		return p.start()
	}, then: func() error {
		deadline := killed.Add(30 * time.Second)
		var open []string
		for {
			open = open[:0]
			for _, id := range ids {
				ms, err := recentMemories(ctx, mem, id)
				if err != nil {
					return err
				}
				open = append(open, unansweredCalls(ms)...)
			}
			if len(open) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		took := time.Since(killed)
		s.mu.Lock()
		if len(open) > 0 {
			s.open = append(s.open, open...)
		} else {
			s.worst = max(s.worst, took)
		}
		s.mu.Unlock()
		for _, id := range ids {
			if err := startMysis(ctx, swarms, id); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, fmt.Sprintf("start %s: %v", id, err))
				s.mu.Unlock()
			}
		}
		return nil
	}}
}

func (s *stopAfterKill) report(w *strings.Builder, failf func(string, ...any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rounds == 0 {
		return
	}
	answered := "every one answered by the replica that took the stopped myses within " + s.worst.Round(10*time.Millisecond).String() + " of the kill (slowest round)"
	if len(s.open) > 0 {
		answered = fmt.Sprintf("%d still without a result 30 s after the kill", len(s.open))
	}
	fmt.Fprintf(w, "== stopped right after their owner's kill: %d myses in %d round(s), %d calls cut in flight; %s\n", s.myses, s.rounds, s.cut, answered)
	if s.cut == 0 {
		fmt.Fprintf(w, "   (no call was in flight at any of these kills: this run did not exercise the rule)\n")
	}
	if len(s.open) > 0 {
		failf("calls of stopped myses left without a result 30 s after their owner's kill: %s", strings.Join(s.open, ", "))
	}
	for _, e := range s.errs {
		failf("%s", e)
	}
}

// startMysis starts one mysis through whichever runner answers.
func startMysis(ctx context.Context, swarms []runnerv1.SwarmServiceClient, id string) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		for _, sw := range swarms {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = sw.StartMysis(cctx, &runnerv1.StartMysisRequest{Mysis: id})
			cancel()
			if err == nil {
				return nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return err
}

// recentMemories is a mysis's newest 200 memories: a call's results follow it, so every call in them has its results
// in them too.
func recentMemories(ctx context.Context, mem memoryv1.MemoryServiceClient, id string) ([]*memoryv1.Memory, error) {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var resp *memoryv1.ListRecentMemoriesResponse
		resp, err = mem.ListRecentMemories(cctx, &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: 200})
		cancel()
		if err == nil {
			return resp.GetMemories(), nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("read the recent memories of %s: %w", id, err)
}

// inCall reports whether one of the myses' newest memory is a model reply with tool calls: a call is running.
func inCall(ctx context.Context, mem memoryv1.MemoryServiceClient, ids []string) bool {
	for _, id := range ids {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := mem.ListRecentMemories(cctx, &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: 1})
		cancel()
		if err != nil || len(resp.GetMemories()) == 0 {
			continue
		}
		if m := resp.GetMemories()[0]; m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) > 0 {
			return true
		}
	}
	return false
}
