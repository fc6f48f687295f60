// Command scaleload measures how runner replicas share a swarm (issue 31). Against a running memory service,
// composer, simulator and NATS, it starts runner processes (the runner binary) in a swarm of its own (ZOEA_SWARM),
// creates and starts N autopilot myses with a simulated model latency, broadcasts them a mission, and then scales the replicas: 2 → 4 → 3 → 2
// by SIGTERM, then 3 and back to 2 by kill -9. After each step it reports how long the lease split took to come
// within ±10% of fair on every live replica. At the end it reads every mysis's memories and reports turns
// (completed, superseded, lost, open at the end: countTurns), tool calls answered twice, calls cut by a stop or a
// crash, and the largest gap in any mysis's play.
//
//	scaleload -runner ./bin/runner -myses 600 -latency 3s
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/lease"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

type flags struct {
	runnerBin, memory, composer, bus, nats, sim, swarm, logDir, prefix string
	myses, portBase, parallel, authPerMin                              int
	latency, leaseTTL, settle, stepLimit, turnPause, stopGrace         time.Duration
	// tally: only read the histories of the myses named prefix* from the memory service and report, as after a
	// run (make k8s-check counts a cluster's swarm this way).
	tally bool
}

func main() {
	var f flags
	flag.StringVar(&f.runnerBin, "runner", "./bin/runner", "runner binary")
	flag.StringVar(&f.memory, "memory", "127.0.0.1:26001", "memory service")
	flag.StringVar(&f.composer, "composer", "127.0.0.1:26002", "composer service")
	flag.StringVar(&f.bus, "bus", "127.0.0.1:26004", "bus service of the same swarm (the mission is broadcast through it)")
	flag.StringVar(&f.nats, "nats", "nats://127.0.0.1:4222", "NATS URL")
	flag.StringVar(&f.sim, "sim", "http://127.0.0.1:26100/mcp", "SpaceMolt MCP URL")
	flag.IntVar(&f.authPerMin, "auth-per-min", -1, "the runners' ZOEA_SPACEMOLT_AUTH_PER_MIN (-1: logins not paced, for a simulator started with ZOEA_SIM_AUTH_PER_MIN=-1)")
	flag.StringVar(&f.swarm, "swarm", "scaleload", "ZOEA_SWARM of the replicas (keeps their leases apart from other runners)")
	flag.StringVar(&f.logDir, "logs", os.TempDir(), "directory for the replicas' logs")
	flag.IntVar(&f.myses, "myses", 600, "autopilot myses")
	flag.StringVar(&f.prefix, "prefix", "scale", "mysis name prefix")
	flag.IntVar(&f.portBase, "port-base", 26300, "replica i listens on port-base+i")
	flag.IntVar(&f.parallel, "parallel", 16, "concurrent create/start/read calls")
	flag.DurationVar(&f.latency, "latency", 3*time.Second, "simulated model latency per reply (ZOEA_AUTOPILOT_LATENCY)")
	flag.DurationVar(&f.leaseTTL, "lease-ttl", 15*time.Second, "ZOEA_LEASE_TTL")
	flag.DurationVar(&f.settle, "settle", 20*time.Second, "play between a fair split and the next step")
	flag.DurationVar(&f.stepLimit, "step-limit", 5*time.Minute, "give up waiting for a fair split after this long")
	flag.DurationVar(&f.turnPause, "turn-pause", 2*time.Second, "ZOEA_TURN_PAUSE")
	flag.DurationVar(&f.stopGrace, "stop-grace", 30*time.Second, "ZOEA_STOP_GRACE (below the SIGTERM wait of 45s, the runner pod's grace period)")
	flag.BoolVar(&f.tally, "tally", false, "start nothing: report the histories of the myses named -prefix* in -memory (turns lost, calls answered twice, cut calls, largest gap)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	do := run
	if f.tally {
		do = tally
	}
	if err := do(ctx, f); err != nil {
		fmt.Fprintln(os.Stderr, "scaleload:", err)
		os.Exit(1)
	}
}

// replica is one runner process.
type replica struct {
	name, addr string
	cmd        *exec.Cmd
	done       chan struct{}
}

func (f flags) start(i int) (*replica, error) {
	r := &replica{name: fmt.Sprintf("replica-%d", i), addr: fmt.Sprintf("127.0.0.1:%d", f.portBase+i), done: make(chan struct{})}
	logf, err := os.OpenFile(filepath.Join(f.logDir, r.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(f.runnerBin)
	cmd.Env = append(os.Environ(),
		"ZOEA_LISTEN_ADDR="+r.addr, "ZOEA_REPLICA_ID="+r.name, "ZOEA_SWARM="+f.swarm,
		"ZOEA_MEMORY_ADDR="+f.memory, "ZOEA_COMPOSER_ADDR="+f.composer, "ZOEA_NATS_URL="+f.nats, "ZOEA_SPACEMOLT_URL="+f.sim, fmt.Sprintf("ZOEA_SPACEMOLT_AUTH_PER_MIN=%d", f.authPerMin),
		"ZOEA_LEASE_TTL="+f.leaseTTL.String(), "ZOEA_AUTOPILOT_LATENCY="+f.latency.String(), "ZOEA_TURN_PAUSE="+f.turnPause.String(),
		"ZOEA_STOP_GRACE="+f.stopGrace.String(), "ZOEA_DEFAULT_PROVIDER=autopilot", "OTEL_SDK_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	r.cmd = cmd
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(r.done) }()
	return r, nil
}

func (r *replica) signal(s syscall.Signal) {
	_ = r.cmd.Process.Signal(s)
	select {
	case <-r.done:
	case <-time.After(45 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// split is how many leases each holder has.
func split(ctx context.Context, l *swarmbus.Leases) (map[string]int, int, error) {
	owners, err := l.Owners(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int{}
	for _, h := range owners {
		out[h]++
	}
	return out, len(owners), nil
}

func fair(counts map[string]int, owned, total int, live []*replica) bool {
	if owned != total {
		return false
	}
	share := float64(total) / float64(len(live))
	n := 0
	for _, r := range live {
		c := float64(counts[r.name])
		if c < share*(1-lease.Tolerance) || c > share*(1+lease.Tolerance) {
			return false
		}
		n += counts[r.name]
	}
	return n == total
}

func show(counts map[string]int) string {
	var parts []string
	for h, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", h, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func run(ctx context.Context, f flags) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus, err := swarmbus.Connect(ctx, f.nats, swarmbus.Options{Name: "scaleload", Logger: log, LeaseTTL: f.leaseTTL, Swarm: f.swarm, Role: swarmbus.RoleRunner})
	if err != nil {
		return err
	}
	defer bus.Close()
	observer, err := bus.Leases("scaleload-observer")
	if err != nil {
		return err
	}
	var live []*replica
	defer func() {
		for _, r := range live {
			r.signal(syscall.SIGTERM)
		}
	}()
	next := 1
	add := func() error {
		r, err := f.start(next)
		if err != nil {
			return err
		}
		next++
		live = append(live, r)
		hctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for server.Healthcheck(hctx, r.addr) != nil {
			if hctx.Err() != nil {
				return fmt.Errorf("%s not healthy (log in %s)", r.name, f.logDir)
			}
			time.Sleep(200 * time.Millisecond) // polling a process's health: no event to wait on
		}
		return nil
	}
	remove := func(sig syscall.Signal) {
		r := live[len(live)-1]
		live = live[:len(live)-1]
		r.signal(sig)
	}
	// waitFair polls the lease table until the split is fair and reports how long that took.
	waitFair := func(step string, began time.Time) (time.Duration, error) {
		lastShown := time.Time{}
		for {
			counts, owned, err := split(ctx, observer)
			if err != nil {
				return 0, err
			}
			if fair(counts, owned, f.myses, live) {
				took := time.Since(began)
				fmt.Printf("%-34s fair after %6.1fs: %s\n", step, took.Seconds(), show(counts))
				return took, nil
			}
			if time.Since(lastShown) > 10*time.Second {
				fmt.Printf("  %5.0fs %s (owned %d/%d)\n", time.Since(began).Seconds(), show(counts), owned, f.myses)
				lastShown = time.Now()
			}
			if time.Since(began) > f.stepLimit {
				return 0, fmt.Errorf("%s: no fair split within %s: %s", step, f.stepLimit, show(counts))
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(250 * time.Millisecond): // sampling the split
			}
		}
	}
	settle := func() {
		select {
		case <-ctx.Done():
		case <-time.After(f.settle):
		}
	}

	for range 2 {
		if err := add(); err != nil {
			return err
		}
	}
	conn, err := server.Dial(live[0].addr, "")
	if err != nil {
		return err
	}
	defer conn.Close()
	swarm := runnerv1.NewSwarmServiceClient(conn)
	ids := make([]string, f.myses)
	created := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.parallel)
	for i := range ids {
		g.Go(func() error {
			resp, err := swarm.CreateMysis(gctx, &runnerv1.CreateMysisRequest{Name: fmt.Sprintf("%s-%04d", f.prefix, i), Provider: memoryrules.AutopilotProvider})
			if err != nil {
				return fmt.Errorf("create: %w", err)
			}
			ids[i] = resp.GetStatus().GetMysis().GetId()
			if _, err := swarm.StartMysis(gctx, &runnerv1.StartMysisRequest{Mysis: ids[i]}); err != nil {
				return fmt.Errorf("start: %w", err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	bconn, err := server.Dial(f.bus, "")
	if err != nil {
		return err
	}
	defer bconn.Close()
	if _, err := busv1.NewBusServiceClient(bconn).Broadcast(ctx, &busv1.BroadcastRequest{Content: "Mission: mine ore, sell it at the station, and keep your ship fuelled."}); err != nil {
		return fmt.Errorf("broadcast the mission: %w", err)
	}
	fmt.Printf("%d myses created and started in %.1fs (simulated model latency %s, lease TTL %s)\n", f.myses, time.Since(created).Seconds(), f.latency, f.leaseTTL)
	playFrom := time.Now()
	type result struct {
		step string
		took time.Duration
	}
	var results []result
	var starts []time.Time
	var names []string
	step := func(name string, change func() error) error {
		began := time.Now()
		starts, names = append(starts, began), append(names, name)
		if err := change(); err != nil {
			return err
		}
		took, err := waitFair(name, began)
		if err != nil {
			return err
		}
		results = append(results, result{name, took})
		settle()
		return nil
	}
	steps := []struct {
		name   string
		change func() error
	}{
		{"start on 2 replicas", func() error { return nil }},
		{"scale 2 → 4 (two replicas start)", func() error { return errors.Join(add(), add()) }},
		{"scale 4 → 3 (SIGTERM)", func() error { remove(syscall.SIGTERM); return nil }},
		{"scale 3 → 2 (SIGTERM)", func() error { remove(syscall.SIGTERM); return nil }},
		{"scale 2 → 3 (one replica starts)", add},
		{"scale 3 → 2 (kill -9)", func() error { remove(syscall.SIGKILL); return nil }},
	}
	for _, s := range steps {
		if err := step(s.name, s.change); err != nil {
			return err
		}
	}
	playTo := time.Now()
	for len(live) > 0 {
		remove(syscall.SIGTERM)
	}

	mconn, err := server.Dial(f.memory, "", grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer mconn.Close()
	return report(ctx, memoryv1.NewMemoryServiceClient(mconn), ids, playFrom, playTo, starts, names, f.parallel)
}

// report reads every mysis's memories and checks the play between from and to.
func report(ctx context.Context, mem memoryv1.MemoryServiceClient, ids []string, from, to time.Time, starts []time.Time, names []string, parallel int) error {
	type stats struct {
		replies, results, twice, notRun, interrupted int
		gap                                          time.Duration
		gapMysis                                     string
		stepGap                                      []time.Duration // largest gap ending during each step
		turns                                        turnCount
		// calls cut during each step, and after the play (the final teardown) at index len(starts)
		stepNotRun, stepUnknown []int
	}
	stepOf := func(at time.Time) int {
		i := len(starts) - 1
		for i > 0 && at.Before(starts[i]) {
			i--
		}
		return i
	}
	per := make([]stats, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, id := range ids {
		g.Go(func() error {
			ms, err := allMemories(gctx, mem, id)
			if err != nil {
				return err
			}
			s := &per[i]
			s.stepGap = make([]time.Duration, len(starts))
			s.turns = countTurns(ms)
			s.stepNotRun, s.stepUnknown = make([]int, len(starts)+1), make([]int, len(starts)+1)
			answered := map[string]int{}
			var last time.Time
			for _, m := range ms {
				at := m.GetCreatedAt().AsTime()
				if at.After(from) && at.Before(to) {
					if !last.IsZero() && at.Sub(last) > s.gap {
						s.gap, s.gapMysis = at.Sub(last), id
					}
					if k := stepOf(at); !last.IsZero() && at.Sub(last) > s.stepGap[k] {
						s.stepGap[k] = at.Sub(last)
					}
					last = at
				}
				switch {
				case m.GetRole() == memoryv1.Role_ROLE_ASSISTANT:
					s.replies++
				case m.GetToolCallId() != "":
					s.results++
					answered[m.GetToolCallId()]++
					k := len(starts) // the teardown
					if at := m.GetCreatedAt().AsTime(); at.Before(to) {
						k = stepOf(at)
					}
					switch m.GetContent() {
					case mysis.NotRunResult:
						s.notRun++
						s.stepNotRun[k]++
					case mysis.InterruptedResult:
						s.interrupted++
						s.stepUnknown[k]++
					}
				}
			}
			for _, n := range answered {
				if n > 1 {
					s.twice++
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	tot := stats{stepGap: make([]time.Duration, len(starts)), stepNotRun: make([]int, len(starts)+1), stepUnknown: make([]int, len(starts)+1)}
	for _, s := range per {
		for k := range tot.stepNotRun {
			tot.stepNotRun[k] += s.stepNotRun[k]
			tot.stepUnknown[k] += s.stepUnknown[k]
		}
		for k, g := range s.stepGap {
			tot.stepGap[k] = max(tot.stepGap[k], g)
		}
		tot.replies += s.replies
		tot.results += s.results
		tot.twice += s.twice
		tot.notRun += s.notRun
		tot.interrupted += s.interrupted
		tot.turns.add(s.turns)
		if s.gap > tot.gap {
			tot.gap, tot.gapMysis = s.gap, s.gapMysis
		}
	}
	fmt.Printf("play %s: %d model replies, %d tool results; calls answered twice %d; calls not run (cut by a stop) %d; calls with an unknown result (cut by a crash) %d\n",
		to.Sub(from).Round(time.Second), tot.replies, tot.results, tot.twice, tot.notRun, tot.interrupted)
	fmt.Printf("turns: %d completed, %d superseded by a newer prompt, turns lost %d, %d open at the end only because the run stopped\n",
		tot.turns.completed, tot.turns.superseded, tot.turns.lost, tot.turns.openAtEnd)
	shown := 0
	for i, s := range per {
		if len(s.turns.lostTurns) > 0 && shown < 10 {
			fmt.Printf("  lost: mysis %s turns %v\n", ids[i], s.turns.lostTurns)
			shown++
		}
	}
	fmt.Printf("largest gap between two stored memories of one mysis: %.1fs (%s)\n", tot.gap.Seconds(), cmp.Or(tot.gapMysis, "-"))
	for k, name := range names {
		fmt.Printf("  during %-34s largest gap ending %5.1fs; calls not run %d, unknown result %d\n",
			name+":", tot.stepGap[k].Seconds(), tot.stepNotRun[k], tot.stepUnknown[k])
	}
	fmt.Printf("  after the play (final teardown): calls not run %d, unknown result %d\n", tot.stepNotRun[len(starts)], tot.stepUnknown[len(starts)])
	if tot.twice > 0 || tot.turns.lost > 0 {
		return fmt.Errorf("%d tool calls answered twice, %d turns lost", tot.twice, tot.turns.lost)
	}
	return nil
}

func allMemories(ctx context.Context, mem memoryv1.MemoryServiceClient, id string) ([]*memoryv1.Memory, error) {
	var out []*memoryv1.Memory
	from := int64(1)
	for {
		resp, err := mem.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: id, FromSeq: from, Limit: 1000})
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

// tally reports the histories of every mysis named f.prefix* as report does after a run, over the whole history.
func tally(ctx context.Context, f flags) error {
	mconn, err := server.Dial(f.memory, "", grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer mconn.Close()
	mem := memoryv1.NewMemoryServiceClient(mconn)
	var ids []string
	req := &memoryv1.ListMysesRequest{PageSize: 1000}
	for {
		resp, err := mem.ListMyses(ctx, req)
		if err != nil {
			return fmt.Errorf("list myses: %w", err)
		}
		for _, m := range resp.GetMyses() {
			if strings.HasPrefix(m.GetName(), f.prefix) {
				ids = append(ids, m.GetId())
			}
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if len(ids) == 0 {
		return fmt.Errorf("no mysis named %s* in the memory service at %s", f.prefix, f.memory)
	}
	fmt.Printf("myses: %d\n", len(ids))
	return report(ctx, mem, ids, time.Time{}, time.Now(), []time.Time{{}}, []string{"the whole history"}, f.parallel)
}
