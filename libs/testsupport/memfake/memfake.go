// Package memfake is the one in-memory stand-in for the memory service (zoea.memory.v1.MemoryService), served over
// real gRPC, for every service's tests. It implements every RPC with the contract of the real service, held to it
// by libs/testsupport/memorycontract (its own test runs the whole suite): myses, gapless per-mysis seq and turns, idempotency
// keys and conditional appends on AppendMemories, tool-call keys, recent and range reads, compare-and-set state
// changes, configuration updates and deletes, idempotent RecordBroadcast and DeliverBroadcast (one row per broadcast
// per mysis, ever), the v1/v2 compose window, the account pool (create, claim, get, release), search (plain word
// matching: search.go), and LLM-call usage and spend windows and limits. Requests are validated by
// libs/memoryrules, the package the real service validates with; errors are the real service's statuses
// (libs/server.ToStatus: InvalidArgument naming the field, ErrorInfo reasons). It adds what tests need: going down and coming back on the same address, a controllable health status,
// injected failures (including "committed, then the response was lost"), per-method call counts, inspection of what
// was written, and Await, which wakes on every call and write instead of polling. Tests that need more (a recorded
// request, an older server's answers) wrap it with a gRPC interceptor (Options.Interceptors), never a second fake.
//
// It is support code for tests, never imported by production packages.
package memfake

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/server"
)

// Fault is an injected failure for the next calls of one method.
type Fault struct {
	// Code is returned to the caller.
	Code codes.Code
	// AfterCommit makes the call do its work first and fail afterwards, like a response lost on the way back.
	AfterCommit bool
}

// Fake is the in-memory memory service.
type Fake struct {
	memoryv1.UnimplementedMemoryServiceServer

	tb     testing.TB
	addr   string
	opts   Options
	health *health.Server

	mu         sync.Mutex
	srv        *grpc.Server
	myses      map[string]*memoryv1.Mysis
	byName     map[string]string
	memories   map[string][]*memoryv1.Memory
	keys       map[string]map[string]*memoryv1.Memory // mysis → idempotency key → row
	broadcasts map[string]*memoryv1.Broadcast
	bcOrder    []string                     // broadcast ids in recording order (the global mission fallback is the newest)
	delivered  map[string]map[string]bool   // broadcast id → mysis id → delivered
	recorded   map[string]time.Time         // broadcast id → when its rows were first written
	accounts   map[string]*memoryv1.Account // username → account (with its password)
	acctOrder  []string                     // usernames in creation order (a claim takes the oldest free one)
	nextID     int64
	faults     map[string][]Fault
	failAll    map[string]codes.Code
	calls      map[string]int
	llmCalls   map[string]*usageCall                        // call id → the call (RecordLlmCalls and appended replies)
	callOrder  []string                                     // call ids in recording order
	spend      map[string]map[rules.SpendWindow]*spendCount // mysis → its newest window of each kind
	swarm      map[rules.SpendWindow]*spendCount            // the swarm's newest window of each kind
	limits     map[string][]rules.SpendLimit                // mysis → its own spend limits, by window then unit
	changed    chan struct{}                                // closed (and replaced) on every call and write; see Await
}

// Options adjusts a Fake.
type Options struct {
	// Addr is where to listen; empty means a free loopback port.
	Addr string
	// Interceptors run before the fake's handlers, outermost first: they may count or record calls, or rewrite
	// requests and responses to stand for another server version. The fake's own error mapping runs inside them,
	// so they see the statuses a client gets.
	Interceptors []grpc.UnaryServerInterceptor
}

// Start serves a new Fake on a loopback port until the test ends.
func Start(tb testing.TB) *Fake { return StartWith(tb, Options{}) }

// StartWith is Start with options.
func StartWith(tb testing.TB, opts Options) *Fake {
	tb.Helper()
	f := New(tb)
	f.opts = opts
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	f.addr = lis.Addr().String()
	f.serve(lis)
	tb.Cleanup(f.Stop)
	return f
}

// Client returns a client of the served fake over a plain loopback connection, closed when the test ends.
func (f *Fake) Client(tb testing.TB) memoryv1.MemoryServiceClient {
	tb.Helper()
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return memoryv1.NewMemoryServiceClient(conn)
}

// New returns a Fake that is not served: its methods can be called directly (errors are then libs/errs errors, which
// libs/server.ToStatus turns into the statuses a client would get), or it can be registered on a server of the
// caller's. tb may be nil when Await, Restart and AddMyses are not used.
func New(tb testing.TB) *Fake {
	hs := health.NewServer()
	f := &Fake{
		tb: tb, health: hs, myses: map[string]*memoryv1.Mysis{}, byName: map[string]string{},
		memories: map[string][]*memoryv1.Memory{}, keys: map[string]map[string]*memoryv1.Memory{},
		broadcasts: map[string]*memoryv1.Broadcast{}, recorded: map[string]time.Time{}, delivered: map[string]map[string]bool{},
		accounts: map[string]*memoryv1.Account{}, llmCalls: map[string]*usageCall{},
		spend: map[string]map[rules.SpendWindow]*spendCount{}, swarm: map[rules.SpendWindow]*spendCount{},
		limits: map[string][]rules.SpendLimit{},
		faults: map[string][]Fault{}, calls: map[string]int{}, failAll: map[string]codes.Code{}, changed: make(chan struct{}),
	}
	f.SetServing(true)
	return f
}

// SetServing sets what the fake's health service reports, for the whole server and the memory service: a real
// memory service reports NOT_SERVING while its Postgres is down.
func (f *Fake) SetServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	f.health.SetServingStatus("", st)
	f.health.SetServingStatus(memoryv1.MemoryService_ServiceDesc.ServiceName, st)
}

// errorMapping turns the fake's domain errors (libs/errs) into the statuses the real service sends.
func errorMapping(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, server.ToStatus(ctx, discard, err)
	}
	return resp, nil
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Addr is the address the fake listens on (the same across Stop and Restart).
func (f *Fake) Addr() string { return f.addr }

func (f *Fake) serve(lis net.Listener) {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(append(append([]grpc.UnaryServerInterceptor(nil), f.opts.Interceptors...), errorMapping)...))
	memoryv1.RegisterMemoryServiceServer(srv, f)
	healthpb.RegisterHealthServer(srv, f.health)
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	go func() { _ = srv.Serve(lis) }()
}

// Stop takes the service down: connections are closed and the port refuses new ones. Data is kept.
func (f *Fake) Stop() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// Restart brings a stopped service back on the same address with its data. Stop has closed the listener, so the
// address is free at once (Go listens with SO_REUSEADDR).
func (f *Fake) Restart() {
	f.tb.Helper()
	lis, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.tb.Fatalf("memfake restart on %s: %v", f.addr, err)
	}
	f.serve(lis)
}

// FailNext makes the next len(faults) calls of method (e.g. "RecordBroadcast") fail as described.
func (f *Fake) FailNext(method string, faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[method] = append(f.faults[method], faults...)
}

// FailAll makes every call of method fail with code until ClearFaults: an outage of one RPC that the caller can
// be seen retrying through (Calls keeps counting).
func (f *Fake) FailAll(method string, code codes.Code) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAll[method] = code
}

// ClearFaults drops every queued and standing fault.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
	clear(f.failAll)
}

// Calls returns how many times method was called.
func (f *Fake) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// changedLocked wakes every Await; the caller holds f.mu.
func (f *Fake) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Await returns once cond holds, re-checking it after every call the fake receives and every row it writes (no
// polling); the test fails if cond does not hold within the given time.
func (f *Fake) Await(within time.Duration, what string, cond func() bool) {
	f.tb.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			f.tb.Fatalf("memfake: timed out after %v waiting for %s", within, what)
			return
		}
	}
}

// enter counts a call and pops its fault; the caller holds f.mu.
func (f *Fake) enter(method string) (Fault, bool) {
	f.changedLocked()
	f.calls[method]++
	q := f.faults[method]
	if len(q) == 0 {
		code, ok := f.failAll[method]
		return Fault{Code: code}, ok
	}
	f.faults[method] = q[1:]
	return q[0], true
}

// AddMyses creates n myses named prefix-0000… and returns their ids in order.
func (f *Fake) AddMyses(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range n {
		m, err := f.CreateMysis(context.Background(), &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("%s-%04d", prefix, i),
			Provider: rules.AutopilotProvider, SystemPrompt: "You play SpaceMolt."})
		if err != nil {
			f.tb.Fatal(err)
		}
		ids[i] = m.GetMysis().GetId()
	}
	return ids
}

// Memories returns a copy of a mysis's memories in seq order.
func (f *Fake) Memories(mysisID string) []*memoryv1.Memory {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*memoryv1.Memory, 0, len(f.memories[mysisID]))
	for _, m := range f.memories[mysisID] {
		out = append(out, proto.Clone(m).(*memoryv1.Memory))
	}
	return out
}

// BroadcastRows counts, per mysis, the memory rows carrying broadcast id.
func (f *Fake) BroadcastRows(broadcastID string) map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for id, ms := range f.memories {
		for _, m := range ms {
			if m.GetBroadcastId() == broadcastID {
				out[id]++
			}
		}
	}
	return out
}

// Recorded returns when the rows of a broadcast were first written, if they were.
func (f *Fake) Recorded(broadcastID string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.recorded[broadcastID]
	return t, ok
}

// Broadcasts returns the number of recorded broadcasts.
func (f *Fake) Broadcasts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.broadcasts)
}
