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
// recovery times and the RSS, threads, open files and goroutines of every process at the start and the end (each
// service and NATS node serves its goroutine profile on a loopback debug port), and exits non-zero on any failed
// check. -duration repeats the fault cycle until that much time has passed.
//
// -soak (`make soak`) runs the same stack and load without any fault for -duration (an hour by default) and samples
// every process's footprint, every service's bounded caches and the Postgres connections every -sample-every
// (soak.go); it fails, besides every check above, on a cache over its bound or a process that grew in the second half.
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
	"github.com/zoeaswarm/zoea/libs/server"
)

type options struct {
	writers, swarm, slow int
	steady, duration     time.Duration
	broadcastEvery       time.Duration
	slowMin, slowMax     time.Duration
	keep, huge           bool
	soak                 bool          // no faults: sample the stack every sampleEvery for duration (soak.go)
	sampleEvery          time.Duration // -soak: between two samples
	carryCacheBytes      int64         // the composer's ZOEA_COMPOSE_CARRY_CACHE_BYTES (0: its default)
	tokenCacheEntries    int           // the composer's ZOEA_COMPOSE_TOKEN_CACHE_ENTRIES (0: its default)
	postgres             string        // "cluster" (one private Postgres) or "patroni" (an HA cluster)
	pgBinDir             string        // -postgres patroni: the PostgreSQL server binaries found
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
	flag.BoolVar(&o.soak, "soak", false, "no faults: run the load for -duration (default 1h) and sample every process's RSS, goroutines and open files, every service's caches and the Postgres connections every -sample-every; fail on a cache over its bound or growth in the second half")
	flag.DurationVar(&o.sampleEvery, "sample-every", time.Minute, "-soak: time between two samples")
	flag.Int64Var(&o.carryCacheBytes, "carry-cache-bytes", 0, "the composer's carry cache bound (ZOEA_COMPOSE_CARRY_CACHE_BYTES; 0: its default, 64 MiB; -soak: 512 KiB, so 50 myses fill it)")
	flag.IntVar(&o.tokenCacheEntries, "token-cache-entries", 0, "the composer's token-count cache bound (ZOEA_COMPOSE_TOKEN_CACHE_ENTRIES; 0: its default, 262144; -soak: 16384, so 50 myses fill it)")
	flag.StringVar(&o.postgres, "postgres", "cluster", "cluster: one private Postgres, restarted; patroni: a primary and two synchronous replicas under Patroni and etcd, the primary's node killed (failover) instead of every other fault")
	flag.Parse()
	if o.soak {
		// Small cache bounds, so the hour shows each cache reaching its bound and staying there.
		if o.duration == 0 {
			o.duration = time.Hour
		}
		if o.carryCacheBytes == 0 {
			o.carryCacheBytes = 512 << 10
		}
		if o.tokenCacheEntries == 0 {
			o.tokenCacheEntries = 16384
		}
		if o.sampleEvery <= 0 {
			fmt.Fprintln(os.Stderr, "chaos: -sample-every must be positive")
			os.Exit(2)
		}
	}
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

// chaosRun is one run of the suite: the stack it started, the clients it drives it with, the myses it created, what
// the load loops acknowledged, the recoveries it measured and the report it writes.
type chaosRun struct {
	o      options
	log    *slog.Logger
	e      *env
	model  *slowModel
	mem    memoryv1.MemoryServiceClient
	bus    busv1.BusServiceClient
	swarms []runnerv1.SwarmServiceClient

	writerIDs, swarmIDs []string
	names               map[string]string // mysis id → name, for the swarm's myses
	startRes            map[string]usage

	appends, broadcasts *counters
	ackedKeys           [][]string // per writer, the idempotency keys of its acknowledged appends
	ackedBroadcasts     []string

	recs           []recovery
	stopCut        *stopAfterKill
	began, stopped time.Time
	histories      map[string][]*memoryv1.Memory
	unanswered     map[string][]string
	report         strings.Builder
	fail           bool
	slowReplies    int      // the slow model's stored replies (checkSwarm), for checkDiscarded
	samples        []sample // -soak: the stack read every -sample-every
}

// run starts the stack, creates the myses, drives the load through every fault (repeated for -duration), lets the
// myses settle and checks what was stored; it returns an error when the stack failed or a check failed.
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
	c := &chaosRun{o: o, log: log, e: e, model: model, names: map[string]string{}, appends: &counters{}, broadcasts: &counters{},
		ackedKeys: make([][]string, o.writers), stopCut: &stopAfterKill{}}
	closeConns, err := c.dial()
	defer closeConns()
	if err != nil {
		return err
	}
	if err := c.createMyses(ctx); err != nil {
		return err
	}
	c.startRes = e.resources()

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	c.startAppends(loadCtx, &wg)
	c.startBroadcasts(loadCtx, &wg)
	c.began = time.Now()
	if o.soak {
		c.soak(ctx)
	} else {
		c.sleep(ctx, o.steady)
		if err := c.faultCycles(ctx); err != nil {
			stopLoad()
			wg.Wait()
			return err
		}
	}
	// The slow model needs up to slow-max per reply and a killed runner's myses wait for its lease: give the last
	// fault time to show progress before the load stops.
	// A slow-model turn that a broadcast races needs up to three replies (call, discarded answer, kept answer).
	c.sleep(ctx, 3*o.slowMax+5*time.Second)
	stopLoad()
	wg.Wait()
	c.stopped = time.Now()
	return c.check(ctx)
}

// dial connects to the memory service, the bus and the swarm API of both runners; the returned func closes every
// connection opened, also when dial failed half-way.
func (c *chaosRun) dial() (func(), error) {
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	memConn, err := server.Dial(c.e.memAddr, "")
	if err != nil {
		return closeAll, err
	}
	closers = append(closers, memConn.Close)
	c.mem = memoryv1.NewMemoryServiceClient(memConn)
	busConn, err := server.Dial(c.e.busAddr, "")
	if err != nil {
		return closeAll, err
	}
	closers = append(closers, busConn.Close)
	c.bus = busv1.NewBusServiceClient(busConn)
	// The swarm API of both runners: either serves every mysis; the one that is down is skipped.
	for _, addr := range c.e.runAddrs {
		conn, err := server.Dial(addr, "")
		if err != nil {
			return closeAll, err
		}
		closers = append(closers, conn.Close)
		c.swarms = append(c.swarms, runnerv1.NewSwarmServiceClient(conn))
	}
	return closeAll, nil
}

// createMyses creates the myses: writers (appended to directly), an autopilot swarm and the slow-model myses (run by
// the replicas, started at once).
func (c *chaosRun) createMyses(ctx context.Context) error {
	for i := range c.o.writers {
		r, err := c.mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("writer-%d", i), Provider: "autopilot", SystemPrompt: "You are a mysis."})
		if err != nil {
			return fmt.Errorf("create writer: %w", err)
		}
		c.writerIDs = append(c.writerIDs, r.GetMysis().GetId())
	}
	for i := range c.o.swarm + c.o.slow {
		req := &runnerv1.CreateMysisRequest{Name: fmt.Sprintf("pilot-%d", i), Start: true}
		if i >= c.o.swarm {
			req.Name, req.Provider, req.Model = fmt.Sprintf("slow-%d", i-c.o.swarm), "openai", "chaos-slow"
		}
		r, err := c.swarms[0].CreateMysis(ctx, req)
		if err != nil {
			return fmt.Errorf("create swarm mysis: %w", err)
		}
		c.swarmIDs = append(c.swarmIDs, r.GetStatus().GetMysis().GetId())
		c.names[r.GetStatus().GetMysis().GetId()] = req.Name
	}
	return nil
}

// startAppends starts one append loop per writer until loadCtx ends: a steady trickle of appends, each with its own
// idempotency key, retried until acknowledged; the acknowledged keys are kept for the final check.
func (c *chaosRun) startAppends(loadCtx context.Context, wg *sync.WaitGroup) {
	for w := range c.o.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; loadCtx.Err() == nil; i++ {
				key := fmt.Sprintf("chaos:%d:%d", w, i)
				err := retry(loadCtx, c.appends, func(cc context.Context) error {
					_, err := c.mem.AppendMemories(cc, &memoryv1.AppendMemoriesRequest{MysisId: c.writerIDs[w], Memories: []*memoryv1.NewMemory{{
						Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "order " + key, IdempotencyKey: key}}})
					return err
				})
				if err == nil {
					c.ackedKeys[w] = append(c.ackedKeys[w], key)
				}
				time.Sleep(20 * time.Millisecond) // a steady trickle: the check is about loss, not throughput
			}
		}()
	}
}

// startBroadcasts starts the commander's loop until loadCtx ends: a broadcast every -broadcast-every, retried under
// the same id until acknowledged; the acknowledged ids are kept for the final check.
func (c *chaosRun) startBroadcasts(loadCtx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for loadCtx.Err() == nil {
			id := uuid.NewString()
			if err := retry(loadCtx, c.broadcasts, func(cc context.Context) error {
				_, err := c.bus.Broadcast(cc, &busv1.BroadcastRequest{BroadcastId: id, Content: "Chaos drill " + id[:8] + ": report and keep mining."})
				return err
			}); err == nil {
				c.ackedBroadcasts = append(c.ackedBroadcasts, id)
			}
			select {
			case <-loadCtx.Done():
			case <-time.After(c.o.broadcastEvery):
			}
		}
	}()
}

// sleep waits d, or less when ctx ends.
func (c *chaosRun) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// faultCycles runs every fault in turn (the env's, then the stop after a kill unless under Patroni), with -steady
// load after each, and repeats the cycle until -duration has passed (once when it is 0).
func (c *chaosRun) faultCycles(ctx context.Context) error {
	for round := 1; ctx.Err() == nil; round++ {
		faults := c.e.faults()
		if c.e.ha == nil {
			faults = append(faults, c.stopCut.fault(ctx, c.e, c.mem, c.swarms))
		}
		for _, f := range faults {
			if ctx.Err() != nil {
				break
			}
			name := f.name
			if c.o.duration > 0 {
				name = fmt.Sprintf("#%d %s", round, f.name)
			}
			if err := c.inject(ctx, name, f); err != nil {
				return err
			}
			c.sleep(ctx, c.o.steady)
		}
		if time.Since(c.began) >= c.o.duration {
			break
		}
	}
	return nil
}

// inject runs one fault and records its recovery: the outage, then from the moment the component is back (not from
// the fault) the first acknowledged append and broadcast; then the fault's follow-up, if any.
func (c *chaosRun) inject(ctx context.Context, name string, f fault) error {
	c.log.Info("fault", "what", name)
	t0 := time.Now()
	if err := f.do(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	back := time.Now()
	ra, okA := c.appends.firstOKAfter(ctx, back, 90*time.Second)
	rb, okB := c.broadcasts.firstOKAfter(ctx, back, 90*time.Second)
	c.recs = append(c.recs, recovery{fault: name, began: t0, back: back, outage: back.Sub(t0), appends: ra, bcasts: rb, appendOK: okA, bcastOK: okB})
	if f.then != nil {
		if err := f.then(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
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
