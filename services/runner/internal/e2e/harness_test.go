// Package e2e runs the runner against the real thing: Postgres (libs/testsupport/pgtest), NATS (libs/testsupport/natstest), and the memory,
// composer, bus and simulator binaries built from this repository. Runners run in-process (internal/app) so a test
// can add a scripted model next to the built-in providers and stop a replica at will, or as the runner binary when
// a test kills one with SIGKILL.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/natsbus"
	"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv"
)

const testSecretKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// stack is one isolated Zoea deployment for a test.
type stack struct {
	t        *testing.T
	dbURL    string // the memory service's database, for reading back what it stored
	natsURL  string
	sim      *testenv.Sim
	memAddr  string
	compAddr string
	busAddr  string
	memory   memoryv1.MemoryServiceClient
	bus      busv1.BusServiceClient
	// changes fires on every event a runner publishes and every live status write; statuses mirrors the live
	// statuses (what the actors report), as a runner replica does.
	changes  *signal
	statuses *natsbus.Statuses
}

// signal wakes every waiter at each fire: C returns a channel closed at the next fire.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// watchBus connects to the stack's NATS and fires s.changes on every runner event and every live status write,
// which s.statuses mirrors.
func (s *stack) watchBus(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	b, err := swarmbus.Connect(cctx, s.natsURL, swarmbus.Options{Name: "e2e-watch", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s.changes, s.statuses = newSignal(), natsbus.NewStatuses(b.Statuses(), nil)
	sub, err := b.SubscribeEvents(ctx, swarmbus.EventFilter{}, func(context.Context, *busv1.Event) { s.changes.fire() })
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	watched, forwarded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		_ = s.statuses.Watch(ctx)
	}()
	go func() {
		defer close(forwarded)
		for {
			select {
			case <-s.statuses.Changed():
				s.changes.fire()
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		sub.Stop()
		cancel()
		<-watched
		<-forwarded
		b.Close()
	})
}

func requireBinaries(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: skipped with -short")
	}
	for _, svc := range []string{"memory", "composer", "bus", "spacemolt-sim"} {
		if !testenv.Available(t, svc) {
			testdep.Missing(t, "end-to-end: services/%s/cmd/%s not found", svc, svc)
		}
	}
}

func startStack(t *testing.T, simEnv ...string) *stack {
	t.Helper()
	requireBinaries(t)
	s := &stack{t: t}
	dbURL := pgtest.New(t)
	s.dbURL = dbURL
	s.natsURL = natstest.Start(t).ClientURL()
	s.watchBus(t)
	s.sim = testenv.StartSim(t, simEnv...)

	// Each service binds a port of its own choosing and logs it: no port picked here can be taken by another
	// test process in between.
	_, s.memAddr = testenv.StartGRPC(t, "memory", testenv.Build(t, "memory"), []string{
		"ZOEA_DATABASE_URL=" + dbURL, "ZOEA_SECRET_KEY=" + testSecretKey,
		"ZOEA_MIGRATE_ON_START=true", "ZOEA_DB_MAX_CONNS=32",
	}, 60*time.Second)
	_, s.compAddr = testenv.StartGRPC(t, "composer", testenv.Build(t, "composer"), []string{
		"ZOEA_MEMORY_ADDR=" + s.memAddr,
	}, 60*time.Second)
	_, s.busAddr = testenv.StartGRPC(t, "bus", testenv.Build(t, "bus"), []string{
		"ZOEA_MEMORY_ADDR=" + s.memAddr, "ZOEA_NATS_URL=" + s.natsURL,
	}, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, addr := range []string{s.memAddr, s.compAddr, s.busAddr} {
		waitHealthy(t, ctx, addr)
	}
	s.memory = memoryv1.NewMemoryServiceClient(dial(t, s.memAddr))
	s.bus = busv1.NewBusServiceClient(dial(t, s.busAddr))
	return s
}

// waitHealthy returns once the service at addr reports SERVING: server.AwaitServing watches its health stream, so
// the wait ends on the status change itself, not on a poll.
func waitHealthy(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	if err := server.AwaitServing(ctx, dial(t, addr), ""); err != nil {
		t.Fatalf("%s never became healthy: %v", addr, err)
	}
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// runner is an in-process runner replica.
type runner struct {
	id     string
	swarm  runnerv1.SwarmServiceClient
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error
}

// Stop stops the replica gracefully and waits for it.
func (r *runner) Stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("runner %s: %v", r.id, r.err)
		}
	case <-time.After(30 * time.Second):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Errorf("runner %s did not stop; goroutines:\n%s", r.id, b.String())
	}
}

func (s *stack) startRunner(t *testing.T, id string, providers []llm.Provider, mod func(*app.Config)) *runner {
	t.Helper()
	return s.startRunnerOpts(t, id, providers, mod, app.Options{})
}

// startRunnerOpts is startRunner with app.Options (clock, telemetry providers).
func (s *stack) startRunnerOpts(t *testing.T, id string, providers []llm.Provider, mod func(*app.Config), opts app.Options) *runner {
	t.Helper()
	cfg := app.Config{
		Server:     server.Config{ListenAddr: "127.0.0.1:0", ShutdownTimeout: 5 * time.Second},
		MemoryAddr: s.memAddr, ComposerAddr: s.compAddr, NATSURL: s.natsURL, SpaceMoltURL: s.sim.MCPURL(),
		DefaultProvider: "openai", OllamaModel: "none", OpenAIModel: "none", ProviderConcurrency: 8,
		MaxToolIterations: 10, TurnPause: 50 * time.Millisecond, BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second,
		LeaseTTL: 3 * time.Second, ReplicaID: id, Empire: "solarian", OpenAIKey: "unused",
	}
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{id: id, cancel: cancel, done: make(chan struct{})}
	level := slog.LevelWarn
	if os.Getenv("ZOEA_TEST_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts.Providers, opts.Listener = providers, lis
	go func() {
		r.err = app.Run(ctx, cfg, opts)
		close(r.done)
	}()
	r.swarm = runnerv1.NewSwarmServiceClient(dial(t, lis.Addr().String()))
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer hcancel()
	waitHealthy(t, hctx, lis.Addr().String())
	t.Cleanup(func() { r.Stop(t) })
	return r
}

// runnerProcess is a runner replica started from the runner binary, so it can be killed like a crashed pod.
type runnerProcess struct {
	id    string
	proc  *testenv.Process
	swarm runnerv1.SwarmServiceClient
}

// startRunnerProcess builds (once) and starts services/runner/cmd/runner with the autopilot as default provider and
// the same settings as the in-process replicas, and waits until it is healthy.
func (s *stack) startRunnerProcess(t *testing.T, id string, env ...string) *runnerProcess {
	t.Helper()
	defaults := []string{
		"ZOEA_MEMORY_ADDR=" + s.memAddr, "ZOEA_COMPOSER_ADDR=" + s.compAddr,
		"ZOEA_NATS_URL=" + s.natsURL, "ZOEA_SPACEMOLT_URL=" + s.sim.MCPURL(), "ZOEA_SPACEMOLT_AUTH_PER_MIN=-1", "ZOEA_REPLICA_ID=" + id,
		"ZOEA_DEFAULT_PROVIDER=autopilot", "ZOEA_LEASE_TTL=3s", "ZOEA_TURN_PAUSE=50ms",
		"ZOEA_ERROR_BACKOFF_MIN=100ms", "ZOEA_ERROR_BACKOFF_MAX=1s", "ZOEA_SHUTDOWN_TIMEOUT=5s",
	}
	p, addr := testenv.StartGRPC(t, "runner-"+id, testenv.Build(t, "runner"), append(defaults, env...), 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitHealthy(t, ctx, addr)
	return &runnerProcess{id: id, proc: p, swarm: runnerv1.NewSwarmServiceClient(dial(t, addr))}
}

// probe is a scripted model: at a turn's start it calls one tool (get_status, or a search when the prompt says
// "SEARCH: <query>"), then answers without tool calls. It validates every request it receives.
type probe struct {
	name    string
	calls   atomic.Int64
	invalid atomic.Int64
	noTools atomic.Int64
	delay   time.Duration
}

// newProbe registers as "openai": the memory service accepts only known provider names, and the probe stands in
// for an OpenAI-compatible model.
func newProbe() *probe { return &probe{name: "openai"} }

func (p *probe) Name() string { return p.name }

func (p *probe) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := p.calls.Add(1)
	if err := chatvalid.Strict.Validate(req.Messages); err != nil {
		p.invalid.Add(1)
	}
	if len(req.Tools) == 0 {
		p.noTools.Add(1)
	}
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == chat.RoleTool {
		return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, Content: "Done with " + last.Name + "."}, Reasoning: "the tool answered"}, nil
	}
	id := fmt.Sprintf("call_%d", n)
	tc := chat.ToolCall{ID: id, Name: "get_status", Arguments: `{}`}
	if _, q, ok := strings.Cut(last.Content, "SEARCH: "); ok {
		args, _ := json.Marshal(map[string]any{"query": strings.TrimSpace(q), "limit": 5})
		tc = chat.ToolCall{ID: id, Name: "zoea_search_messages", Arguments: string(args)}
	}
	return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{tc}}, Reasoning: "checking with " + tc.Name}, nil
}

// eventually waits until cond holds, at most timeout. cond is checked again after every event a runner publishes
// and every live status write (s.changes), and at least every 100 ms for changes that are not on the bus (rows the
// bus service writes, a process exit, the simulator, a replica's lease mirror catching up).
func (s *stack) eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	recheck := time.NewTicker(100 * time.Millisecond)
	defer recheck.Stop()
	for {
		changed := s.changes.C()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-recheck.C:
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// allMemories reads a mysis's whole history.
func (s *stack) allMemories(t *testing.T, id string) []*memoryv1.Memory {
	t.Helper()
	var out []*memoryv1.Memory
	from := int64(1)
	for {
		resp, err := s.memory.ListMemoriesRange(context.Background(), &memoryv1.ListMemoriesRangeRequest{MysisId: id, FromSeq: from, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.GetMemories()...)
		if len(resp.GetMemories()) < 1000 {
			return out
		}
		from = out[len(out)-1].GetSeq() + 1
	}
}

// checkHistory asserts the invariants every history must keep: seq gapless from 1, idempotency keys unique,
// every tool call answered by exactly one result with its tool name, no password anywhere.
func (s *stack) checkHistory(t *testing.T, id string, passwords []string) []*memoryv1.Memory {
	t.Helper()
	ms := s.allMemories(t, id)
	keys := map[string]int64{}
	calls := map[string]string{}
	args := map[string]string{}
	answered := map[string]int{}
	for i, m := range ms {
		if m.GetSeq() != int64(i+1) {
			t.Errorf("mysis %s: memory %d has seq %d (gap or duplicate)", id, i, m.GetSeq())
		}
		if k := m.GetIdempotencyKey(); k != "" {
			if prev, dup := keys[k]; dup {
				t.Errorf("mysis %s: idempotency key %s at seq %d and %d", id, k, prev, m.GetSeq())
			}
			keys[k] = m.GetSeq()
		}
		for _, c := range m.GetToolCalls() {
			calls[c.GetId()] = c.GetName()
			args[c.GetId()] = c.GetArgumentsJson()
		}
		if m.GetRole() == memoryv1.Role_ROLE_TOOL {
			answered[m.GetToolCallId()]++
			// The result keeps its call's arguments and the memory service keys it by call.
			if m.GetCallArgumentsJson() != args[m.GetToolCallId()] || !strings.HasPrefix(m.GetCallKey(), m.GetToolName()+" ") {
				t.Errorf("mysis %s: tool result seq %d has arguments %q (call: %q), key %q", id, m.GetSeq(), m.GetCallArgumentsJson(), args[m.GetToolCallId()], m.GetCallKey())
			}
			if calls[m.GetToolCallId()] != m.GetToolName() {
				t.Errorf("mysis %s: tool result seq %d answers %q (%s) but the call was %q", id, m.GetSeq(), m.GetToolCallId(), m.GetToolName(), calls[m.GetToolCallId()])
			}
		}
		for _, pw := range passwords {
			if pw != "" && (strings.Contains(m.GetContent(), pw) || strings.Contains(m.GetReasoning(), pw)) {
				t.Errorf("mysis %s: memory seq %d contains an account password (LESSONS 7)", id, m.GetSeq())
			}
		}
	}
	for callID, n := range answered {
		if n != 1 {
			t.Errorf("mysis %s: call %s answered %d times", id, callID, n)
		}
	}
	checkLoops(t, id, ms)
	return ms
}

// checkLoops asserts the order of a stored history, which is what a crash, a take-over or a retry could break:
// a tool result answers a call of the newest assistant message; an assistant message (or a nudge, which opens an
// autonomous turn) comes only once every call of the previous assistant message is answered, and an assistant
// message never directly follows another one (a second answer to the same prompt or iteration). Commander messages
// (broadcasts, direct messages) are stored by the bus whenever they arrive and may sit anywhere.
func checkLoops(t *testing.T, id string, ms []*memoryv1.Memory) {
	t.Helper()
	open := map[string]bool{}
	var prev *memoryv1.Memory
	for _, m := range ms {
		switch {
		case m.GetRole() == memoryv1.Role_ROLE_USER && (m.GetSource() == memoryv1.Source_SOURCE_BROADCAST || m.GetSource() == memoryv1.Source_SOURCE_DIRECT):
		case m.GetRole() == memoryv1.Role_ROLE_TOOL:
			if !open[m.GetToolCallId()] {
				t.Errorf("mysis %s: tool result seq %d answers %q, which is not an open call of the newest assistant message", id, m.GetSeq(), m.GetToolCallId())
			}
			delete(open, m.GetToolCallId())
		case m.GetRole() == memoryv1.Role_ROLE_ASSISTANT:
			if len(open) > 0 {
				t.Errorf("mysis %s: assistant seq %d stored while calls %v of the previous one were unanswered", id, m.GetSeq(), keys(open))
			}
			if prev != nil && prev.GetRole() == memoryv1.Role_ROLE_ASSISTANT {
				t.Errorf("mysis %s: assistant seq %d directly follows assistant seq %d (a duplicate answer)", id, m.GetSeq(), prev.GetSeq())
			}
			clear(open)
			for _, c := range m.GetToolCalls() {
				open[c.GetId()] = true
			}
		default: // nudges (and any other user memory) open a turn
			if len(open) > 0 {
				t.Errorf("mysis %s: %s memory seq %d stored while calls %v were unanswered", id, m.GetSource(), m.GetSeq(), keys(open))
			}
		}
		prev = m
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (s *stack) password(t *testing.T, id string) string {
	t.Helper()
	resp, err := s.memory.GetAccountForMysis(context.Background(), &memoryv1.GetAccountForMysisRequest{MysisId: id})
	if err != nil {
		return ""
	}
	return resp.GetAccount().GetPassword()
}

type simStats struct {
	Players []struct {
		Username      string `json:"username"`
		Credits       int64  `json:"credits"`
		CreditsEarned int64  `json:"credits_earned"`
	} `json:"players"`
	Totals map[string]any `json:"totals"`
}

func (s *stack) simStats(t *testing.T) simStats {
	t.Helper()
	resp, err := http.Get(s.sim.AdminURL() + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st simStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}
