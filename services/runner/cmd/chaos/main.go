// Command chaos is Zoea's repeatable fault suite (`make chaos`). On private ports it starts its own Postgres cluster
// (pg_createcluster), its own JetStream server (in-process, so it can be killed and restarted on the same store),
// the memory, composer and bus services, the simulator and two runner replicas built from this repository; then it
// runs bounded load loops — appends with idempotency keys, broadcasts, a swarm of autopilot myses — while it
// restarts Postgres (fast and immediate), kills NATS, the memory service and a runner replica. At the end it prints
// acknowledged vs stored counts, duplicates, gaps and recovery times, and exits non-zero on any loss.
//
// It never touches the shared Postgres (5432) or NATS (4222): every address is a fresh free port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	natsserver "github.com/nats-io/nats-server/v2/server"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/server"
)

const secretKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

type options struct {
	writers, swarm int
	steady         time.Duration
	keep           bool
}

func main() {
	var o options
	flag.IntVar(&o.writers, "writers", 4, "append loops, one mysis each")
	flag.IntVar(&o.swarm, "swarm", 6, "autopilot myses spread over two runner replicas")
	flag.DurationVar(&o.steady, "steady", 6*time.Second, "load between two faults")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (logs) at the end")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// proc is a service process that can be killed and started again with the same settings.
type proc struct {
	name, bin, logPath string
	env                []string
	cmd                *exec.Cmd
	done               chan struct{}
}

func (p *proc) start() error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(p.done) }()
	return nil
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) term() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.kill()
		}
	}
}

type env struct {
	dir      string
	pgName   string
	pgPort   int
	natsPort int
	natsDir  string
	nats     *natsserver.Server
	procs    map[string]*proc
	memAddr  string
	busAddr  string
	runAddrs []string
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found: run from inside the repository")
		}
		dir = parent
	}
}

func sh(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (e *env) startNATS() error {
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: e.natsPort, JetStream: true, StoreDir: e.natsDir, NoLog: true, NoSigs: true})
	if err != nil {
		return err
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return errors.New("nats not ready")
	}
	e.nats = srv
	return nil
}

func (e *env) killNATS() {
	e.nats.Shutdown()
	e.nats.WaitForShutdown()
}

func waitHealthy(ctx context.Context, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := server.Healthcheck(ctx, addr)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func setup(ctx context.Context, o options, log *slog.Logger) (*env, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "zoea-chaos-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, procs: map[string]*proc{}, natsPort: freePort(), natsDir: filepath.Join(dir, "nats")}
	log.Info("building binaries", "dir", dir)
	for _, svc := range []string{"memory", "composer", "bus", "runner", "spacemolt-sim"} {
		if err := sh("go", "build", "-C", root, "-o", filepath.Join(dir, svc), "./services/"+svc+"/cmd/"+svc); err != nil {
			return e, err
		}
	}
	// A private Postgres cluster on a free port (trust auth on loopback), never the shared one.
	e.pgPort, e.pgName = freePort(), fmt.Sprintf("zoeachaos%d", os.Getpid())
	log.Info("creating a private Postgres cluster", "name", e.pgName, "port", e.pgPort)
	if err := sh("pg_createcluster", "15", e.pgName, "-p", strconv.Itoa(e.pgPort), "--start", "--", "--auth=trust"); err != nil {
		return e, err
	}
	dbURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", e.pgPort)
	if err := e.startNATS(); err != nil {
		return e, err
	}
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", e.natsPort)
	add := func(name, bin string, envs ...string) (*proc, error) {
		p := &proc{name: name, bin: filepath.Join(dir, bin), logPath: filepath.Join(dir, name+".log"), env: envs}
		e.procs[name] = p
		return p, p.start()
	}
	simAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	if _, err := add("spacemolt-sim", "spacemolt-sim", "ZOEA_LISTEN_ADDR="+simAddr, "ZOEA_SIM_TICK=20ms", "ZOEA_SIM_MUTATIONS_PER_MIN=-1", "ZOEA_SIM_READS_PER_MIN=-1", "ZOEA_SIM_CHAT_PER_MIN=-1", "ZOEA_SIM_AUTH_PER_MIN=-1"); err != nil {
		return e, err
	}
	e.memAddr = fmt.Sprintf("127.0.0.1:%d", freePort())
	if _, err := add("memory", "memory", "ZOEA_LISTEN_ADDR="+e.memAddr, "ZOEA_DATABASE_URL="+dbURL, "ZOEA_SECRET_KEY="+secretKey, "ZOEA_MIGRATE_ON_START=true", "ZOEA_DB_MAX_CONNS=16"); err != nil {
		return e, err
	}
	compAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	if _, err := add("composer", "composer", "ZOEA_LISTEN_ADDR="+compAddr, "ZOEA_MEMORY_ADDR="+e.memAddr); err != nil {
		return e, err
	}
	e.busAddr = fmt.Sprintf("127.0.0.1:%d", freePort())
	if _, err := add("bus", "bus", "ZOEA_LISTEN_ADDR="+e.busAddr, "ZOEA_MEMORY_ADDR="+e.memAddr, "ZOEA_NATS_URL="+natsURL); err != nil {
		return e, err
	}
	for _, addr := range []string{e.memAddr, compAddr, e.busAddr} {
		if err := waitHealthy(ctx, addr, 60*time.Second); err != nil {
			return e, err
		}
	}
	for _, id := range []string{"r1", "r2"} {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort())
		e.runAddrs = append(e.runAddrs, addr)
		if _, err := add("runner-"+id, "runner", "ZOEA_LISTEN_ADDR="+addr, "ZOEA_MEMORY_ADDR="+e.memAddr, "ZOEA_COMPOSER_ADDR="+compAddr,
			"ZOEA_NATS_URL="+natsURL, "ZOEA_SPACEMOLT_URL=http://"+simAddr+"/mcp", "ZOEA_REPLICA_ID="+id, "ZOEA_DEFAULT_PROVIDER=autopilot",
			"ZOEA_LEASE_TTL=3s", "ZOEA_TURN_PAUSE=200ms", "ZOEA_ERROR_BACKOFF_MIN=200ms", "ZOEA_ERROR_BACKOFF_MAX=2s", "ZOEA_SHUTDOWN_TIMEOUT=5s"); err != nil {
			return e, err
		}
	}
	for _, addr := range e.runAddrs {
		if err := waitHealthy(ctx, addr, 60*time.Second); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (e *env) teardown(log *slog.Logger, keep bool) {
	for _, p := range e.procs {
		p.term()
	}
	if e.nats != nil {
		e.killNATS()
	}
	if e.pgName != "" {
		if err := sh("pg_dropcluster", "15", e.pgName, "--stop"); err != nil {
			log.Warn("drop Postgres cluster", "err", err)
		}
	}
	if keep {
		log.Info("logs kept", "dir", e.dir)
		return
	}
	_ = os.RemoveAll(e.dir)
}

// counters is what a load loop acknowledged and when it last succeeded.
type counters struct {
	mu      sync.Mutex
	lastOK  time.Time
	acked   int
	retries int
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
		c.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

func run(ctx context.Context, o options) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := setup(ctx, o, log)
	if e != nil {
		defer e.teardown(log, o.keep || err != nil)
	}
	if err != nil {
		return err
	}
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
	runConn, err := server.Dial(e.runAddrs[0], "")
	if err != nil {
		return err
	}
	defer runConn.Close()
	swarm := runnerv1.NewSwarmServiceClient(runConn)

	// The myses: writers (appended to directly) and an autopilot swarm (run by the two replicas).
	var writerIDs, swarmIDs []string
	for i := range o.writers {
		r, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("writer-%d", i), Provider: "autopilot", SystemPrompt: "You are a mysis."})
		if err != nil {
			return fmt.Errorf("create writer: %w", err)
		}
		writerIDs = append(writerIDs, r.GetMysis().GetId())
	}
	for i := range o.swarm {
		r, err := swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: fmt.Sprintf("pilot-%d", i), Start: true})
		if err != nil {
			return fmt.Errorf("create swarm mysis: %w", err)
		}
		swarmIDs = append(swarmIDs, r.GetStatus().GetMysis().GetId())
	}

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
				_, err := bus.Broadcast(c, &busv1.BroadcastRequest{BroadcastId: id, Content: "Chaos drill " + id[:8] + ": keep mining."})
				return err
			}); err == nil {
				ackedBroadcasts = append(ackedBroadcasts, id)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()

	type recovery struct {
		fault                   string
		outage, appends, bcasts time.Duration
		appendOK, bcastOK       bool
	}
	var recs []recovery
	steady := func() {
		select {
		case <-ctx.Done():
		case <-time.After(o.steady):
		}
	}
	faults := []struct {
		name string
		do   func() error
	}{
		{"postgres restart (fast)", func() error { return sh("pg_ctlcluster", "15", e.pgName, "restart", "-m", "fast") }},
		{"postgres restart (immediate)", func() error {
			if err := sh("pg_ctlcluster", "15", e.pgName, "stop", "-m", "immediate"); err != nil {
				return err
			}
			return sh("pg_ctlcluster", "15", e.pgName, "start")
		}},
		{"nats killed (2s down)", func() error {
			e.killNATS()
			time.Sleep(2 * time.Second)
			return e.startNATS()
		}},
		{"memory service SIGKILL", func() error { p := e.procs["memory"]; p.kill(); return p.start() }},
		{"runner r2 SIGKILL", func() error { p := e.procs["runner-r2"]; p.kill(); return p.start() }},
		{"bus SIGKILL", func() error { p := e.procs["bus"]; p.kill(); return p.start() }},
	}
	steady()
	for _, f := range faults {
		if ctx.Err() != nil {
			break
		}
		log.Info("fault", "what", f.name)
		began := time.Now()
		if err := f.do(); err != nil {
			stopLoad()
			wg.Wait()
			return fmt.Errorf("%s: %w", f.name, err)
		}
		// Recovery counts from the moment the component is back (restarted), not from the fault.
		back := time.Now()
		ra, okA := appends.firstOKAfter(ctx, back, 60*time.Second)
		rb, okB := broadcasts.firstOKAfter(ctx, back, 60*time.Second)
		recs = append(recs, recovery{f.name, back.Sub(began), ra, rb, okA, okB})
		steady()
	}
	stopLoad()
	wg.Wait()

	// Let deliveries drain, then count.
	allIDs := append(append([]string(nil), writerIDs...), swarmIDs...)
	fail := false
	var report strings.Builder
	fmt.Fprintf(&report, "\n== recovery (fault injected and component back after \"down\"; then first acknowledged append / broadcast)\n")
	for _, r := range recs {
		fmt.Fprintf(&report, "%-30s down %-8s append %-8s broadcast %-8s\n", r.fault, r.outage.Round(10*time.Millisecond), okDur(r.appends, r.appendOK), okDur(r.bcasts, r.bcastOK))
		fail = fail || !r.appendOK || !r.bcastOK
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
	fail = fail || lost > 0 || dups > 0 || gaps > 0

	// Every acknowledged broadcast reaches every mysis exactly once (deliveries are asynchronous: wait for them).
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
	fail = fail || bLost > 0 || bDups > 0

	// The swarm's histories stay gapless, with each idempotency key once and each tool call answered at most once.
	sGaps, sDups, sTurns := 0, 0, 0
	for _, id := range swarmIDs {
		ms, err := allMemories(ctx, mem, id)
		if err != nil {
			return err
		}
		keys, answered := map[string]bool{}, map[string]int{}
		for i, m := range ms {
			if m.GetSeq() != int64(i+1) {
				sGaps++
			}
			if k := m.GetIdempotencyKey(); k != "" {
				if keys[k] {
					sDups++
				}
				keys[k] = true
			}
			if m.GetRole() == memoryv1.Role_ROLE_TOOL {
				answered[m.GetToolCallId()]++
			}
			if m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) == 0 {
				sTurns++
			}
		}
		for _, n := range answered {
			if n > 1 {
				sDups += n - 1
			}
		}
	}
	fmt.Fprintf(&report, "== swarm: %d myses over 2 replicas, %d finished replies, seq gaps %d, duplicate keys/answers %d\n", len(swarmIDs), sTurns, sGaps, sDups)
	fail = fail || sGaps > 0 || sDups > 0 || sTurns == 0
	fmt.Print(report.String())
	if fail {
		return errors.New("loss, duplicates, gaps or no recovery: see the report above")
	}
	fmt.Println("== PASS: every acknowledged write stored exactly once")
	return nil
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
