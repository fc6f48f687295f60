// Command chaos is Zoea's repeatable fault suite (`make chaos`). On private ports it starts its own Postgres cluster
// (pg_createcluster), a 3-node JetStream cluster (nats-server processes built from the module the repository pins,
// every stream and bucket at R3), the memory, composer and bus services, the simulator, two runner replicas and a
// fake OpenAI-compatible model server that answers in 20–30 s; then it runs load — appends with idempotency keys, a
// broadcast every few seconds, a swarm of autopilot myses and a few myses on the slow model — while it restarts
// Postgres (fast and immediate) and kill -9s every process in turn: the memory service, the composer, the
// simulator, the bus, both runners, the NATS node leading the message stream and then a second node while the
// first is still down (quorum lost, then regained); last, the runner holding more myses again, inside a tool call,
// with every mysis it held stopped at once, before the other could resume them (stopcut.go: their cut calls must
// still be answered).
//
// At the end it stops every mysis and checks: every acknowledged append stored once, gapless; every acknowledged
// broadcast delivered to every mysis exactly once; every tool call answered exactly once (no call left without a
// result, none answered twice); every mysis made progress (a stored model reply) after each fault. It prints
// recovery times and the RSS, threads and open files of every process at the start and the end, and exits non-zero
// on any failed check. -duration repeats the fault cycle until that much time has passed (a soak).
//
// -postgres patroni replaces the one Postgres with an HA cluster — etcd and three Patroni nodes, synchronous_mode,
// the memory service on a multi-host URL with target_session_attrs=read-write — and the faults with two whole-node
// kills of the primary (patroni.go). It then also fails when a client saw an error other than Unavailable (or its
// own deadline), when a service logged an Internal or Unknown gRPC error, or when a mysis is left ERRORED. It
// installs nothing: without Patroni or etcd it prints the apt-get line and exits 2.
//
// It never touches the shared Postgres (5432) or NATS (4222): every address is a fresh free port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/server"
)

type options struct {
	writers, swarm, slow int
	steady, duration     time.Duration
	broadcastEvery       time.Duration
	slowMin, slowMax     time.Duration
	keep, huge           bool
	postgres             string // "cluster" (one private Postgres) or "patroni" (an HA cluster)
	pgBinDir             string // -postgres patroni: the PostgreSQL server binaries found
}

func main() {
	var o options
	flag.IntVar(&o.writers, "writers", 4, "append loops, one mysis each")
	flag.IntVar(&o.swarm, "swarm", 12, "autopilot myses spread over two runner replicas")
	flag.IntVar(&o.slow, "slow", 3, "myses on the slow fake model (OpenAI wire format)")
	flag.DurationVar(&o.steady, "steady", 8*time.Second, "load between two faults")
	flag.DurationVar(&o.duration, "duration", 0, "run the fault cycle again until this much time has passed (0: once)")
	flag.DurationVar(&o.broadcastEvery, "broadcast-every", 3*time.Second, "pause between two commander broadcasts")
	flag.DurationVar(&o.slowMin, "slow-min", 20*time.Second, "the slow model's shortest answer time")
	flag.DurationVar(&o.slowMax, "slow-max", 30*time.Second, "the slow model's longest answer time")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (logs) at the end")
	flag.BoolVar(&o.huge, "huge", true, "the slow model pads every final answer to 5 MB (stored replies must stay bounded)")
	flag.StringVar(&o.postgres, "postgres", "cluster", "cluster: one private Postgres, restarted; patroni: a primary and two synchronous replicas under Patroni and etcd, the primary's node killed (failover) instead of every other fault")
	flag.Parse()
	switch o.postgres {
	case "cluster":
	case "patroni":
		// Installs nothing: says what to install before anything is built or started.
		bin, err := patroniTools()
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		o.pgBinDir = bin
	default:
		fmt.Fprintf(os.Stderr, "chaos: -postgres must be cluster or patroni, got %q\n", o.postgres)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// counters is what a load loop acknowledged, when it last succeeded, and the gRPC codes of its failed attempts.
type counters struct {
	mu      sync.Mutex
	lastOK  time.Time
	acked   int
	retries int
	codes   map[codes.Code]int
}

// codeList is the failed attempts by gRPC code, e.g. "Unavailable 212".
func (c *counters) codeList() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for code, n := range c.codes {
		parts = append(parts, fmt.Sprintf("%s %d", code, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// unclear counts the failed attempts that were not Unavailable (the server's "retry later") or the client's own
// deadline: Internal or Unknown would mean a failover looks like a bug to a client.
func (c *counters) unclear() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for code, k := range c.codes {
		if code != codes.Unavailable && code != codes.DeadlineExceeded {
			n += k
		}
	}
	return n
}

func (c *counters) ok() {
	c.mu.Lock()
	c.acked++
	c.lastOK = time.Now()
	c.mu.Unlock()
}

// firstOKAfter waits until the loop succeeds after t and returns how long that took.
func (c *counters) firstOKAfter(ctx context.Context, t time.Time, within time.Duration) (time.Duration, bool) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c.mu.Lock()
		last := c.lastOK
		c.mu.Unlock()
		if last.After(t) {
			return last.Sub(t), true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return within, false
}

// retry repeats op until it succeeds or ctx ends; every write carries an idempotency key, so a retry after an
// unknown outcome cannot duplicate.
func retry(ctx context.Context, c *counters, op func(context.Context) error) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := op(cctx)
		cancel()
		if err == nil {
			c.ok()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.mu.Lock()
		c.retries++
		if c.codes == nil {
			c.codes = map[codes.Code]int{}
		}
		c.codes[status.Code(err)]++
		c.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

// recovery is one fault: how long the component was down, and from when it was back the first acknowledged
// append and broadcast; progress (filled in at the end) is the time until the slowest mysis stored a model reply.
type recovery struct {
	fault                   string
	began, back             time.Time
	outage, appends, bcasts time.Duration
	appendOK, bcastOK       bool
}

type fault struct {
	name string
	do   func() error
	// then, when set, runs after the recovery was measured (a failed-over node rejoining).
	then func() error
}

func (e *env) faults() []fault {
	restart := func(name string) fault {
		return fault{name: name + " SIGKILL", do: func() error { p := e.procs[name]; p.kill(); return p.start() }}
	}
	if e.ha != nil {
		// The primary's node dies twice: the second time the node promoted by the first failover.
		return []fault{e.ha.failover(context.Background()), e.ha.failover(context.Background())}
	}
	return []fault{
		{name: "postgres restart (fast)", do: func() error { return sh("pg_ctlcluster", e.pgVersion, e.pgName, "restart", "-m", "fast") }},
		{name: "postgres stop (immediate)", do: func() error {
			if err := sh("pg_ctlcluster", e.pgVersion, e.pgName, "stop", "-m", "immediate"); err != nil {
				return err
			}
			return sh("pg_ctlcluster", e.pgVersion, e.pgName, "start")
		}},
		restart("memory"),
		restart("composer"),
		restart("spacemolt-sim"),
		restart("bus"),
		restart("runner-r1"),
		restart("runner-r2"),
		{name: "nats stream leader SIGKILL", do: e.killLeader},
		{name: "nats second node SIGKILL (quorum lost)", do: e.killSecond},
	}
}

func run(ctx context.Context, o options) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	model := newSlowModel(o.slowMin, o.slowMax, o.huge)
	e, err := setup(ctx, o, log, model)
	if e != nil {
		defer e.teardown(log, o.keep || err != nil)
	}
	if err != nil {
		return err
	}
	defer model.close()
	memConn, err := server.Dial(e.memAddr, "")
	if err != nil {
		return err
	}
	defer memConn.Close()
	mem := memoryv1.NewMemoryServiceClient(memConn)
	busConn, err := server.Dial(e.busAddr, "")
	if err != nil {
		return err
	}
	defer busConn.Close()
	bus := busv1.NewBusServiceClient(busConn)
	// The swarm API of both runners: either serves every mysis; the one that is down is skipped.
	var swarms []runnerv1.SwarmServiceClient
	for _, addr := range e.runAddrs {
		conn, err := server.Dial(addr, "")
		if err != nil {
			return err
		}
		defer conn.Close()
		swarms = append(swarms, runnerv1.NewSwarmServiceClient(conn))
	}

	// The myses: writers (appended to directly), an autopilot swarm and the slow-model myses (run by the replicas).
	var writerIDs, swarmIDs []string
	for i := range o.writers {
		r, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("writer-%d", i), Provider: "autopilot", SystemPrompt: "You are a mysis."})
		if err != nil {
			return fmt.Errorf("create writer: %w", err)
		}
		writerIDs = append(writerIDs, r.GetMysis().GetId())
	}
	names := map[string]string{}
	for i := range o.swarm + o.slow {
		req := &runnerv1.CreateMysisRequest{Name: fmt.Sprintf("pilot-%d", i), Start: true}
		if i >= o.swarm {
			req.Name, req.Provider, req.Model = fmt.Sprintf("slow-%d", i-o.swarm), "openai", "chaos-slow"
		}
		r, err := swarms[0].CreateMysis(ctx, req)
		if err != nil {
			return fmt.Errorf("create swarm mysis: %w", err)
		}
		swarmIDs = append(swarmIDs, r.GetStatus().GetMysis().GetId())
		names[r.GetStatus().GetMysis().GetId()] = req.Name
	}
	startRes := e.resources()

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	appends := &counters{}
	ackedKeys := make([][]string, o.writers)
	for w := range o.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; loadCtx.Err() == nil; i++ {
				key := fmt.Sprintf("chaos:%d:%d", w, i)
				err := retry(loadCtx, appends, func(c context.Context) error {
					_, err := mem.AppendMemories(c, &memoryv1.AppendMemoriesRequest{MysisId: writerIDs[w], Memories: []*memoryv1.NewMemory{{
						Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "order " + key, IdempotencyKey: key}}})
					return err
				})
				if err == nil {
					ackedKeys[w] = append(ackedKeys[w], key)
				}
				time.Sleep(20 * time.Millisecond) // a steady trickle: the check is about loss, not throughput
			}
		}()
	}
	broadcasts := &counters{}
	var ackedBroadcasts []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for loadCtx.Err() == nil {
			id := uuid.NewString()
			if err := retry(loadCtx, broadcasts, func(c context.Context) error {
				_, err := bus.Broadcast(c, &busv1.BroadcastRequest{BroadcastId: id, Content: "Chaos drill " + id[:8] + ": report and keep mining."})
				return err
			}); err == nil {
				ackedBroadcasts = append(ackedBroadcasts, id)
			}
			select {
			case <-loadCtx.Done():
			case <-time.After(o.broadcastEvery):
			}
		}
	}()

	var recs []recovery
	stopCut := &stopAfterKill{}
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	began := time.Now()
	sleep(o.steady)
	for round := 1; ctx.Err() == nil; round++ {
		faults := e.faults()
		if e.ha == nil {
			faults = append(faults, stopCut.fault(ctx, e, mem, swarms))
		}
		for _, f := range faults {
			if ctx.Err() != nil {
				break
			}
			name := f.name
			if o.duration > 0 {
				name = fmt.Sprintf("#%d %s", round, f.name)
			}
			log.Info("fault", "what", name)
			t0 := time.Now()
			if err := f.do(); err != nil {
				stopLoad()
				wg.Wait()
				return fmt.Errorf("%s: %w", name, err)
			}
			// Recovery counts from the moment the component is back (restarted), not from the fault.
			back := time.Now()
			ra, okA := appends.firstOKAfter(ctx, back, 90*time.Second)
			rb, okB := broadcasts.firstOKAfter(ctx, back, 90*time.Second)
			recs = append(recs, recovery{fault: name, began: t0, back: back, outage: back.Sub(t0), appends: ra, bcasts: rb, appendOK: okA, bcastOK: okB})
			if f.then != nil {
				if err := f.then(); err != nil {
					stopLoad()
					wg.Wait()
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			sleep(o.steady)
		}
		if time.Since(began) >= o.duration {
			break
		}
	}
	// The slow model needs up to slow-max per reply and a killed runner's myses wait for its lease: give the last
	// fault time to show progress before the load stops.
	// A slow-model turn that a broadcast races needs up to three replies (call, discarded answer, kept answer).
	sleep(3*o.slowMax + 5*time.Second)
	stopLoad()
	wg.Wait()
	stopped := time.Now()

	var report strings.Builder
	fail := false
	failf := func(format string, args ...any) {
		fail = true
		fmt.Fprintf(&report, "FAIL: "+format+"\n", args...)
	}

	// No mysis may be left ERRORED by a fault: the runner retries a failed turn after a back-off.
	errored := 0
	for _, id := range swarmIDs {
		st, err := stateOf(ctx, swarms, id)
		if err != nil {
			failf("state of %s: %v", names[id], err)
			continue
		}
		if st == memoryv1.MysisState_MYSIS_STATE_ERRORED {
			errored++
			failf("%s is ERRORED at the end of the load", names[id])
		}
	}
	fmt.Fprintf(&report, "== myses ERRORED at the end of the load: %d of %d\n", errored, len(swarmIDs))

	// Stop every mysis: a stop is honoured at a safe point (after the current LLM call or tool, the calls not
	// started answered "not executed"), so once they have settled every call must have exactly one result.
	for _, id := range swarmIDs {
		if err := stopMysis(ctx, swarms, id); err != nil {
			failf("stop %s: %v", names[id], err)
		}
	}
	histories, unanswered, err := settle(ctx, mem, swarmIDs, o.slowMax+20*time.Second)
	if err != nil {
		return err
	}
	endRes := e.resources()
	// ZOEA_NATS_REPLICAS=3: every stream and bucket must be R3, or losing one node loses what it held.
	if reps, err := e.replicas(ctx); err != nil {
		failf("read the streams' replicas: %v", err)
	} else {
		var parts []string
		for name, r := range reps {
			parts = append(parts, fmt.Sprintf("%s R%d", name, r))
			if r != 3 {
				failf("stream %s has %d replica(s) with ZOEA_NATS_REPLICAS=3", name, r)
			}
		}
		sort.Strings(parts)
		fmt.Fprintf(&report, "== NATS: 3 nodes; %s\n", strings.Join(parts, ", "))
	}

	autopilot := map[string][]*memoryv1.Memory{}
	for id, ms := range histories {
		if !strings.HasPrefix(names[id], "slow-") {
			autopilot[id] = ms
		}
	}
	fmt.Fprintf(&report, "\n== recovery (component back after \"down\"; then the first acknowledged append / broadcast; then every mysis's first stored model reply)\n")
	for _, r := range recs {
		// Progress after a fault may come after the next fault too (a slow-model reply takes 20–30 s, faults come
		// every few seconds): it is measured until the stop, and none at all fails.
		prog, slowest, never := progressAfter(histories, r.back, stopped)
		sinceFault, _, _ := progressAfter(histories, r.began, stopped)
		gap, gapID := playGap(histories, r.began, stopped)
		pilotGap, pilotID := playGap(autopilot, r.began, stopped)
		fmt.Fprintf(&report, "%-44s down %-8s append %-8s broadcast %-8s progress %-8s (slowest: %s; %s after the fault); largest play gap across the fault: autopilot %s (%s), any %s (%s)\n", r.fault, r.outage.Round(10*time.Millisecond),
			okDur(r.appends, r.appendOK), okDur(r.bcasts, r.bcastOK), okDur(prog, len(never) == 0), names[slowest], okDur(sinceFault, len(never) == 0),
			pilotGap.Round(10*time.Millisecond), names[pilotID], gap.Round(10*time.Millisecond), names[gapID])
		if !r.appendOK || !r.bcastOK {
			failf("%s: no acknowledged append or broadcast within 90s of the component's return", r.fault)
		}
		for _, id := range never {
			failf("%s: %s stored no model reply after the fault", r.fault, names[id])
		}
	}

	lost, dups, gaps, stored := 0, 0, 0, 0
	for w, id := range writerIDs {
		ms, err := allMemories(ctx, mem, id)
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for i, m := range ms {
			if m.GetSeq() != int64(i+1) {
				gaps++
			}
			if k := m.GetIdempotencyKey(); strings.HasPrefix(k, "chaos:") {
				seen[k]++
				stored++
			}
		}
		for _, k := range ackedKeys[w] {
			if seen[k] == 0 {
				lost++
			}
		}
		for _, n := range seen {
			if n > 1 {
				dups += n - 1
			}
		}
	}
	totalAcked := 0
	for _, ks := range ackedKeys {
		totalAcked += len(ks)
	}
	// stored may exceed acknowledged by the appends in flight when the load stopped (stored, answer not awaited).
	fmt.Fprintf(&report, "== appends: acknowledged %d, stored %d (≥ acknowledged: in flight at the stop), lost %d, duplicates %d, seq gaps %d, retries %d\n", totalAcked, stored, lost, dups, gaps, appends.retries)
	fmt.Fprintf(&report, "== failed attempts by gRPC code: appends %s; broadcasts %s\n", appends.codeList(), broadcasts.codeList())
	if e.ha != nil && appends.unclear()+broadcasts.unclear() > 0 {
		failf("a Postgres failover must read as Unavailable to clients: appends %s; broadcasts %s", appends.codeList(), broadcasts.codeList())
	}
	// What the services themselves were told: every gRPC error the runners, the bus and the composer logged.
	logged, err := e.loggedCodes()
	if err != nil {
		failf("read the services' logs: %v", err)
	}
	fmt.Fprintf(&report, "== gRPC errors in the runners', bus's and composer's logs, by code: %s\n", codeCounts(logged))
	if e.ha != nil && logged["Internal"]+logged["Unknown"] > 0 {
		failf("a Postgres failover must read as Unavailable to the services: %s", codeCounts(logged))
	}
	if lost > 0 || dups > 0 || gaps > 0 {
		failf("appends lost %d, duplicated %d, seq gaps %d", lost, dups, gaps)
	}

	// Every acknowledged broadcast reaches every mysis exactly once (deliveries are asynchronous: wait for them).
	allIDs := append(append([]string(nil), writerIDs...), swarmIDs...)
	var bLost, bDups int
	deadline := time.Now().Add(90 * time.Second)
	for {
		bLost, bDups = 0, 0
		for _, id := range allIDs {
			ms, err := allMemories(ctx, mem, id)
			if err != nil {
				return err
			}
			got := map[string]int{}
			for _, m := range ms {
				if b := m.GetBroadcastId(); b != "" {
					got[b]++
				}
			}
			for _, b := range ackedBroadcasts {
				switch n := got[b]; {
				case n == 0:
					bLost++
				case n > 1:
					bDups += n - 1
				}
			}
		}
		if bLost == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	fmt.Fprintf(&report, "== broadcasts: acknowledged %d × %d myses, missing deliveries %d, duplicate deliveries %d, retries %d\n",
		len(ackedBroadcasts), len(allIDs), bLost, bDups, broadcasts.retries)
	if bLost > 0 || bDups > 0 {
		failf("broadcast deliveries missing %d, duplicated %d", bLost, bDups)
	}

	// The swarm's histories: gapless, each idempotency key once, every tool call answered exactly once.
	sGaps, sDupKeys, calls, twice, finals, slowReplies, largest := 0, 0, 0, 0, 0, 0, 0
	for _, id := range swarmIDs {
		ms := histories[id]
		keys, answered := map[string]bool{}, map[string]int{}
		for i, m := range ms {
			if m.GetSeq() != int64(i+1) {
				sGaps++
			}
			if k := m.GetIdempotencyKey(); k != "" {
				if keys[k] {
					sDupKeys++
				}
				keys[k] = true
			}
			switch m.GetRole() {
			case memoryv1.Role_ROLE_TOOL:
				answered[m.GetToolCallId()]++
			case memoryv1.Role_ROLE_ASSISTANT:
				size := len(m.GetContent()) + len(m.GetReasoning())
				for _, c := range m.GetToolCalls() {
					size += len(c.GetArgumentsJson())
				}
				largest = max(largest, size)
				calls += len(m.GetToolCalls())
				if len(m.GetToolCalls()) == 0 {
					finals++
				}
				if strings.HasPrefix(names[id], "slow-") {
					slowReplies++
				}
			}
		}
		for _, n := range answered {
			if n > 1 {
				twice += n - 1
			}
		}
	}
	// A call whose result could not be stored (the database was away) is answered "unknown" once, never re-run.
	unknown := 0
	for _, id := range swarmIDs {
		for _, m := range histories[id] {
			if m.GetRole() == memoryv1.Role_ROLE_TOOL && strings.Contains(m.GetContent(), "the result of this call is unknown") {
				unknown++
			}
		}
	}
	fmt.Fprintf(&report, "== tool calls cut by a fault and answered \"result unknown\" (not run again): %d\n", unknown)
	stopCut.report(&report, failf)
	nUnanswered := 0
	for id, cs := range unanswered {
		nUnanswered += len(cs)
		failf("%s: calls left without a result after the stop: %s", names[id], strings.Join(cs, ", "))
	}
	fmt.Fprintf(&report, "== swarm: %d myses (%d autopilot, %d on the slow model) over 2 replicas, %d final replies, %d tool calls: unanswered %d, answered twice %d; seq gaps %d, duplicate keys %d\n",
		len(swarmIDs), o.swarm, o.slow, finals, calls, nUnanswered, twice, sGaps, sDupKeys)
	if sGaps > 0 || sDupKeys > 0 || twice > 0 || finals == 0 {
		failf("swarm histories: seq gaps %d, duplicate keys %d, calls answered twice %d, final replies %d", sGaps, sDupKeys, twice, finals)
	}
	fmt.Fprintf(&report, "== largest stored model reply: %d bytes (content, reasoning and arguments; the slow model wrote 5 MB answers: %v)\n", largest, o.huge)
	if largest > 3*chat.MaxReplyBytes {
		failf("a stored reply holds %d bytes, more than its three bounded fields (%d each) allow", largest, chat.MaxReplyBytes)
	}
	// Paid replies thrown away: the runner records every successful call, and a reply it did not keep (a final
	// answer a broadcast raced, issue 26) is a call with no stored memory. At most one per turn.
	discarded, slowFinals := 0, 0
	for _, id := range swarmIDs {
		if !strings.HasPrefix(names[id], "slow-") {
			continue
		}
		u, err := usageOf(ctx, swarms, id)
		if err != nil {
			failf("usage of %s: %v", names[id], err)
			continue
		}
		replies, finalsOf := 0, 0
		for _, m := range histories[id] {
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
		if turns := finalsOf + len(recs) + 1; d > turns {
			failf("%s: %d paid replies discarded in at most %d turns: more than one per turn", names[id], d, turns)
		}
	}
	served, cut := model.counts()
	fmt.Fprintf(&report, "== slow model: %d replies served in full (%d requests cut by a kill or a stop), %d stored (%d final answers); %d recorded and discarded because a broadcast raced them (at most one between two final answers of the mysis, across owners)\n",
		served, cut, slowReplies, slowFinals, discarded)
	if o.slow > 0 && slowReplies == 0 {
		failf("no slow-model mysis stored a reply")
	}

	fmt.Fprintf(&report, "== processes (RSS MiB / OS threads / open files), at the start → at the end (%s of load)\n", time.Since(began).Round(time.Second))
	procNames := make([]string, 0, len(endRes))
	for n := range endRes {
		procNames = append(procNames, n)
	}
	sort.Strings(procNames)
	for _, n := range procNames {
		fmt.Fprintf(&report, "%-16s %s → %s\n", n, startRes[n], endRes[n])
	}
	fmt.Fprintf(&report, "(goroutines: the services expose no runtime metrics endpoint; OS threads from /proc are shown instead)\n")

	fmt.Print(report.String())
	if fail {
		return errors.New("a check failed: see the report above")
	}
	fmt.Println("== PASS: every acknowledged write stored exactly once, every call answered once, every mysis progressed after every fault")
	return nil
}

// usageOf is a mysis's LLM usage (all time) through whichever runner answers.
func usageOf(ctx context.Context, swarms []runnerv1.SwarmServiceClient, id string) (*memoryv1.UsageTotals, error) {
	var err error
	for _, s := range swarms {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var r *runnerv1.GetMysisResponse
		r, err = s.GetMysis(cctx, &runnerv1.GetMysisRequest{Mysis: id})
		cancel()
		if err == nil {
			return r.GetStatus().GetUsage(), nil
		}
	}
	return nil, err
}

// stateOf is a mysis's stored state through whichever runner answers.
func stateOf(ctx context.Context, swarms []runnerv1.SwarmServiceClient, id string) (memoryv1.MysisState, error) {
	var err error
	for _, s := range swarms {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var r *runnerv1.GetMysisResponse
		r, err = s.GetMysis(cctx, &runnerv1.GetMysisRequest{Mysis: id})
		cancel()
		if err == nil {
			return r.GetStatus().GetMysis().GetState(), nil
		}
	}
	return memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED, err
}

// stopMysis stops one mysis through whichever runner answers.
func stopMysis(ctx context.Context, swarms []runnerv1.SwarmServiceClient, id string) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		for _, s := range swarms {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = s.StopMysis(cctx, &runnerv1.StopMysisRequest{Mysis: id, Reason: "chaos: end of the run"})
			cancel()
			if err == nil {
				return nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return err
}

// settle waits until no stopped mysis has a tool call without a result (or within has passed), and returns the
// histories and the calls still unanswered, by mysis.
func settle(ctx context.Context, mem memoryv1.MemoryServiceClient, ids []string, within time.Duration) (map[string][]*memoryv1.Memory, map[string][]string, error) {
	deadline := time.Now().Add(within)
	for {
		histories := map[string][]*memoryv1.Memory{}
		open := map[string][]string{}
		for _, id := range ids {
			ms, err := allMemories(ctx, mem, id)
			if err != nil {
				return nil, nil, err
			}
			histories[id] = ms
			if cs := unansweredCalls(ms); len(cs) > 0 {
				open[id] = cs
			}
		}
		if len(open) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return histories, open, nil
		}
		time.Sleep(time.Second)
	}
}

// unansweredCalls are the ids of tool calls in ms without a stored result.
func unansweredCalls(ms []*memoryv1.Memory) []string {
	answered := map[string]bool{}
	for _, m := range ms {
		if m.GetRole() == memoryv1.Role_ROLE_TOOL {
			answered[m.GetToolCallId()] = true
		}
	}
	var out []string
	for _, m := range ms {
		for _, c := range m.GetToolCalls() {
			if !answered[c.GetId()] {
				out = append(out, fmt.Sprintf("%s (seq %d, %s)", c.GetId(), m.GetSeq(), c.GetName()))
			}
		}
	}
	return out
}

// progressAfter is how long after t the slowest mysis stored its first model reply (before until), which one that
// was, and the myses that stored none in that span.
func progressAfter(histories map[string][]*memoryv1.Memory, t, until time.Time) (time.Duration, string, []string) {
	var worst time.Duration
	var slowest string
	var missing []string
	for id, ms := range histories {
		found := false
		for _, m := range ms {
			at := m.GetCreatedAt().AsTime()
			if m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && at.After(t) && at.Before(until) {
				if d := at.Sub(t); d > worst {
					worst, slowest = d, id
				}
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	return worst, slowest, missing
}

// playGap is the longest pause in any mysis's play across t: from its last stored model reply before t to its first
// after t (before until), and which mysis that was.
func playGap(histories map[string][]*memoryv1.Memory, t, until time.Time) (time.Duration, string) {
	var worst time.Duration
	var who string
	for id, ms := range histories {
		var before, after time.Time
		for _, m := range ms {
			if m.GetRole() != memoryv1.Role_ROLE_ASSISTANT {
				continue
			}
			at := m.GetCreatedAt().AsTime()
			if !at.After(t) {
				before = at
			} else if at.Before(until) {
				after = at
				break
			}
		}
		if before.IsZero() || after.IsZero() {
			continue
		}
		if d := after.Sub(before); d > worst {
			worst, who = d, id
		}
	}
	return worst, who
}

func okDur(d time.Duration, ok bool) string {
	if !ok {
		return "NEVER"
	}
	return d.Round(10 * time.Millisecond).String()
}

func allMemories(ctx context.Context, mem memoryv1.MemoryServiceClient, id string) ([]*memoryv1.Memory, error) {
	var out []*memoryv1.Memory
	from := int64(1)
	for {
		var resp *memoryv1.ListMemoriesRangeResponse
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			resp, err = mem.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: id, FromSeq: from, Limit: 1000})
			if err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("read memories of %s: %w", id, err)
		}
		out = append(out, resp.GetMemories()...)
		if len(resp.GetMemories()) < 1000 {
			return out, nil
		}
		from = out[len(out)-1].GetSeq() + 1
	}
}

// jitter is a duration in [lo, hi].
func jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo+1)
}
