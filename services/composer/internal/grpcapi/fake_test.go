package grpcapi_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/memoryclient"
)

// memoryServer is the shared in-memory memory service (libs/testsupport/memfake, held to libs/testsupport/memorycontract like the
// real one) on a real loopback listener, with a gRPC interceptor that counts and records GetComposeWindow calls, can
// make it answer like a v1 server, and wakes waiters on every health check it receives.
type memoryServer struct {
	fake *memfake.Fake
	addr string

	calls    atomic.Int64
	v1       atomic.Bool
	mu       sync.Mutex
	last     *memoryv1.GetComposeWindowRequest
	noPrompt map[string]bool // myses whose system prompt the window leaves out (stored before memory required one)
	checks   int             // health checks received
	checked  chan struct{}   // closed and replaced on every health check
}

func startMemory(t testing.TB) *memoryServer { return startMemoryAt(t, "") }

// startMemoryAt is startMemory on a given address ("" = a free port).
func startMemoryAt(t testing.TB, addr string) *memoryServer {
	t.Helper()
	s := &memoryServer{noPrompt: map[string]bool{}, checked: make(chan struct{})}
	s.fake = memfake.StartWith(t, memfake.Options{Addr: addr, Interceptors: []grpc.UnaryServerInterceptor{s.intercept}})
	s.addr = s.fake.Addr()
	return s
}

func (s *memoryServer) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod == healthpb.Health_Check_FullMethodName {
		s.mu.Lock()
		s.checks++
		close(s.checked)
		s.checked = make(chan struct{})
		s.mu.Unlock()
		return handler(ctx, req)
	}
	w, ok := req.(*memoryv1.GetComposeWindowRequest)
	if !ok {
		return handler(ctx, req)
	}
	s.calls.Add(1)
	s.mu.Lock()
	s.last = proto.Clone(w).(*memoryv1.GetComposeWindowRequest)
	s.mu.Unlock()
	v1 := s.v1.Load()
	if v1 { // a v1 server knows none of the v2 fields
		w = proto.Clone(w).(*memoryv1.GetComposeWindowRequest)
		w.CarryLimit, w.SnapshotTools, w.PinnedTools, w.ReplyLimit, w.MaxTurnRows, w.RecentFromSeq = 0, nil, nil, 0, 0, 0
		req = w
	}
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, err
	}
	out := resp.(*memoryv1.GetComposeWindowResponse)
	if v1 {
		out.RecentStartSeq, out.ObjectiveSeq, out.TurnTruncated = 0, 0, false
	}
	s.mu.Lock()
	if s.noPrompt[out.GetMysis().GetId()] {
		out.Mysis.SystemPrompt = ""
	}
	s.mu.Unlock()
	return out, nil
}

func (s *memoryServer) lastRequest() *memoryv1.GetComposeWindowRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// awaitChecks returns once the server has received n more health checks than when it was called.
func (s *memoryServer) awaitChecks(t testing.TB, n int) {
	t.Helper()
	s.mu.Lock()
	want := s.checks + n
	s.mu.Unlock()
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		got, ch := s.checks, s.checked
		s.mu.Unlock()
		if got >= want {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("memory received %d of %d health checks", got-want+n, n)
		}
	}
}

func (s *memoryServer) setServing(ok bool) { s.fake.SetServing(ok) }

func (s *memoryServer) client(t testing.TB) memoryv1.MemoryServiceClient {
	t.Helper()
	conn, err := server.Dial(s.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return memoryv1.NewMemoryServiceClient(conn)
}

// createMysis creates a mysis through the memory API and sets its encouragement count.
func (s *memoryServer) createMysis(t testing.TB, name, prompt string, encouragement int32) string {
	t.Helper()
	c := s.client(t)
	resp, err := c.CreateMysis(context.Background(), &memoryv1.CreateMysisRequest{Name: name, Provider: "autopilot", SystemPrompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetMysis().GetId()
	if encouragement != 0 {
		if _, err := c.SetMysisState(context.Background(), &memoryv1.SetMysisStateRequest{MysisId: id,
			State: memoryv1.MysisState_MYSIS_STATE_IDLE, EncouragementCount: proto.Int32(encouragement)}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// appendRows stores compose test rows through AppendMemories, in batches the service accepts; the service assigns
// the same seqs and turns when the rows start at the mysis's next seq.
func (s *memoryServer) appendRows(t testing.TB, id string, rows []compose.Memory) {
	t.Helper()
	c := s.client(t)
	for len(rows) > 0 {
		n := min(len(rows), 500)
		resp, err := c.AppendMemories(context.Background(), &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: toNewMemories(rows[:n])})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range resp.GetMemories() {
			if m.GetSeq() != rows[i].Seq || m.GetTurn() != rows[i].Turn {
				t.Fatalf("row stored as seq %d turn %d, generated as seq %d turn %d", m.GetSeq(), m.GetTurn(), rows[i].Seq, rows[i].Turn)
			}
		}
		rows = rows[n:]
	}
}

// composer is a composer server wired as main wires it, on a real loopback listener.
type composer struct {
	client composerv1.ComposerServiceClient
	health healthpb.HealthClient
	srv    *server.Server
	addr   string
}

func startComposer(t testing.TB, memoryAddr string, opts grpcapi.Options) *composer {
	t.Helper()
	memConn, err := server.Dial(memoryAddr, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = memConn.Close() })
	svc, err := grpcapi.New(memoryclient.New(memoryv1.NewMemoryServiceClient(memConn)), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{
		Name:          "composer",
		Config:        server.Config{ListenAddr: "127.0.0.1:0", ShutdownTimeout: time.Second},
		Checks:        []server.Check{memoryclient.Ready(healthpb.NewHealthClient(memConn))},
		CheckInterval: 50 * time.Millisecond,
		Logger:        discardLogger(),
	})
	srv.Register(&composerv1.ComposerService_ServiceDesc, svc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("composer server: %v", err)
		}
	})
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	addr, err := srv.Addr(actx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := server.Dial(addr.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &composer{client: composerv1.NewComposerServiceClient(conn), health: healthpb.NewHealthClient(conn), srv: srv, addr: addr.String()}
}

// waitHealth watches the composer's health until it reports want.
func (c *composer) waitHealth(t testing.TB, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var last healthpb.HealthCheckResponse_ServingStatus
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("composer health stayed %s, want %s (%v)", last, want, err)
		}
		if last = resp.GetStatus(); last == want {
			return
		}
	}
}

// toNewMemories turns compose test rows into memories to append.
func toNewMemories(rows []compose.Memory) []*memoryv1.NewMemory {
	out := make([]*memoryv1.NewMemory, len(rows))
	for i, m := range rows {
		pm := &memoryv1.NewMemory{Role: protoRole(m.Role), Source: protoSource(m.Source), SenderId: m.SenderID,
			Content: m.Content, Reasoning: m.Reasoning, ToolCallId: m.ToolCallID, ToolName: m.ToolName}
		for _, tc := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, &memoryv1.ToolCall{Id: tc.ID, Name: tc.Name, ArgumentsJson: tc.Arguments})
		}
		out[i] = pm
	}
	return out
}

func protoRole(r chat.Role) memoryv1.Role {
	switch r {
	case chat.RoleSystem:
		return memoryv1.Role_ROLE_SYSTEM
	case chat.RoleUser:
		return memoryv1.Role_ROLE_USER
	case chat.RoleAssistant:
		return memoryv1.Role_ROLE_ASSISTANT
	case chat.RoleTool:
		return memoryv1.Role_ROLE_TOOL
	}
	return memoryv1.Role_ROLE_UNSPECIFIED
}

func protoSource(s compose.Source) memoryv1.Source {
	return map[compose.Source]memoryv1.Source{
		compose.SourceDirect: memoryv1.Source_SOURCE_DIRECT, compose.SourceBroadcast: memoryv1.Source_SOURCE_BROADCAST,
		compose.SourceNudge: memoryv1.Source_SOURCE_NUDGE, compose.SourceLLM: memoryv1.Source_SOURCE_LLM,
		compose.SourceTool: memoryv1.Source_SOURCE_TOOL, compose.SourceSystem: memoryv1.Source_SOURCE_SYSTEM,
	}[s]
}
