// Command composeload measures ComposeContext latency over gRPC against a real memory service.
//
// It runs a composer in-process (the same wiring as cmd/composer, with the token cache) unless -composer names a
// running one, picks myses from the memory service (or creates them with -create), and reports latency percentiles
// for three phases:
//
//	first   the first compose of each mysis in this run: its window is not in the token cache (when the composer
//	        started with this run — in-process, or a fresh -composer — this is the cold path)
//	warm    the same windows again (nothing was appended: every text is cached)
//	turns   with -turns: before each compose one tool loop (an assistant call and its result) is appended, as the
//	        runner does, so every compose has new memories to count — the steady state of a playing swarm
//
// cpu/call is this process's CPU time per call: the client and, unless -composer is set, the composer (not the memory
// service, which is another process).
//
// -extend N first appends N tool loops to each mysis (the turn loop's shape, no commander order, 500 loops a call)
// without composing: a long span since the last order, which is what the carry-over scan reads.
//
// -turns, -create and -extend write to the memory service's database: never point them at someone else's benchmark
// data.
//
//	go run ./tools/cmd/composeload -memory 127.0.0.1:7001 -myses 200 -n 5000
//	go run ./tools/cmd/composeload -memory 127.0.0.1:7001 -create 20 -history 300 -turns 2000
//	go run ./tools/cmd/composeload -memory 127.0.0.1:7001 -myses 20 -extend 2000 -n 20
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/composer/internal/bufpool"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/benchcpu"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/replay"
	"github.com/zoeaswarm/zoea/services/composer/internal/tokcache"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "composeload:", err)
		os.Exit(1)
	}
}

type options struct {
	memory, composer, token string
	myses, n, turns, extend int
	create, history         int
	concurrency             int
	window                  int
	seed                    uint64
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("composeload", flag.ContinueOnError)
	fs.StringVar(&o.memory, "memory", "127.0.0.1:7001", "memory service address")
	fs.StringVar(&o.composer, "composer", "", "composer address; empty runs one in-process")
	fs.StringVar(&o.token, "token", os.Getenv("ZOEA_ADMIN_TOKEN"), "admin token")
	fs.IntVar(&o.myses, "myses", 100, "myses to compose for (taken from ListMyses)")
	fs.IntVar(&o.n, "n", 2000, "warm-phase calls")
	fs.IntVar(&o.turns, "turns", 0, "turn-loop calls, each after appending one tool loop (writes!)")
	fs.IntVar(&o.extend, "extend", 0, "append this many tool loops to each mysis first, without composing (writes!)")
	fs.IntVar(&o.create, "create", 0, "create this many myses with a generated history first (writes!)")
	fs.IntVar(&o.history, "history", 200, "turns of generated history per created mysis")
	fs.IntVar(&o.concurrency, "concurrency", 1, "concurrent callers")
	fs.IntVar(&o.window, "window", 0, "policy.scan_window override (0: server default)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the warm phase to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}

	if o.composer == "" {
		// As cmd/composer does; in-process, the measuring client shares it.
		experimental.SetDefaultBufferPool(bufpool.New())
	}
	memConn, err := server.Dial(o.memory, o.token, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer memConn.Close()
	mem := memoryv1.NewMemoryServiceClient(memConn)
	if err := waitServing(ctx, healthpb.NewHealthClient(memConn)); err != nil {
		return err
	}

	var ids []string
	if o.create > 0 {
		if ids, err = createMyses(ctx, mem, o); err != nil {
			return err
		}
	} else {
		resp, err := mem.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: int32(min(o.myses, 1000))})
		if err != nil {
			return fmt.Errorf("list myses: %w", err)
		}
		for _, m := range resp.GetMyses() {
			ids = append(ids, m.GetId())
		}
	}
	if len(ids) == 0 {
		return errors.New("no myses: seed the database or use -create")
	}
	if o.extend > 0 {
		if err := extendMyses(ctx, mem, ids, o.extend, o.seed); err != nil {
			return err
		}
		fmt.Fprintf(out, "extended %d myses by %d tool loops each\n", len(ids), o.extend)
	}

	var cache *tokcache.Cache
	addr := o.composer
	if addr == "" {
		tok, err := o200k.Load()
		if err != nil {
			return err
		}
		cache = tokcache.New(tok, 0)
		a, stop, err := startComposer(ctx, mem, memConn, cache)
		if err != nil {
			return err
		}
		defer stop()
		addr = a
	}
	conn, err := server.Dial(addr, o.token, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := waitServing(ctx, healthpb.NewHealthClient(conn)); err != nil {
		return err
	}
	client := composerv1.NewComposerServiceClient(conn)
	var policy *composerv1.Policy
	if o.window > 0 {
		w := int32(o.window)
		policy = &composerv1.Policy{ScanWindow: &w}
	}
	// As the runner does, each request passes back the compaction of the mysis's previous one.
	var mu sync.Mutex
	previous := make(map[string]*composerv1.Compaction, len(ids))
	composeOnce := func(id string) (time.Duration, error) {
		mu.Lock()
		prev := previous[id]
		mu.Unlock()
		start := time.Now()
		resp, err := client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id, Policy: policy, PreviousCompaction: prev})
		took := time.Since(start)
		if err == nil {
			m := resp.GetManifest()
			mu.Lock()
			previous[id] = &composerv1.Compaction{BoundarySeq: m.GetCompactionBoundarySeq(), CompactionSeq: m.GetCompactionSeq()}
			mu.Unlock()
		}
		return took, err
	}
	fmt.Fprintf(out, "composer %s, memory %s, %d myses, concurrency %d\n", addr, o.memory, len(ids), o.concurrency)

	first, err := phase(ids, len(ids), o.concurrency, func(_ int, id string) (time.Duration, error) { return composeOnce(id) })
	if err != nil {
		return err
	}
	report(out, "first", first, cache)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	warm, err := phase(ids, o.n, o.concurrency, func(_ int, id string) (time.Duration, error) { return composeOnce(id) })
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	report(out, "warm", warm, cache)
	if o.turns > 0 {
		loops := newLoops(o.seed, 99)
		turns, err := phase(ids, o.turns, o.concurrency, func(i int, id string) (time.Duration, error) {
			if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id,
				Memories: loops.loop(fmt.Sprintf("load_%d_%d", o.seed, i), i)}); err != nil {
				return 0, fmt.Errorf("append: %w", err)
			}
			return composeOnce(id)
		})
		if err != nil {
			return err
		}
		report(out, "turns", turns, cache)
	}
	return nil
}

// phase makes n calls spread round-robin over ids with the given concurrency and returns their latencies.
func phase(ids []string, n, concurrency int, call func(i int, id string) (time.Duration, error)) (result, error) {
	lat := make([]time.Duration, n)
	errc := make(chan error, concurrency)
	var wg sync.WaitGroup
	start, cpu := time.Now(), benchcpu.Process()
	for w := range concurrency {
		wg.Go(func() {
			for i := w; i < n; i += concurrency {
				d, err := call(i, ids[i%len(ids)])
				if err != nil {
					errc <- err
					return
				}
				lat[i] = d
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), benchcpu.Process()-cpu
	close(errc)
	if err := <-errc; err != nil {
		return result{}, err
	}
	return result{lat: lat, elapsed: elapsed, cpu: cpu}, nil
}

// result is one phase: per-call latencies, wall time, and this process's CPU time (client, in-process composer).
type result struct {
	lat          []time.Duration
	elapsed, cpu time.Duration
}

func report(out io.Writer, name string, r result, cache *tokcache.Cache) {
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Fprintf(out, "%-5s %6d calls  p50 %8s  p90 %8s  p99 %8s  max %8s  %5.0f calls/s  cpu/call %s",
		name, len(lat), round(q(0.50)), round(q(0.90)), round(q(0.99)), round(lat[len(lat)-1]),
		float64(len(lat))/r.elapsed.Seconds(), round(r.cpu/time.Duration(len(lat))))
	if cache != nil {
		st := cache.Stats()
		fmt.Fprintf(out, "  token cache: %d hits, %d misses, %d entries", st.Hits, st.Misses, st.Entries)
	}
	fmt.Fprintln(out)
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// startComposer serves the composer in-process on a loopback port, wired as cmd/composer wires it.
func startComposer(ctx context.Context, mem memoryv1.MemoryServiceClient, memConn *grpc.ClientConn, cache *tokcache.Cache) (string, func(), error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := grpcapi.New(memoryclient.New(mem), grpcapi.Options{Counter: cache, Logger: log})
	if err != nil {
		return "", nil, err
	}
	srv := server.New(server.Options{Name: "composer", Config: server.Config{ListenAddr: "127.0.0.1:0"}, Logger: log,
		Checks: []server.Check{memoryclient.Ready(healthpb.NewHealthClient(memConn))}})
	srv.Register(&composerv1.ComposerService_ServiceDesc, svc)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Run(sctx); close(done) }()
	a, err := srv.Addr(ctx)
	if err != nil {
		cancel()
		return "", nil, err
	}
	return a.String(), func() { cancel(); <-done }, nil
}

func waitServing(ctx context.Context, h healthpb.HealthClient) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not SERVING: %v %v", resp.GetStatus(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createMyses creates myses, each with a generated SpaceMolt history (internal/testkit/replay) and a broadcast mission.
func createMyses(ctx context.Context, mem memoryv1.MemoryServiceClient, o options) ([]string, error) {
	var ids []string
	stamp := time.Now().UnixNano()
	for i := range o.create {
		resp, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("load-%d-%d", stamp, i), Provider: memoryrules.AutopilotProvider,
			SystemPrompt: replay.SystemPrompt})
		if err != nil {
			return nil, fmt.Errorf("create mysis: %w", err)
		}
		id := resp.GetMysis().GetId()
		s := replay.Generate(o.history, o.seed+uint64(i))
		rows := make([]*memoryv1.NewMemory, 0, len(s.Rows))
		for _, m := range s.Rows {
			rows = append(rows, toNewMemory(m))
		}
		for len(rows) > 0 {
			k := min(len(rows), 1000)
			if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: rows[:k]}); err != nil {
				return nil, fmt.Errorf("append history: %w", err)
			}
			rows = rows[k:]
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func toNewMemory(m compose.Memory) *memoryv1.NewMemory {
	roles := map[chat.Role]memoryv1.Role{chat.RoleUser: memoryv1.Role_ROLE_USER, chat.RoleAssistant: memoryv1.Role_ROLE_ASSISTANT, chat.RoleTool: memoryv1.Role_ROLE_TOOL}
	sources := map[compose.Source]memoryv1.Source{compose.SourceDirect: memoryv1.Source_SOURCE_DIRECT, compose.SourceBroadcast: memoryv1.Source_SOURCE_BROADCAST,
		compose.SourceNudge: memoryv1.Source_SOURCE_NUDGE, compose.SourceLLM: memoryv1.Source_SOURCE_LLM, compose.SourceTool: memoryv1.Source_SOURCE_TOOL}
	nm := &memoryv1.NewMemory{Role: roles[m.Role], Source: sources[m.Source], Content: m.Content, ToolCallId: m.ToolCallID, ToolName: m.ToolName}
	for _, tc := range m.ToolCalls {
		nm.ToolCalls = append(nm.ToolCalls, &memoryv1.ToolCall{Id: tc.ID, Name: tc.Name, ArgumentsJson: tc.Arguments})
	}
	return nm
}

// toolBody is a SpaceMolt-like JSON result of 0.1–3 KB.
func toolBody(r *rand.Rand) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"system":"sys_%d","pois":[`, r.IntN(400))
	for j := range 1 + r.IntN(30) {
		fmt.Fprintf(&b, `{"id":"poi_%d","type":"asteroid_belt","resources":["iron_ore","copper_ore"],"distance":%d},`, j, r.IntN(900))
	}
	b.WriteString(`{}]}`)
	return b.String()
}

// loops makes tool loops in the turn loop's shape: an assistant call of get_status, get_system, mine, get_cargo or
// sell (in turn) with {"target":"poi_1"}, then its result, a 0.1–3 KB system listing. Safe for concurrent use.
type loops struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newLoops(seed, stream uint64) *loops { return &loops{r: rand.New(rand.NewPCG(seed, stream))} }

// loop returns the i-th loop's two memories, with call id call.
func (l *loops) loop(call string, i int) []*memoryv1.NewMemory {
	l.mu.Lock()
	body := toolBody(l.r)
	l.mu.Unlock()
	name := []string{"get_status", "get_system", "mine", "get_cargo", "sell"}[i%5]
	return []*memoryv1.NewMemory{
		{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, ToolCalls: []*memoryv1.ToolCall{{Id: call, Name: name, ArgumentsJson: `{"target":"poi_1"}`}}},
		{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: call, ToolName: name, Content: body},
	}
}

// extendMyses appends n tool loops to each mysis (500 loops a call) without composing: a long span since the last
// commander order.
func extendMyses(ctx context.Context, mem memoryv1.MemoryServiceClient, ids []string, n int, seed uint64) error {
	l := newLoops(seed, 98)
	for _, id := range ids {
		for done := 0; done < n; {
			var rows []*memoryv1.NewMemory
			for ; done < n && len(rows) < 1000; done++ {
				rows = append(rows, l.loop(fmt.Sprintf("extend_%d_%s_%d", seed, id, done), done)...)
			}
			if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: rows}); err != nil {
				return fmt.Errorf("extend %s: %w", id, err)
			}
		}
	}
	return nil
}
