// Package memfake is a hand-written, in-memory stand-in for the memory service, served over real gRPC, for the
// bus's tests and benchmark. It implements the RPCs the bus calls with the contract of the real service —
// idempotent RecordBroadcast (one row per broadcast per mysis, ever), idempotency keys on AppendMemories, gapless
// per-mysis seq — and adds what tests need: going down and coming back on the same address, injected failures
// (including "committed, then the response was lost"), inspection of what was written, and Await, which wakes on
// every call and write instead of polling. It lives under internal/testkit: support code for tests, never imported
// by the bus's production packages.
package memfake

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
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

	tb   testing.TB
	addr string

	mu         sync.Mutex
	srv        *grpc.Server
	myses      map[string]*memoryv1.Mysis
	byName     map[string]string
	memories   map[string][]*memoryv1.Memory
	keys       map[string]map[string]*memoryv1.Memory // mysis → idempotency key → row
	broadcasts map[string]*memoryv1.Broadcast
	recorded   map[string]time.Time // broadcast id → when its rows were first written
	nextID     int64
	faults     map[string][]Fault
	failAll    map[string]codes.Code
	calls      map[string]int
	changed    chan struct{} // closed (and replaced) on every call and write; see Await
}

// Start serves a new Fake on a loopback port until the test ends.
func Start(tb testing.TB) *Fake {
	tb.Helper()
	f := &Fake{
		tb: tb, myses: map[string]*memoryv1.Mysis{}, byName: map[string]string{},
		memories: map[string][]*memoryv1.Memory{}, keys: map[string]map[string]*memoryv1.Memory{},
		broadcasts: map[string]*memoryv1.Broadcast{}, recorded: map[string]time.Time{},
		faults: map[string][]Fault{}, calls: map[string]int{}, failAll: map[string]codes.Code{}, changed: make(chan struct{}),
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f.addr = lis.Addr().String()
	f.serve(lis)
	tb.Cleanup(f.Stop)
	return f
}

// Addr is the address the fake listens on (the same across Stop and Restart).
func (f *Fake) Addr() string { return f.addr }

func (f *Fake) serve(lis net.Listener) {
	srv := grpc.NewServer()
	memoryv1.RegisterMemoryServiceServer(srv, f)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
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
		m, err := f.CreateMysis(context.Background(), &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("%s-%04d", prefix, i), Provider: "autopilot"})
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

// invalid is InvalidArgument naming the field in BadRequest details, as the real service answers.
func invalid(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st, err := status.New(codes.InvalidArgument, field+": "+msg).WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}},
	})
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: %s", field, msg)
	}
	return st.Err()
}

func canonicalID(field, s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", invalid(field, "not a UUID: %q", s)
	}
	return u.String(), nil
}

// CreateMysis implements MemoryService.CreateMysis.
func (f *Fake) CreateMysis(_ context.Context, req *memoryv1.CreateMysisRequest) (*memoryv1.CreateMysisResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.GetName() == "" {
		return nil, invalid("name", "required")
	}
	if _, ok := f.byName[req.GetName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "mysis %q already exists", req.GetName())
	}
	now := timestamppb.Now()
	m := &memoryv1.Mysis{
		Id: uuid.NewString(), Name: req.GetName(), Provider: req.GetProvider(), Model: req.GetModel(),
		Temperature: req.GetTemperature(), SystemPrompt: req.GetSystemPrompt(), State: memoryv1.MysisState_MYSIS_STATE_IDLE,
		CreatedAt: now, UpdatedAt: now,
	}
	f.myses[m.Id] = m
	f.byName[m.Name] = m.Id
	f.keys[m.Id] = map[string]*memoryv1.Memory{}
	return &memoryv1.CreateMysisResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis)}, nil
}

// GetMysis implements MemoryService.GetMysis.
func (f *Fake) GetMysis(_ context.Context, req *memoryv1.GetMysisRequest) (*memoryv1.GetMysisResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetMysis"); ok {
		return nil, status.Error(fault.Code, "injected failure")
	}
	id, err := canonicalID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	m, ok := f.myses[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "mysis %s not found", id)
	}
	return &memoryv1.GetMysisResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis)}, nil
}

// GetMysisByName implements MemoryService.GetMysisByName.
func (f *Fake) GetMysisByName(_ context.Context, req *memoryv1.GetMysisByNameRequest) (*memoryv1.GetMysisByNameResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.byName[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "mysis %q not found", req.GetName())
	}
	return &memoryv1.GetMysisByNameResponse{Mysis: proto.Clone(f.myses[id]).(*memoryv1.Mysis)}, nil
}

// ListMyses implements MemoryService.ListMyses (ordered by name; the page token is an offset).
func (f *Fake) ListMyses(_ context.Context, req *memoryv1.ListMysesRequest) (*memoryv1.ListMysesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("ListMyses"); ok {
		return nil, status.Error(fault.Code, "injected failure")
	}
	size := int(req.GetPageSize())
	if size <= 0 {
		size = 100
	}
	size = min(size, 1000)
	offset := 0
	if t := req.GetPageToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return nil, invalid("page_token", "malformed")
		}
		offset = n
	}
	names := make([]string, 0, len(f.byName))
	for name, id := range f.byName {
		if st := req.GetState(); st == memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED || f.myses[id].GetState() == st {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	resp := &memoryv1.ListMysesResponse{}
	for i := offset; i < len(names) && i < offset+size; i++ {
		resp.Myses = append(resp.Myses, proto.Clone(f.myses[f.byName[names[i]]]).(*memoryv1.Mysis))
	}
	if offset+size < len(names) {
		resp.NextPageToken = strconv.Itoa(offset + size)
	}
	return resp, nil
}

// appendLocked writes one row unless its idempotency key exists; the caller holds f.mu.
func (f *Fake) appendLocked(mysisID string, nm *memoryv1.NewMemory, broadcastID string) (*memoryv1.Memory, bool) {
	if k := nm.GetIdempotencyKey(); k != "" {
		if m, ok := f.keys[mysisID][k]; ok {
			return m, false
		}
	}
	y := f.myses[mysisID]
	y.LastSeq++
	if nm.GetRole() == memoryv1.Role_ROLE_USER {
		y.CurrentTurn++
	}
	f.nextID++
	m := &memoryv1.Memory{
		Id: f.nextID, MysisId: mysisID, Seq: y.LastSeq, Turn: y.CurrentTurn, Role: nm.GetRole(), Source: nm.GetSource(),
		SenderId: nm.GetSenderId(), Content: nm.GetContent(), IdempotencyKey: nm.GetIdempotencyKey(),
		BroadcastId: broadcastID, CreatedAt: timestamppb.Now(),
	}
	f.memories[mysisID] = append(f.memories[mysisID], m)
	f.changedLocked()
	if k := nm.GetIdempotencyKey(); k != "" {
		f.keys[mysisID][k] = m
	}
	return m, true
}

// AppendMemories implements MemoryService.AppendMemories (idempotent per key).
func (f *Fake) AppendMemories(_ context.Context, req *memoryv1.AppendMemoriesRequest) (*memoryv1.AppendMemoriesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault, faulty := f.enter("AppendMemories")
	if faulty && !fault.AfterCommit {
		return nil, status.Error(fault.Code, "injected failure")
	}
	id, err := canonicalID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	if _, ok := f.myses[id]; !ok {
		return nil, status.Errorf(codes.NotFound, "mysis %s not found", id)
	}
	if len(req.GetMemories()) == 0 {
		return nil, invalid("memories", "required")
	}
	for i, nm := range req.GetMemories() {
		if nm.GetRole() == memoryv1.Role_ROLE_UNSPECIFIED {
			return nil, invalid(fmt.Sprintf("memories[%d].role", i), "required")
		}
		if nm.GetSource() == memoryv1.Source_SOURCE_UNSPECIFIED {
			return nil, invalid(fmt.Sprintf("memories[%d].source", i), "required")
		}
		if strings.IndexByte(nm.GetContent(), 0) >= 0 {
			return nil, invalid(fmt.Sprintf("memories[%d].content", i), "contains a NUL byte")
		}
	}
	resp := &memoryv1.AppendMemoriesResponse{}
	for _, nm := range req.GetMemories() {
		m, _ := f.appendLocked(id, nm, "")
		resp.Memories = append(resp.Memories, proto.Clone(m).(*memoryv1.Memory))
	}
	if faulty {
		return nil, status.Error(fault.Code, "injected failure after commit")
	}
	return resp, nil
}

// RecordBroadcast implements MemoryService.RecordBroadcast: idempotent on the broadcast id and per mysis.
func (f *Fake) RecordBroadcast(_ context.Context, req *memoryv1.RecordBroadcastRequest) (*memoryv1.RecordBroadcastResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault, faulty := f.enter("RecordBroadcast")
	if faulty && !fault.AfterCommit {
		return nil, status.Error(fault.Code, "injected failure")
	}
	bid := uuid.NewString()
	if req.GetBroadcastId() != "" {
		var err error
		if bid, err = canonicalID("broadcast_id", req.GetBroadcastId()); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(req.GetContent()) == "" {
		return nil, invalid("content", "required")
	}
	b, ok := f.broadcasts[bid]
	if !ok {
		b = &memoryv1.Broadcast{Id: bid, SenderId: req.GetSenderId(), Content: req.GetContent(), CreatedAt: timestamppb.Now()}
		f.broadcasts[bid] = b
	}
	targets := req.GetTargetMysisIds()
	if len(targets) == 0 {
		for id := range f.myses {
			if id != b.GetSenderId() {
				targets = append(targets, id)
			}
		}
		slices.Sort(targets)
	}
	resp := &memoryv1.RecordBroadcastResponse{Broadcast: proto.Clone(b).(*memoryv1.Broadcast)}
	for i, t := range targets {
		id, err := canonicalID(fmt.Sprintf("target_mysis_ids[%d]", i), t)
		if err != nil {
			return nil, err
		}
		if _, ok := f.myses[id]; !ok {
			continue // the real service skips myses that do not exist (any more)
		}
		_, fresh := f.appendLocked(id, &memoryv1.NewMemory{
			Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_BROADCAST, SenderId: b.GetSenderId(),
			Content: b.GetContent(), IdempotencyKey: "broadcast:" + bid,
		}, bid)
		if fresh {
			resp.DeliveredCount++
		} else {
			resp.AlreadyDeliveredCount++
		}
	}
	if _, ok := f.recorded[bid]; !ok {
		f.recorded[bid] = time.Now()
	}
	if faulty {
		return nil, status.Error(fault.Code, "injected failure after commit")
	}
	return resp, nil
}
