package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
)

// check runs the final checks once the load has stopped, in the order of the report: myses left ERRORED, every mysis
// stopped and settled, the streams' replicas, the recoveries, the appends, the broadcasts, the swarm's histories,
// the slow model's discarded replies and the processes' resources. It prints the report and returns an error when
// a check failed (or, before printing, when the stack could not be read).
func (c *chaosRun) check(ctx context.Context) error {
	c.checkErrored(ctx)
	if err := c.stopAndSettle(ctx); err != nil {
		return err
	}
	endRes := c.e.resources()
	c.checkReplicas(ctx)
	if !c.o.soak {
		c.reportRecoveries()
	}
	if err := c.checkAppends(ctx); err != nil {
		return err
	}
	if err := c.checkBroadcasts(ctx); err != nil {
		return err
	}
	c.checkSwarm()
	c.checkDiscarded(ctx)
	c.reportProcesses(endRes)
	if c.o.soak {
		c.reportSoak()
	}

	fmt.Print(c.report.String())
	if c.fail {
		return errors.New("a check failed: see the report above")
	}
	if c.o.soak {
		fmt.Println("== PASS: every acknowledged write stored exactly once, every call answered once, every cache within its bound, no process grew in the second half")
		return nil
	}
	fmt.Println("== PASS: every acknowledged write stored exactly once, every call answered once, every mysis progressed after every fault")
	return nil
}

// failf adds a FAIL line to the report and marks the run failed.
func (c *chaosRun) failf(format string, args ...any) {
	c.fail = true
	fmt.Fprintf(&c.report, "FAIL: "+format+"\n", args...)
}

// checkErrored fails for every mysis left ERRORED by a fault: the runner retries a failed turn after a back-off.
func (c *chaosRun) checkErrored(ctx context.Context) {
	errored := 0
	for _, id := range c.swarmIDs {
		st, err := stateOf(ctx, c.swarms, id)
		if err != nil {
			c.failf("state of %s: %v", c.names[id], err)
			continue
		}
		if st == memoryv1.MysisState_MYSIS_STATE_ERRORED {
			errored++
			c.failf("%s is ERRORED at the end of the load", c.names[id])
		}
	}
	fmt.Fprintf(&c.report, "== myses ERRORED at the end of the load: %d of %d\n", errored, len(c.swarmIDs))
}

// stopAndSettle stops every mysis and waits until their histories settle: a stop is honoured at a safe point (after
// the current LLM call or tool, the calls not started answered "not executed"), so once they have settled every
// call must have exactly one result.
func (c *chaosRun) stopAndSettle(ctx context.Context) error {
	for _, id := range c.swarmIDs {
		if err := stopMysis(ctx, c.swarms, id); err != nil {
			c.failf("stop %s: %v", c.names[id], err)
		}
	}
	var err error
	c.histories, c.unanswered, err = settle(ctx, c.mem, c.swarmIDs, c.o.slowMax+20*time.Second)
	return err
}

// checkReplicas fails unless every stream and bucket is R3 (ZOEA_NATS_REPLICAS=3): otherwise losing one node loses
// what it held.
func (c *chaosRun) checkReplicas(ctx context.Context) {
	reps, err := c.e.replicas(ctx)
	if err != nil {
		c.failf("read the streams' replicas: %v", err)
		return
	}
	var parts []string
	for name, r := range reps {
		parts = append(parts, fmt.Sprintf("%s R%d", name, r))
		if r != 3 {
			c.failf("stream %s has %d replica(s) with ZOEA_NATS_REPLICAS=3", name, r)
		}
	}
	sort.Strings(parts)
	fmt.Fprintf(&c.report, "== NATS: 3 nodes; %s\n", strings.Join(parts, ", "))
}

// reportRecoveries writes one line per fault (outage, first append and broadcast after, every mysis's first model
// reply, the largest play gaps) and fails a fault with no acknowledged write after it or a mysis with no progress.
func (c *chaosRun) reportRecoveries() {
	autopilot := map[string][]*memoryv1.Memory{}
	for id, ms := range c.histories {
		if !strings.HasPrefix(c.names[id], "slow-") {
			autopilot[id] = ms
		}
	}
	fmt.Fprintf(&c.report, "\n== recovery (component back after \"down\"; then the first acknowledged append / broadcast; then every mysis's first stored model reply)\n")
	for _, r := range c.recs {
		// Progress after a fault may come after the next fault too (a slow-model reply takes 20–30 s, faults come
		// every few seconds): it is measured until the stop, and none at all fails.
		prog, slowest, never := progressAfter(c.histories, r.back, c.stopped)
		sinceFault, _, _ := progressAfter(c.histories, r.began, c.stopped)
		gap, gapID := playGap(c.histories, r.began, c.stopped)
		pilotGap, pilotID := playGap(autopilot, r.began, c.stopped)
		fmt.Fprintf(&c.report, "%-44s down %-8s append %-8s broadcast %-8s progress %-8s (slowest: %s; %s after the fault); largest play gap across the fault: autopilot %s (%s), any %s (%s)\n", r.fault, r.outage.Round(10*time.Millisecond),
			okDur(r.appends, r.appendOK), okDur(r.bcasts, r.bcastOK), okDur(prog, len(never) == 0), c.names[slowest], okDur(sinceFault, len(never) == 0),
			pilotGap.Round(10*time.Millisecond), c.names[pilotID], gap.Round(10*time.Millisecond), c.names[gapID])
		if !r.appendOK || !r.bcastOK {
			c.failf("%s: no acknowledged append or broadcast within 90s of the component's return", r.fault)
		}
		for _, id := range never {
			c.failf("%s: %s stored no model reply after the fault", r.fault, c.names[id])
		}
	}
}

// appendTally is what the writers' histories hold against what their loops acknowledged.
type appendTally struct{ lost, dups, gaps, stored int }

// tallyAppends reads every writer's history: acknowledged keys missing, keys stored more than once, seq gaps, and
// how many chaos appends are stored.
func (c *chaosRun) tallyAppends(ctx context.Context) (appendTally, error) {
	var t appendTally
	for w, id := range c.writerIDs {
		ms, err := allMemories(ctx, c.mem, id)
		if err != nil {
			return t, err
		}
		seen := map[string]int{}
		for i, m := range ms {
			if m.GetSeq() != int64(i+1) {
				t.gaps++
			}
			if k := m.GetIdempotencyKey(); strings.HasPrefix(k, "chaos:") {
				seen[k]++
				t.stored++
			}
		}
		for _, k := range c.ackedKeys[w] {
			if seen[k] == 0 {
				t.lost++
			}
		}
		for _, n := range seen {
			if n > 1 {
				t.dups += n - 1
			}
		}
	}
	return t, nil
}

// checkAppends fails on an acknowledged append lost or stored twice, or a seq gap; it reports the failed attempts
// by gRPC code, the clients' and the services' (under Patroni, anything but Unavailable fails).
func (c *chaosRun) checkAppends(ctx context.Context) error {
	t, err := c.tallyAppends(ctx)
	if err != nil {
		return err
	}
	totalAcked := 0
	for _, ks := range c.ackedKeys {
		totalAcked += len(ks)
	}
	// stored may exceed acknowledged by the appends in flight when the load stopped (stored, answer not awaited).
	fmt.Fprintf(&c.report, "== appends: acknowledged %d, stored %d (≥ acknowledged: in flight at the stop), lost %d, duplicates %d, seq gaps %d, retries %d\n", totalAcked, t.stored, t.lost, t.dups, t.gaps, c.appends.retries)
	fmt.Fprintf(&c.report, "== failed attempts by gRPC code: appends %s; broadcasts %s\n", c.appends.codeList(), c.broadcasts.codeList())
	if c.e.ha != nil && c.appends.unclear()+c.broadcasts.unclear() > 0 {
		c.failf("a Postgres failover must read as Unavailable to clients: appends %s; broadcasts %s", c.appends.codeList(), c.broadcasts.codeList())
	}
	// What the services themselves were told: every gRPC error the runners, the bus and the composer logged.
	logged, err := c.e.loggedCodes()
	if err != nil {
		c.failf("read the services' logs: %v", err)
	}
	fmt.Fprintf(&c.report, "== gRPC errors in the runners', bus's and composer's logs, by code: %s\n", codeCounts(logged))
	if c.e.ha != nil && logged["Internal"]+logged["Unknown"] > 0 {
		c.failf("a Postgres failover must read as Unavailable to the services: %s", codeCounts(logged))
	}
	if t.lost > 0 || t.dups > 0 || t.gaps > 0 {
		c.failf("appends lost %d, duplicated %d, seq gaps %d", t.lost, t.dups, t.gaps)
	}
	return nil
}

// broadcastDeliveries counts, over the myses ids, the acknowledged broadcasts not delivered and the extra deliveries.
func (c *chaosRun) broadcastDeliveries(ctx context.Context, ids []string) (lost, dups int, err error) {
	for _, id := range ids {
		ms, err := allMemories(ctx, c.mem, id)
		if err != nil {
			return 0, 0, err
		}
		got := map[string]int{}
		for _, m := range ms {
			if b := m.GetBroadcastId(); b != "" {
				got[b]++
			}
		}
		for _, b := range c.ackedBroadcasts {
			switch n := got[b]; {
			case n == 0:
				lost++
			case n > 1:
				dups += n - 1
			}
		}
	}
	return lost, dups, nil
}

// checkBroadcasts fails unless every acknowledged broadcast reached every mysis exactly once; deliveries are
// asynchronous, so it waits up to 90 s for the missing ones.
func (c *chaosRun) checkBroadcasts(ctx context.Context) error {
	allIDs := append(append([]string(nil), c.writerIDs...), c.swarmIDs...)
	var bLost, bDups int
	deadline := time.Now().Add(90 * time.Second)
	for {
		var err error
		bLost, bDups, err = c.broadcastDeliveries(ctx, allIDs)
		if err != nil {
			return err
		}
		if bLost == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	fmt.Fprintf(&c.report, "== broadcasts: acknowledged %d × %d myses, missing deliveries %d, duplicate deliveries %d, retries %d\n",
		len(c.ackedBroadcasts), len(allIDs), bLost, bDups, c.broadcasts.retries)
	if bLost > 0 || bDups > 0 {
		c.failf("broadcast deliveries missing %d, duplicated %d", bLost, bDups)
	}
	return nil
}

// swarmTally is what the swarm's settled histories hold.
type swarmTally struct {
	gaps, dupKeys, calls, twice, finals, slowReplies, largest int
}

// tallyMysis adds one swarm mysis's history to t: seq gaps, idempotency keys stored twice, tool calls and calls
// answered more than once, final replies, the slow model's replies and the largest stored reply.
func (t *swarmTally) tallyMysis(ms []*memoryv1.Memory, slow bool) {
	keys, answered := map[string]bool{}, map[string]int{}
	for i, m := range ms {
		if m.GetSeq() != int64(i+1) {
			t.gaps++
		}
		if k := m.GetIdempotencyKey(); k != "" {
			if keys[k] {
				t.dupKeys++
			}
			keys[k] = true
		}
		switch m.GetRole() {
		case memoryv1.Role_ROLE_TOOL:
			answered[m.GetToolCallId()]++
		case memoryv1.Role_ROLE_ASSISTANT:
			t.assistant(m, slow)
		}
	}
	for _, n := range answered {
		if n > 1 {
			t.twice += n - 1
		}
	}
}

// assistant adds one model reply to t: its size, its tool calls, whether it is a final reply, whether the slow
// model wrote it.
func (t *swarmTally) assistant(m *memoryv1.Memory, slow bool) {
	size := len(m.GetContent()) + len(m.GetReasoning())
	for _, c := range m.GetToolCalls() {
		size += len(c.GetArgumentsJson())
	}
	t.largest = max(t.largest, size)
	t.calls += len(m.GetToolCalls())
	if len(m.GetToolCalls()) == 0 {
		t.finals++
	}
	if slow {
		t.slowReplies++
	}
}

// checkSwarm checks the swarm's histories: gapless, each idempotency key once, every tool call answered exactly
// once, some final replies, every stored reply bounded; it reports the calls answered "result unknown" and the stop
// after a kill (stopcut.go). It keeps the slow model's stored replies for checkDiscarded.
func (c *chaosRun) checkSwarm() {
	var t swarmTally
	for _, id := range c.swarmIDs {
		t.tallyMysis(c.histories[id], strings.HasPrefix(c.names[id], "slow-"))
	}
	c.slowReplies = t.slowReplies
	// A call whose result could not be stored (the database was away) is answered "unknown" once, never re-run.
	unknown := 0
	for _, id := range c.swarmIDs {
		for _, m := range c.histories[id] {
			if m.GetRole() == memoryv1.Role_ROLE_TOOL && strings.Contains(m.GetContent(), "the result of this call is unknown") {
				unknown++
			}
		}
	}
	fmt.Fprintf(&c.report, "== tool calls cut by a fault and answered \"result unknown\" (not run again): %d\n", unknown)
	c.stopCut.report(&c.report, c.failf)
	nUnanswered := 0
	for id, cs := range c.unanswered {
		nUnanswered += len(cs)
		c.failf("%s: calls left without a result after the stop: %s", c.names[id], strings.Join(cs, ", "))
	}
	fmt.Fprintf(&c.report, "== swarm: %d myses (%d autopilot, %d on the slow model) over 2 replicas, %d final replies, %d tool calls: unanswered %d, answered twice %d; seq gaps %d, duplicate keys %d\n",
		len(c.swarmIDs), c.o.swarm, c.o.slow, t.finals, t.calls, nUnanswered, t.twice, t.gaps, t.dupKeys)
	if t.gaps > 0 || t.dupKeys > 0 || t.twice > 0 || t.finals == 0 {
		c.failf("swarm histories: seq gaps %d, duplicate keys %d, calls answered twice %d, final replies %d", t.gaps, t.dupKeys, t.twice, t.finals)
	}
	fmt.Fprintf(&c.report, "== largest stored model reply: %d bytes (content, reasoning and arguments; the slow model wrote 5 MB answers: %v)\n", t.largest, c.o.huge)
	if t.largest > 3*chat.MaxReplyBytes {
		c.failf("a stored reply holds %d bytes, more than its three bounded fields (%d each) allow", t.largest, chat.MaxReplyBytes)
	}
}

// checkDiscarded counts the paid replies thrown away: the runner records every successful call, and a reply it did
// not keep (a final answer a broadcast raced, issue 26) is a call with no stored memory. It fails a slow-model mysis
// with more than one per turn, and fails when no slow-model mysis stored a reply.
func (c *chaosRun) checkDiscarded(ctx context.Context) {
	discarded, slowFinals := 0, 0
	for _, id := range c.swarmIDs {
		if !strings.HasPrefix(c.names[id], "slow-") {
			continue
		}
		u, err := usageOf(ctx, c.swarms, id)
		if err != nil {
			c.failf("usage of %s: %v", c.names[id], err)
			continue
		}
		replies, finalsOf := 0, 0
		for _, m := range c.histories[id] {
			if m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && m.GetSource() == memoryv1.Source_SOURCE_LLM {
				replies++
				if len(m.GetToolCalls()) == 0 {
					finalsOf++
				}
			}
		}
		d := int(u.GetCalls()-u.GetFailedCalls()) - replies
		discarded += d
		slowFinals += finalsOf
		// A turn ends with a final answer, or is cut by a fault (at most one per fault) or by the final stop.
		if turns := finalsOf + len(c.recs) + 1; d > turns {
			c.failf("%s: %d paid replies discarded in at most %d turns: more than one per turn", c.names[id], d, turns)
		}
	}
	served, cut := c.model.counts()
	fmt.Fprintf(&c.report, "== slow model: %d replies served in full (%d requests cut by a kill or a stop), %d stored (%d final answers); %d recorded and discarded because a broadcast raced them (at most one between two final answers of the mysis, across owners)\n",
		served, cut, c.slowReplies, slowFinals, discarded)
	if c.o.slow > 0 && c.slowReplies == 0 {
		c.failf("no slow-model mysis stored a reply")
	}
}

// reportProcesses writes every process's RSS, threads, open files and goroutines at the start and at the end, and
// flags a goroutine count that grew a lot (a possible leak). It fails nothing: a fixed threshold would flake on a
// loaded machine; the numbers are for reading.
func (c *chaosRun) reportProcesses(endRes map[string]usage) {
	fmt.Fprintf(&c.report, "== processes (RSS MiB / OS threads / open files / goroutines (process uptime)), at the start → at the end (%s of load)\n", time.Since(c.began).Round(time.Second))
	procNames := make([]string, 0, len(endRes))
	for n := range endRes {
		procNames = append(procNames, n)
	}
	sort.Strings(procNames)
	var grew []string
	for _, n := range procNames {
		start, end := c.startRes[n], endRes[n]
		fmt.Fprintf(&c.report, "%-16s %s → %s\n", n, start, end)
		if start.ok && end.ok && start.goroutines > 0 && end.goroutines > 2*start.goroutines && end.goroutines-start.goroutines >= 100 {
			grew = append(grew, fmt.Sprintf("%s %d → %d", n, start.goroutines, end.goroutines))
		}
	}
	fmt.Fprintf(&c.report, "(goroutines from each Go process's pprof goroutine profile: the services' ZOEA_DEBUG_ADDR, the NATS nodes' prof_port; n/a: not a Go process with one; the faults restart every service and NATS node, so compare a process with its uptime)\n")
	if len(grew) > 0 {
		fmt.Fprintf(&c.report, "NOTE goroutines more than doubled (by 100 or more) between the start and the end: %s — a possible leak; not a failed check\n", strings.Join(grew, ", "))
	} else {
		fmt.Fprintf(&c.report, "goroutines: no process more than doubled its count (by 100 or more) between the start and the end\n")
	}
}
