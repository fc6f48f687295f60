// Command simload drives the simulator over real MCP HTTP and reports
// throughput, latency and tick punctuality. By default it starts an in-process
// simulator on a loopback port (rate limits off, so one machine can saturate
// it); -url points it at a running one instead.
//
//	simload -mode reads   -players 64   -duration 20s             # read-tool throughput
//	simload -mode players -players 1000 -duration 60s -tick 1s    # 1,000 players acting every tick
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/admin"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

type options struct {
	url      string
	mode     string
	players  int
	duration time.Duration
	tick     time.Duration
	seed     int64
	limits   bool
	client   string
	cpuprof  string
	code     string
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "simload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, argv []string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	var o options
	fs := flag.NewFlagSet("simload", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "", "MCP endpoint of a running simulator (default: start one in-process)")
	fs.StringVar(&o.mode, "mode", "reads", "reads (read-tool throughput) or players (every player acts every tick)")
	fs.IntVar(&o.players, "players", 64, "concurrent players, one MCP session each")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long to drive load")
	fs.DurationVar(&o.tick, "tick", time.Second, "tick of the in-process simulator")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the in-process simulator")
	fs.BoolVar(&o.limits, "limits", false, "keep the default per-account rate limits in the in-process simulator")
	fs.StringVar(&o.client, "client", "sdk", "sdk (go-sdk MCP client) or raw (minimal hand-written Streamable HTTP client, to load the server rather than the client)")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of the load phase to this file")
	fs.StringVar(&o.code, "registration-code", "", "registration code of the target simulator, if it requires one")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if o.players < 1 || o.players > 10_000 || o.duration <= 0 || o.duration > time.Hour {
		return errors.New("players must be 1..10000 and duration 0..1h")
	}
	if o.mode != "reads" && o.mode != "players" || o.client != "sdk" && o.client != "raw" {
		return errors.New("mode must be reads or players; client sdk or raw")
	}

	// Same collector setting as cmd/spacemolt-sim (see its config).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	var engine *game.Engine
	if o.url == "" {
		var shutdown func()
		var err error
		engine, o.url, shutdown, err = startSim(ctx, o)
		if err != nil {
			return err
		}
		defer shutdown()
	}
	httpClient := &http.Client{Transport: &http.Transport{
		MaxIdleConns: 4 * o.players, MaxIdleConnsPerHost: 4 * o.players, IdleConnTimeout: time.Minute,
	}}

	gc := debug.SetGCPercent(-1) // read the setting...
	debug.SetGCPercent(gc)       // ...and put it back
	fmt.Fprintf(out, "simload mode=%s client=%s players=%d duration=%s url=%s tick=%s GOMAXPROCS=%d GOGC=%d\n",
		o.mode, o.client, o.players, o.duration, o.url, o.tick, runtime.GOMAXPROCS(0), gc)
	sessions, err := connectAll(ctx, httpClient, o)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range sessions {
			s.close()
		}
	}()
	fmt.Fprintf(out, "connected and registered %d players\n", len(sessions))

	stats := func() (game.Stats, bool) {
		if engine != nil {
			return engine.Stats(), true
		}
		return remoteStats(ctx, httpClient, o.url)
	}
	before, haveStats := stats()
	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	cpu0 := cpuTime()
	res := drive(ctx, sessions, o)
	cpu := cpuTime() - cpu0
	if o.cpuprof != "" {
		pprof.StopCPUProfile()
	}
	report(out, o, res)
	if calls := res.calls.Load(); calls > 0 {
		perCall := cpu / time.Duration(calls)
		if engine != nil {
			fmt.Fprintf(out, "cpu      %s process CPU (client+server) for %d calls = %s/call; 2 dedicated cores => ~%.0f calls/s\n",
				cpu.Round(time.Millisecond), calls, perCall.Round(time.Microsecond), 2*float64(time.Second)/float64(perCall))
		} else {
			fmt.Fprintf(out, "cpu      %s client process CPU for %d calls = %s/call\n", cpu.Round(time.Millisecond), calls, perCall.Round(time.Microsecond))
		}
	}
	if after, ok := stats(); ok && haveStats {
		reportTicks(out, before, after)
	}
	return nil
}

// remoteStats reads /admin/stats next to the MCP endpoint (no admin token support).
func remoteStats(ctx context.Context, hc *http.Client, mcpURL string) (game.Stats, bool) {
	var st game.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(mcpURL, "/mcp")+"/admin/stats", nil)
	if err != nil {
		return st, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return st, false
	}
	return st, true
}

// startSim runs a simulator on a loopback port, wired like cmd/spacemolt-sim.
func startSim(ctx context.Context, o options) (*game.Engine, string, func(), error) {
	cfg := game.Config{Seed: o.seed, Tick: o.tick}
	if !o.limits {
		cfg.MutationsPerMinute, cfg.ReadsPerMinute, cfg.ChatPerMinute = -1, -1, -1
	}
	engine := game.New(cfg)
	srv := mcpserver.New(engine, mcpserver.Options{SessionTimeout: 30 * time.Minute})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	admin.Register(mux, engine, admin.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	engineCtx, stopEngine := context.WithCancel(ctx)
	go func() { _ = engine.Run(engineCtx) }()
	go func() { _ = hs.Serve(ln) }()
	shutdown := func() {
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		stopEngine()
	}
	return engine, "http://" + ln.Addr().String() + "/mcp", shutdown, nil
}

// session is one player's MCP connection.
type session struct {
	name  string
	call  func(ctx context.Context, tool string, args map[string]any) (string, error)
	close func()
}

func newSDKSession(ctx context.Context, hc *http.Client, url string) (*session, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "simload", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-03-26"})
	if err != nil {
		return nil, err
	}
	return &session{
		call: func(ctx context.Context, tool string, args map[string]any) (string, error) {
			return call(ctx, cs, tool, args)
		},
		close: func() { _ = cs.Close() },
	}, nil
}

func connectAll(ctx context.Context, hc *http.Client, o options) ([]*session, error) {
	out := make([]*session, o.players)
	errs := make(chan error, o.players)
	sem := make(chan struct{}, 32) // do not stampede the handshake
	var wg sync.WaitGroup
	run := time.Now().UnixNano() % 1_000_000
	for i := range o.players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var s *session
			var err error
			if o.client == "raw" {
				s, err = newRawSession(ctx, hc, o.url)
			} else {
				s, err = newSDKSession(ctx, hc, o.url)
			}
			if err != nil {
				errs <- err
				return
			}
			s.name = fmt.Sprintf("load%d_%d", run, i)
			if _, err := s.call(ctx, "register", map[string]any{"username": s.name, "empire": "solarian", "registration_code": o.code}); err != nil {
				errs <- err
				s.close()
				return
			}
			out[i] = s
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("connect/register: %w", err)
	}
	return out, nil
}

// call returns the tool's text; game errors come back as errors with their text.
func call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return text, gameError(text)
	}
	return text, nil
}

type gameError string

func (e gameError) Error() string { return string(e) }

// results collects latencies per call class.
type results struct {
	mu      sync.Mutex
	lat     map[string][]time.Duration
	errs    map[string]int
	sample  map[string]string
	calls   atomic.Int64
	elapsed time.Duration
}

func (r *results) add(class string, d time.Duration, err error) {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		code := "transport"
		var ge gameError
		if errors.As(err, &ge) {
			code, _, _ = strings.Cut(strings.TrimPrefix(string(ge), "Error: "), ":")
		}
		r.errs[class+" "+code]++
		if _, ok := r.sample[class+" "+code]; !ok {
			r.sample[class+" "+code] = err.Error()
		}
		return
	}
	r.lat[class] = append(r.lat[class], d)
}

var readTools = []string{"get_status", "get_cargo", "get_poi", "get_system", "get_ship"}

func drive(ctx context.Context, sessions []*session, o options) *results {
	r := &results{lat: map[string][]time.Duration{}, errs: map[string]int{}, sample: map[string]string{}}
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o.mode == "reads" {
				readLoop(ctx, s, i, r)
			} else {
				playerLoop(ctx, s, r)
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

func readLoop(ctx context.Context, s *session, i int, r *results) {
	for n := i; ctx.Err() == nil; n++ {
		t0 := time.Now()
		_, err := s.call(ctx, readTools[n%len(readTools)], nil)
		if ctx.Err() != nil {
			return
		}
		r.add("read", time.Since(t0), err)
	}
}

// playerLoop is the starter loop, one mutation per tick, with a read between
// mutations as an agent would make.
func playerLoop(ctx context.Context, s *session, r *results) {
	mut := func(tool string, args map[string]any) (string, error) {
		t0 := time.Now()
		text, err := s.call(ctx, tool, args)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		class := "mutation"
		if tool == "travel" {
			class = "travel"
		}
		r.add(class, time.Since(t0), err)
		t1 := time.Now()
		_, rerr := s.call(ctx, "get_status", nil)
		if ctx.Err() == nil {
			r.add("read", time.Since(t1), rerr)
		}
		return text, err
	}
	_, _ = mut("undock", nil)
	for ctx.Err() == nil {
		_, _ = mut("travel", map[string]any{"target_poi": "main_belt"})
		// Mine until the hold is full or the belt is exhausted, as a player would.
		for range 14 {
			if _, err := mut("mine", nil); err != nil {
				break
			}
		}
		_, _ = mut("travel", map[string]any{"target_poi": "sol_central"})
		text, err := s.call(ctx, "get_cargo", nil)
		if err != nil {
			continue
		}
		var cargo struct {
			Cargo []struct {
				ItemID   string `json:"item_id"`
				Quantity int    `json:"quantity"`
			} `json:"cargo"`
		}
		_ = json.Unmarshal([]byte(text), &cargo)
		for _, c := range cargo.Cargo {
			_, _ = mut("sell", map[string]any{"item_id": c.ItemID, "quantity": c.Quantity})
		}
		_, _ = mut("refuel", nil)
	}
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func report(out io.Writer, o options, r *results) {
	total := 0
	classes := slices.Sorted(func(yield func(string) bool) {
		for k := range r.lat {
			if !yield(k) {
				return
			}
		}
	})
	for _, class := range classes {
		d := r.lat[class]
		slices.Sort(d)
		total += len(d)
		fmt.Fprintf(out, "%-8s ok=%-7d rate=%8.1f/s  p50=%-10s p95=%-10s p99=%-10s max=%s\n", class, len(d),
			float64(len(d))/r.elapsed.Seconds(), pct(d, .50).Round(10*time.Microsecond), pct(d, .95).Round(10*time.Microsecond),
			pct(d, .99).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
	}
	errTotal := 0
	for k, n := range r.errs {
		errTotal += n
		fmt.Fprintf(out, "errors   %s: %d (e.g. %.120s)\n", k, n, r.sample[k])
	}
	fmt.Fprintf(out, "total    ok=%d errors=%d in %s = %.1f ok calls/s\n", total, errTotal, r.elapsed.Round(time.Millisecond), float64(total)/r.elapsed.Seconds())
}

func reportTicks(out io.Writer, before, after game.Stats) {
	b, a := before.Ticks, after.Ticks
	ticks := a.Resolved - b.Resolved
	if ticks == 0 {
		return
	}
	muts := a.Mutations - b.Mutations
	fmt.Fprintf(out, "ticks    resolved=%d on_time=%d late=%d missed=%d\n", ticks, a.OnTime-b.OnTime, a.Late-b.Late, a.Missed-b.Missed)
	fmt.Fprintf(out, "ticks    since start: resolve avg=%.3fms max=%.2fms; world lock held avg=%.3fms max=%.2fms, wait max=%.2fms; start lag max=%.2fms\n",
		a.AvgResolveMs, a.MaxResolveMs, a.AvgHoldMs, a.MaxHoldMs, a.MaxLockWaitMs, a.MaxLagMs)
	fmt.Fprintf(out, "ticks    mutations=%d avg_per_tick=%.1f max_per_tick=%d\n", muts, float64(muts)/float64(ticks), a.MaxMutations)
}
