// Command swarmload measures one runner replica under a swarm: it runs the runner in-process against an existing
// Zoea stack (memory, composer, bus, NATS, simulator), creates N myses on a provider (autopilot by default),
// broadcasts missions and reports broadcast-to-memory latencies, turns per second, runner CPU per turn without the
// model's own time, and memory per mysis.
//
//	swarmload -myses 1000 -duration 60s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "swarmload:", err)
		os.Exit(1)
	}
}

type flags struct {
	myses      int
	duration   time.Duration
	warmup     time.Duration
	provider   string
	prefix     string
	turnPause  time.Duration
	memory     string
	composer   string
	bus        string
	nats       string
	sim        string
	leaseTTL   time.Duration
	createPar  int
	bcastWait  time.Duration
	maxToolIts int
	embedNATS  string
}

// timed wraps a provider to count calls and the time spent in the model.
type timed struct {
	llm.Provider
	calls atomic.Int64
	nanos atomic.Int64
}

// Chat measures the thread CPU time of the call: the goroutine is locked to its OS thread, so RUSAGE_THREAD counts
// exactly the model's own work (the autopilot is synchronous and CPU-bound), not time spent waiting for a CPU.
func (t *timed) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	resp, err := t.Provider.Chat(ctx, req)
	t.nanos.Add(int64(threadCPU() - start))
	t.calls.Add(1)
	return resp, err
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(ctx context.Context, args []string) error {
	var f flags
	fs := flag.NewFlagSet("swarmload", flag.ContinueOnError)
	fs.IntVar(&f.myses, "myses", 1000, "number of myses")
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "steady-state measurement window")
	fs.DurationVar(&f.warmup, "warmup", 15*time.Second, "wait after the first broadcast before measuring")
	fs.StringVar(&f.provider, "provider", memoryrules.AutopilotProvider, "provider of the myses")
	fs.StringVar(&f.prefix, "prefix", "load", "mysis name prefix")
	fs.DurationVar(&f.turnPause, "turn-pause", 2*time.Second, "ZOEA_TURN_PAUSE of the runner")
	fs.StringVar(&f.memory, "memory", envOr("ZOEA_MEMORY_ADDR", "127.0.0.1:7001"), "memory service")
	fs.StringVar(&f.composer, "composer", envOr("ZOEA_COMPOSER_ADDR", "127.0.0.1:7002"), "composer service")
	fs.StringVar(&f.bus, "bus", envOr("ZOEA_BUS_ADDR", "127.0.0.1:7004"), "bus service")
	fs.StringVar(&f.nats, "nats", envOr("ZOEA_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL")
	fs.StringVar(&f.sim, "sim", envOr("ZOEA_SPACEMOLT_URL", "http://127.0.0.1:7100/mcp"), "SpaceMolt MCP URL")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 15*time.Second, "lease TTL")
	fs.IntVar(&f.createPar, "create-parallel", 32, "concurrent CreateMysis calls")
	fs.DurationVar(&f.bcastWait, "broadcast-timeout", 120*time.Second, "how long to wait for every mysis to answer a broadcast")
	fs.IntVar(&f.maxToolIts, "max-tool-iterations", 10, "ZOEA_MAX_TOOL_ITERATIONS")
	fs.StringVar(&f.embedNATS, "embedded-nats", "", "run an embedded NATS server (JetStream store in this directory) on the -nats URL's port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if f.embedNATS != "" {
		ns, err := startNATS(f.nats, f.embedNATS)
		if err != nil {
			return err
		}
		defer ns.Shutdown()
	}

	cfg, err := app.LoadConfig()
	if err != nil {
		return err
	}
	cfg.Server.ListenAddr = "127.0.0.1:0"
	cfg.MemoryAddr, cfg.ComposerAddr, cfg.NATSURL, cfg.SpaceMoltURL = f.memory, f.composer, f.nats, f.sim
	cfg.TurnPause, cfg.LeaseTTL, cfg.ReplicaID, cfg.MaxToolIterations = f.turnPause, f.leaseTTL, "swarmload", f.maxToolIts
	var (
		wrapMu  sync.Mutex
		wrapped = map[string]*timed{}
	)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rctx, cancelRunner := context.WithCancel(ctx)
	runnerDone := make(chan error, 1)
	go func() {
		runnerDone <- app.Run(rctx, cfg, app.Options{Logger: log, Listener: lis, WrapProvider: func(p llm.Provider) llm.Provider {
			t := &timed{Provider: p}
			wrapMu.Lock()
			wrapped[p.Name()] = t
			wrapMu.Unlock()
			return t
		}})
	}()
	defer func() {
		cancelRunner()
		<-runnerDone
	}()
	hctx, hcancel := context.WithTimeout(ctx, 60*time.Second)
	for server.Healthcheck(hctx, lis.Addr().String()) != nil {
		if hctx.Err() != nil {
			hcancel()
			return fmt.Errorf("runner not healthy: are memory, composer and NATS up?")
		}
		time.Sleep(100 * time.Millisecond)
	}
	hcancel()

	swarmConn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		return err
	}
	defer swarmConn.Close()
	swarm := runnerv1.NewSwarmServiceClient(swarmConn)
	memConn, err := server.Dial(f.memory, "")
	if err != nil {
		return err
	}
	defer memConn.Close()
	mem := memoryv1.NewMemoryServiceClient(memConn)
	bctx, bcancel := context.WithTimeout(ctx, 60*time.Second)
	for server.Healthcheck(bctx, f.bus) != nil {
		if bctx.Err() != nil {
			bcancel()
			return fmt.Errorf("bus %s not healthy", f.bus)
		}
		time.Sleep(100 * time.Millisecond)
	}
	bcancel()
	busConn, err := server.Dial(f.bus, "")
	if err != nil {
		return err
	}
	defer busConn.Close()
	bus := busv1.NewBusServiceClient(busConn)

	runtime.GC()
	baseRSS, baseHeap := rssBytes(), heapBytes()
	fmt.Printf("runner up; baseline RSS %s, heap %s\n", mib(baseRSS), mib(baseHeap))

	// Create the myses (idle: the broadcast starts them).
	start := time.Now()
	ids := make([]string, f.myses)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.createPar)
	for i := range f.myses {
		g.Go(func() error {
			name := fmt.Sprintf("%s-%04d", f.prefix, i)
			resp, err := swarm.CreateMysis(gctx, &runnerv1.CreateMysisRequest{Name: name, Provider: f.provider})
			if status.Code(err) == codes.AlreadyExists {
				got, gerr := swarm.GetMysis(gctx, &runnerv1.GetMysisRequest{Mysis: name})
				if gerr != nil {
					return gerr
				}
				ids[i] = got.GetStatus().GetMysis().GetId()
				return nil
			}
			if err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
			ids[i] = resp.GetStatus().GetMysis().GetId()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Printf("created %d myses in %v\n", f.myses, time.Since(start).Round(time.Millisecond))

	// Broadcast 1: cold (every mysis connects, registers and logs in on its first turn).
	cold, err := measureBroadcast(ctx, bus, mem, ids, "Mission: mine ore, sell it at the station, and keep your ship fuelled.", f.bcastWait)
	if err != nil {
		return err
	}
	cold.print("broadcast 1 (cold: MCP connect + register + login on the first turn)")

	fmt.Printf("warming up %v\n", f.warmup)
	sleep(ctx, f.warmup)

	// Steady state.
	turns0, err := totalTurns(ctx, swarm)
	if err != nil {
		return err
	}
	cpu0, model0, calls0, t0 := cpuTime(), modelNanos(&wrapMu, wrapped), modelCalls(&wrapMu, wrapped), time.Now()
	sleep(ctx, f.duration)
	turns1, err := totalTurns(ctx, swarm)
	if err != nil {
		return err
	}
	cpu1, model1, calls1, t1 := cpuTime(), modelNanos(&wrapMu, wrapped), modelCalls(&wrapMu, wrapped), time.Now()
	runtime.GC()
	rss, heap := rssBytes(), heapBytes()
	dt := t1.Sub(t0).Seconds()
	dTurns := turns1 - turns0
	dCalls := calls1 - calls0
	cpuRunner := (cpu1 - cpu0) - time.Duration(model1-model0)
	fmt.Printf("steady state over %.0fs: %d turns (%.1f turns/s), %d LLM calls (%.1f/s)\n", dt, dTurns, float64(dTurns)/dt, dCalls, float64(dCalls)/dt)
	if dTurns > 0 {
		fmt.Printf("runner CPU %v total, model CPU %v; runner CPU per turn excluding the model: %v; per LLM iteration: %v\n",
			(cpu1 - cpu0).Round(time.Millisecond), time.Duration(model1-model0).Round(time.Millisecond),
			(cpuRunner / time.Duration(dTurns)).Round(time.Microsecond), (cpuRunner / time.Duration(max(dCalls, 1))).Round(time.Microsecond))
	}
	dRSS, dHeap := int64(rss)-int64(baseRSS), int64(heap)-int64(baseHeap)
	fmt.Printf("memory: RSS %s (%+.1f MiB, %.1f KiB per mysis), heap %s (%+.1f MiB, %.1f KiB per mysis), goroutines %d\n",
		mib(rss), float64(dRSS)/(1<<20), float64(dRSS)/1024/float64(f.myses), mib(heap), float64(dHeap)/(1<<20), float64(dHeap)/1024/float64(f.myses), runtime.NumGoroutine())

	// Broadcast 2: warm (sessions open, myses running their loops).
	warm, err := measureBroadcast(ctx, bus, mem, ids, "Mission update: keep mining and report your credits in your captain's log.", f.bcastWait)
	if err != nil {
		return err
	}
	warm.print("broadcast 2 (warm)")
	return nil
}

type bcastResult struct {
	targets    int
	delivered  []time.Duration // broadcast accepted → delivery row written
	answered   []time.Duration // broadcast accepted → first assistant row after it
	missing    int
	acceptTook time.Duration
}

func (b bcastResult) print(title string) {
	fmt.Printf("%s: %d targets, Broadcast RPC %v\n", title, b.targets, b.acceptTook.Round(time.Millisecond))
	fmt.Printf("  delivery row written: %s\n", dist(b.delivered))
	fmt.Printf("  first answer row written: %s\n", dist(b.answered))
	if b.missing > 0 {
		fmt.Printf("  %d myses had not answered when the wait ended\n", b.missing)
	}
}

func dist(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Millisecond)
	}
	return fmt.Sprintf("n=%d p50=%v p90=%v p99=%v max=%v", len(ds), q(0.5), q(0.9), q(0.99), ds[len(ds)-1].Round(time.Millisecond))
}

// measureBroadcast sends a broadcast and waits until every mysis has its delivery row and an assistant row after
// it, reading the rows' own timestamps (the memory service's clock, the same machine).
func measureBroadcast(ctx context.Context, bus busv1.BusServiceClient, mem memoryv1.MemoryServiceClient, ids []string, text string, wait time.Duration) (bcastResult, error) {
	res := bcastResult{targets: len(ids)}
	sent := time.Now()
	resp, err := bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: text})
	if err != nil {
		return res, fmt.Errorf("broadcast: %w", err)
	}
	res.acceptTook = time.Since(sent)
	bid := resp.GetBroadcastId()
	pending := slices.Clone(ids)
	deadline := time.Now().Add(wait)
	var mu sync.Mutex
	for len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		var still []string
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(32)
		for _, id := range pending {
			g.Go(func() error {
				r, err := mem.ListRecentMemories(gctx, &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: 60})
				if err != nil {
					return err
				}
				var delivered time.Time
				var answered time.Time
				for _, m := range r.GetMemories() {
					if m.GetBroadcastId() == bid {
						delivered = m.GetCreatedAt().AsTime()
						continue
					}
					if !delivered.IsZero() && m.GetRole() == memoryv1.Role_ROLE_ASSISTANT {
						answered = m.GetCreatedAt().AsTime()
						break
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if delivered.IsZero() || answered.IsZero() {
					still = append(still, id)
					return nil
				}
				res.delivered = append(res.delivered, delivered.Sub(sent))
				res.answered = append(res.answered, answered.Sub(sent))
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return res, err
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	res.missing = len(pending)
	return res, nil
}

func totalTurns(ctx context.Context, swarm runnerv1.SwarmServiceClient) (int64, error) {
	var total int64
	token := ""
	for {
		resp, err := swarm.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			return 0, err
		}
		for _, m := range resp.GetMyses() {
			total += m.GetTurns()
		}
		if token = resp.GetNextPageToken(); token == "" {
			return total, nil
		}
	}
}

func modelNanos(mu *sync.Mutex, w map[string]*timed) int64 {
	mu.Lock()
	defer mu.Unlock()
	var n int64
	for _, t := range w {
		n += t.nanos.Load()
	}
	return n
}

func modelCalls(mu *sync.Mutex, w map[string]*timed) int64 {
	mu.Lock()
	defer mu.Unlock()
	var n int64
	for _, t := range w {
		n += t.calls.Load()
	}
	return n
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n * 1024
		}
	}
	return 0
}

func heapBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// startNATS runs an embedded JetStream server for a self-contained measurement (the bus must use the same URL).
func startNATS(url, dir string) (*natsserver.Server, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("-nats %s: %w", url, err)
	}
	ns, err := natsserver.NewServer(&natsserver.Options{Host: u.Hostname(), Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		return nil, err
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return nil, errors.New("embedded NATS not ready")
	}
	return ns, nil
}
