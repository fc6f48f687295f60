package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/composerclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// The RPC tests call SwarmService over real gRPC, served by libs/server exactly as the runner serves it (its error
// mapping turns the handlers' libs/errs errors into the statuses a commander gets), with the shared in-memory
// memory service (memfake) behind the runner's real memoryclient. What the Server takes as ports is recorded:
// wakes (the bus side), live statuses and leases, and a composer served over gRPC that records its requests (the
// composer is its own module, so its handlers cannot run in-process here; the runner's part of PreviewContext is
// what it asks and how it relays the answer).
//
// memfake does not implement the memory service's usage and spend RPCs (GetUsage, SetSpendLimits, GetSpend), so
// an interceptor on the fake (the way memfake says tests needing more extend it) answers those three: it keeps
// each mysis's own limits and answers usage from a table the test sets, recording every request.

// wake is one recorded Wake call.
type wake struct {
	id     string
	reason mysis.WakeReason
}

// recWakes records wakes; err, when set, is what Wake returns (a bus that is down).
type recWakes struct {
	mu  sync.Mutex
	got []wake
	err error
}

func (w *recWakes) Wake(_ context.Context, id string, r mysis.WakeReason) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, wake{id, r})
	return w.err
}

func (w *recWakes) failWith(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// take returns the wakes recorded since the last take.
func (w *recWakes) take() []wake {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	return out
}

// mapLive is a Live the test fills; the server reads it from its own goroutines.
type mapLive struct {
	mu     sync.Mutex
	status map[string]mysis.Status
	owner  map[string]string
	silent map[string]time.Time
}

func newLive() *mapLive {
	return &mapLive{status: map[string]mysis.Status{}, owner: map[string]string{}, silent: map[string]time.Time{}}
}

func (l *mapLive) set(id, owner string, st *mysis.Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owner[id] = owner
	if st != nil {
		l.status[id] = *st
	}
}

func (l *mapLive) Status(id string) (mysis.Status, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.status[id]
	return st, ok
}

func (l *mapLive) Owner(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner[id]
}

func (l *mapLive) Silent(id string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.silent[id]
	return t, ok
}

// recComposer is a ComposerService that records requests and answers resp, or err.
type recComposer struct {
	composerv1.UnimplementedComposerServiceServer
	mu   sync.Mutex
	reqs []*composerv1.ComposeContextRequest
	resp *composerv1.ComposeContextResponse
	err  error
}

func (c *recComposer) ComposeContext(_ context.Context, req *composerv1.ComposeContextRequest) (*composerv1.ComposeContextResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, proto.Clone(req).(*composerv1.ComposeContextRequest))
	if c.err != nil {
		return nil, c.err
	}
	return c.resp, nil
}

func (c *recComposer) answer(resp *composerv1.ComposeContextResponse, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resp, c.err = resp, err
}

func (c *recComposer) requests() []*composerv1.ComposeContextRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

// spendMemory answers the memory service's usage and spend RPCs in front of memfake (which lacks them) and records
// the last request of every memory method the runner sends.
type spendMemory struct {
	mu     sync.Mutex
	limits map[string][]*memoryv1.SpendLimit // own limits by mysis id
	usage  func(*memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error)
	last   map[string]proto.Message // method name → last request
	calls  map[string]int
}

func newSpendMemory() *spendMemory {
	return &spendMemory{limits: map[string][]*memoryv1.SpendLimit{}, last: map[string]proto.Message{}, calls: map[string]int{},
		usage: func(*memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
			return &memoryv1.GetUsageResponse{Total: &memoryv1.UsageTotals{}}, nil
		}}
}

func (s *spendMemory) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	method := info.FullMethod[len("/zoea.memory.v1.MemoryService/"):]
	s.mu.Lock()
	s.calls[method]++
	if m, ok := req.(proto.Message); ok {
		s.last[method] = proto.Clone(m)
	}
	s.mu.Unlock()
	switch r := req.(type) {
	case *memoryv1.GetUsageRequest:
		s.mu.Lock()
		answer := s.usage
		s.mu.Unlock()
		resp, err := answer(r)
		return resp, server.ToStatus(ctx, slog.New(slog.DiscardHandler), err)
	case *memoryv1.SetSpendLimitsRequest:
		for i, l := range r.GetLimits() {
			if l.GetAmount() < 0 {
				return nil, server.ToStatus(ctx, slog.New(slog.DiscardHandler), errs.InvalidField(fmt.Sprintf("limits[%d].amount", i), "must not be negative"))
			}
		}
		s.mu.Lock()
		s.limits[r.GetMysisId()] = r.GetLimits()
		s.mu.Unlock()
		return &memoryv1.SetSpendLimitsResponse{Limits: r.GetLimits()}, nil
	case *memoryv1.GetSpendRequest:
		s.mu.Lock()
		defer s.mu.Unlock()
		return &memoryv1.GetSpendResponse{Limits: s.limits[r.GetMysisId()]}, nil
	}
	return h(ctx, req)
}

func (s *spendMemory) setUsage(f func(*memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage = f
}

func (s *spendMemory) lastRequest(method string) proto.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[method]
}

func (s *spendMemory) callsOf(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *spendMemory) setOwn(id string, ls ...*memoryv1.SpendLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[id] = ls
}

func (s *spendMemory) ownLimits(id string) []*memoryv1.SpendLimit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limits[id]
}

// swarm is a SwarmService under test with everything it talks to.
type swarm struct {
	api      runnerv1.SwarmServiceClient
	mem      *memfake.Fake
	spend    *spendMemory
	wakes    *recWakes
	composer *recComposer
}

// startSwarm serves SwarmService on a free loopback port and returns a client of it. live may be nil (no statuses,
// no owners).
func startSwarm(t *testing.T, d Defaults, live Live) *swarm {
	t.Helper()
	sp := newSpendMemory()
	mem, memory := startMemory(t, memfake.Options{Interceptors: []grpc.UnaryServerInterceptor{sp.intercept}})
	if live == nil {
		live = noLive{}
	}
	comp := &recComposer{resp: &composerv1.ComposeContextResponse{}}
	compSrv := grpc.NewServer()
	composerv1.RegisterComposerServiceServer(compSrv, comp)
	compLis := listen(t)
	go func() { _ = compSrv.Serve(compLis) }()
	t.Cleanup(compSrv.Stop)
	wakes := &recWakes{}

	srv := server.New(server.Options{Name: "runner", Logger: slog.New(slog.DiscardHandler)})
	srv.Register(&runnerv1.SwarmService_ServiceDesc, New(memory, composerclient.New(composerv1.NewComposerServiceClient(dial(t, compLis.Addr().String())), nil), wakes, live, d))
	lis := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &swarm{api: runnerv1.NewSwarmServiceClient(dial(t, lis.Addr().String())), mem: mem, spend: sp, wakes: wakes, composer: comp}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// checkStatus fails unless err is a status with code and, when field is not empty, a BadRequest naming field.
func checkStatus(t *testing.T, what string, err error, code codes.Code, field string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Errorf("%s: %v, want %v", what, err, code)
		return
	}
	if field == "" {
		return
	}
	var got string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			got = br.GetFieldViolations()[0].GetField()
		}
	}
	if got != field {
		t.Errorf("%s: field %q, want %q (%v)", what, got, field, err)
	}
}

// checkWakes fails unless the wakes since the last check are want.
func checkWakes(t *testing.T, what string, w *recWakes, want ...wake) {
	t.Helper()
	if got := w.take(); !slices.Equal(got, want) {
		t.Errorf("%s: wakes %v, want %v", what, got, want)
	}
}

// spendLimit builds a spend limit.
func spendLimit(w memoryv1.SpendWindow, u memoryv1.SpendUnit, amount int64) *memoryv1.SpendLimit {
	return &memoryv1.SpendLimit{Window: w, Unit: u, Amount: amount}
}

const (
	hour      = memoryv1.SpendWindow_SPEND_WINDOW_HOUR
	day       = memoryv1.SpendWindow_SPEND_WINDOW_DAY
	tokens    = memoryv1.SpendUnit_SPEND_UNIT_TOKENS
	cost      = memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS
	running   = memoryv1.MysisState_MYSIS_STATE_RUNNING
	stopped   = memoryv1.MysisState_MYSIS_STATE_STOPPED
	idle      = memoryv1.MysisState_MYSIS_STATE_IDLE
	unknownID = "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"
)
