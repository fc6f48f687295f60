package grpcapi_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/composer/internal/benchkit/histgen"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/memoryclient"
)

// fakeMemory is a hand-written MemoryService that serves stored windows and counts GetComposeWindow calls. It
// answers the way the real service does: a v2 compose window (the recent rows reaching back to the current turn's
// start, preceded by the carried rows; histgen.ComposeWindow is the reference of that contract), or with v1 set the
// newest `window` memories as before; NotFound for unknown myses.
type fakeMemory struct {
	memoryv1.UnimplementedMemoryServiceServer

	v1    bool
	calls atomic.Int64
	mu    sync.Mutex
	myses map[string]*fakeMysis
	last  *memoryv1.GetComposeWindowRequest
}

type fakeMysis struct {
	mysis    *memoryv1.Mysis
	memories []*memoryv1.Memory
	upTo     int               // when > 0, only memories[:upTo] exist yet (a benchmark replays a session this way)
	mission  *memoryv1.Mission // own mission
	fallback *memoryv1.Mission // swarm-wide fallback, used when mission is nil and the request asks for it
}

func (f *fakeMemory) put(id string, m *fakeMysis) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.myses == nil {
		f.myses = map[string]*fakeMysis{}
	}
	m.mysis.Id = id
	f.myses[id] = m
}

// advance makes memories[:upTo] of mysis id visible.
func (f *fakeMemory) advance(id string, upTo int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.myses[id].upTo = upTo
}

func (f *fakeMemory) lastRequest() *memoryv1.GetComposeWindowRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fakeMemory) GetComposeWindow(_ context.Context, req *memoryv1.GetComposeWindowRequest) (*memoryv1.GetComposeWindowResponse, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = proto.Clone(req).(*memoryv1.GetComposeWindowRequest)
	m, ok := f.myses[req.GetMysisId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "mysis %s not found", req.GetMysisId())
	}
	n := int(req.GetWindow())
	if n <= 0 {
		n = 20
	}
	all := m.memories
	if m.upTo > 0 {
		all = all[:m.upTo]
	}
	resp := &memoryv1.GetComposeWindowResponse{Mysis: m.mysis, Mission: m.mission}
	if resp.Mission == nil && req.GetGlobalMissionFallback() {
		resp.Mission = m.fallback
	}
	if f.v1 {
		resp.Memories = all[max(0, len(all)-n):]
		return resp, nil
	}
	var objective int64
	if m.mission != nil {
		objective = m.mission.GetMemory().GetSeq()
	}
	w := histgen.ComposeWindow(fromProto(all), windowPolicy(req), objective)
	byID := make(map[int64]*memoryv1.Memory, len(all))
	for _, pm := range all {
		byID[pm.GetId()] = pm
	}
	for _, r := range w.Rows {
		resp.Memories = append(resp.Memories, byID[r.ID])
	}
	resp.RecentStartSeq, resp.ObjectiveSeq, resp.TurnTruncated = w.RecentStartSeq, w.ObjectiveSeq, w.TurnTruncated
	return resp, nil
}

// windowPolicy is the part of a policy GetComposeWindow receives.
func windowPolicy(req *memoryv1.GetComposeWindowRequest) compose.Policy {
	p := compose.DefaultPolicy()
	p.ScanWindow = max(int(req.GetWindow()), 1)
	if req.GetWindow() <= 0 {
		p.ScanWindow = 20
	}
	p.CarryLimit, p.ReplyLimit, p.MaxTurnRows = int(req.GetCarryLimit()), int(req.GetReplyLimit()), int(req.GetMaxTurnRows())
	p.SnapshotTools, p.PinnedTools = req.GetSnapshotTools(), req.GetPinnedTools()
	return p
}

// fromProto reads stored rows back as compose memories (the fields the window contract looks at).
func fromProto(ms []*memoryv1.Memory) []compose.Memory {
	roles := map[memoryv1.Role]chat.Role{memoryv1.Role_ROLE_SYSTEM: chat.RoleSystem, memoryv1.Role_ROLE_USER: chat.RoleUser,
		memoryv1.Role_ROLE_ASSISTANT: chat.RoleAssistant, memoryv1.Role_ROLE_TOOL: chat.RoleTool}
	sources := map[memoryv1.Source]compose.Source{}
	for _, s := range []compose.Source{compose.SourceDirect, compose.SourceBroadcast, compose.SourceNudge, compose.SourceLLM, compose.SourceTool, compose.SourceSystem} {
		sources[protoSource(s)] = s
	}
	out := make([]compose.Memory, len(ms))
	for i, m := range ms {
		out[i] = compose.Memory{ID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(), Role: roles[m.GetRole()], Source: sources[m.GetSource()],
			Content: m.GetContent(), ToolCallID: m.GetToolCallId(), ToolName: m.GetToolName()}
		for _, tc := range m.GetToolCalls() {
			out[i].ToolCalls = append(out[i].ToolCalls, chat.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArgumentsJson()})
		}
	}
	return out
}

// memoryServer runs the fake on a real loopback listener with a controllable health service.
type memoryServer struct {
	fake   *fakeMemory
	health *health.Server
	addr   string
	grpc   *grpc.Server
}

func startMemory(t testing.TB) *memoryServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newMemoryServer(lis.Addr().String())
	go func() { _ = s.grpc.Serve(lis) }()
	t.Cleanup(s.grpc.Stop)
	return s
}

func newMemoryServer(addr string) *memoryServer {
	s := &memoryServer{fake: &fakeMemory{}, health: health.NewServer(), addr: addr, grpc: grpc.NewServer()}
	memoryv1.RegisterMemoryServiceServer(s.grpc, s.fake)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	s.setServing(true)
	return s
}

func (s *memoryServer) setServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(memoryv1.MemoryService_ServiceDesc.ServiceName, st)
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

// waitHealth polls the composer's health until it reports want.
func (c *composer) waitHealth(t testing.TB, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var last healthpb.HealthCheckResponse_ServingStatus
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil {
			last = resp.GetStatus()
			if last == want {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("composer health stayed %s, want %s", last, want)
}

// toProtoMemories stores compose test rows the way the memory service returns them.
func toProtoMemories(mysisID string, rows []compose.Memory) []*memoryv1.Memory {
	out := make([]*memoryv1.Memory, len(rows))
	for i, m := range rows {
		pm := &memoryv1.Memory{Id: m.ID, MysisId: mysisID, Seq: m.Seq, Turn: m.Turn, Role: protoRole(m.Role),
			Source: protoSource(m.Source), SenderId: m.SenderID, Content: m.Content, Reasoning: m.Reasoning,
			ToolCallId: m.ToolCallID, ToolName: m.ToolName}
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
