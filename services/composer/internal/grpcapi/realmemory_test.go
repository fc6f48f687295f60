package grpcapi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/libs/testsupport/svcbin"
	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
)

// realMemory builds services/memory/cmd/memory (a different module, so it cannot run in-process; libs/testsupport/svcbin),
// migrates a fresh Postgres database with it and serves it on a loopback port. A binary that does not build fails
// the test; Postgres out of reach is testdep.Missing (skipped locally, a failure in CI).
func realMemory(t *testing.T) (addr string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real memory service: skipped with -short")
	}
	bin := svcbin.Build(t, "memory")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL, drop, err := pgtest.Create(ctx, "composer")
	if err != nil {
		testdep.Missing(t, "real memory service: no Postgres (%v); set ZOEA_TEST_DATABASE_URL", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	env := append(os.Environ(), "ZOEA_DATABASE_URL="+dbURL, "OTEL_SDK_DISABLED=true")
	migrate := exec.CommandContext(ctx, bin, "migrate")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("memory migrate: %v\n%s", err, out)
	}

	var logs syncBuffer
	srv := exec.Command(bin)
	srv.Env = append(env, "ZOEA_LISTEN_ADDR=127.0.0.1:0") // the service picks the port and logs it (svcbin.LoggedAddr)
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("memory service output:\n%s", logs.String())
		}
	})
	// The address is in the service's log: re-read it on every write (an event), never on a timer.
	for {
		wrote := logs.Wrote() // taken before reading, so a write after the read is not missed
		if addr = svcbin.LoggedAddr(logs.String(), "grpc server listening"); addr != "" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("memory service never logged its address:\n%s", logs.String())
		case <-done:
			t.Fatalf("memory service exited:\n%s", logs.String())
		case <-wrote:
		}
	}
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := server.AwaitServing(ctx, conn, ""); err != nil { // the health stream: the status change itself
		t.Fatalf("memory service never became healthy: %v\n%s", err, logs.String())
	}
	return addr
}

// realMemoryClient is realMemory with a client of it, closed when the test ends.
func realMemoryClient(t *testing.T) (string, memoryv1.MemoryServiceClient) {
	t.Helper()
	addr := realMemory(t)
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return addr, memoryv1.NewMemoryServiceClient(conn)
}

// syncBuffer is a process's output, safe for concurrent use, that signals each write.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed and replaced on every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// Wrote returns a channel closed by the next write.
func (s *syncBuffer) Wrote() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{})
	}
	return s.wrote
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The composer against the real memory service and Postgres: a broadcast mission, tool loops stored through
// AppendMemories, a mid-turn compose, an autonomous-turn compose, and NotFound for an unknown mysis.
func TestAgainstRealMemoryService(t *testing.T) {
	addr, mem := realMemoryClient(t)
	c := startComposer(t, addr, grpcapi.Options{Counter: cache(t), Logger: discardLogger()})
	c.waitHealth(t, healthpb.HealthCheckResponse_SERVING)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const prompt = "You are a mysis, an autonomous SpaceMolt pilot."
	created, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "realmem", Provider: "autopilot", SystemPrompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetMysis().GetId()
	if _, err := mem.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{Content: "All myses: mine iron ore and sell it.", TargetMysisIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	status1 := `{"credits":100,"location":"poi_1","fuel":90}`
	system := `{"system":{"id":"sys_0","pois":[` + strings.Repeat(`{"id":"poi_1","type":"asteroid_belt","resources":["iron_ore"]},`, 40) + `{}]}}`
	var batch []*memoryv1.NewMemory
	for i := range 6 {
		callA, callB := fmt.Sprintf("call_%d_a", i), fmt.Sprintf("call_%d_b", i)
		batch = append(batch,
			&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Reasoning: "check state",
				ToolCalls: []*memoryv1.ToolCall{{Id: callA, Name: "get_status", ArgumentsJson: "{}"}, {Id: callB, Name: "get_system", ArgumentsJson: `{"id":"sys_0"}`}}},
			&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: callA, ToolName: "get_status", Content: status1},
			&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: callB, ToolName: "get_system", Content: system},
		)
	}
	stored, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: batch})
	if err != nil {
		t.Fatal(err)
	}

	resp, err := c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id})
	if err != nil {
		t.Fatal(err)
	}
	msgs := fromProtoMessages(resp.GetMessages())
	if err := chatvalid.Strict.Validate(msgs); err != nil {
		t.Fatal(err)
	}
	if msgs[0].Content != prompt || msgs[1].Content != "All myses: mine iron ore and sell it." {
		t.Fatalf("system prompt and mission first, got %q, %q", msgs[0].Content, msgs[1].Content)
	}
	// Six loops of the current turn: 1 system + 1 prompt + 6 × 3 = 20 messages while the request is under the
	// high-water mark; above it (six 700-token get_system results are) the superseded loops are compacted away and
	// the newest loop stays whole.
	if len(msgs) > 20 || len(msgs) < 5 || resp.GetManifest().GetCompactionBoundarySeq() == 0 {
		t.Fatalf("%d messages, boundary %d", len(msgs), resp.GetManifest().GetCompactionBoundarySeq())
	}
	var stubbed int
	seqs := map[int64]bool{}
	for _, e := range resp.GetManifest().GetEntries() {
		seqs[e.GetSeq()] = true
		if e.GetDisposition() == composerv1.Disposition_DISPOSITION_STUBBED {
			stubbed++
		}
	}
	// v2: superseded snapshots below the compaction boundary leave with their calls (or are stubbed by the budget);
	// the newest of each is always sent whole.
	if stubbed > 10 || msgs[len(msgs)-2].Content != status1 || msgs[len(msgs)-1].Content != system ||
		resp.GetManifest().GetTokens().GetTotal() > resp.GetManifest().GetTokenBudget() {
		t.Fatalf("%d stubbed snapshot results (at most 10), newest %.40q %.40q, tokens %v", stubbed,
			msgs[len(msgs)-2].Content, msgs[len(msgs)-1].Content, resp.GetManifest().GetTokens())
	}
	for _, m := range stored.GetMemories() {
		if !seqs[m.GetSeq()] {
			t.Fatalf("stored memory seq %d missing from the manifest", m.GetSeq())
		}
	}
	if resp.GetEncouragement().GetAction() != composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET {
		t.Fatalf("a broadcast-opened turn resets the count: %v", resp.GetEncouragement())
	}

	// The turn ends with a reply; the runner begins an autonomous turn: the mission drives a gentle nudge.
	if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{
		{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "Surveyed sys_0; heading to the belt."}}}); err != nil {
		t.Fatal(err)
	}
	resp, err = c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id, BeginAutonomousTurn: true})
	if err != nil {
		t.Fatal(err)
	}
	enc := resp.GetEncouragement()
	if enc.GetAction() != composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET || enc.GetNudge() == "" ||
		resp.GetMessages()[len(resp.GetMessages())-1].GetContent() != enc.GetNudge() {
		t.Fatalf("autonomous turn: %v", enc)
	}
	if err := chatvalid.Strict.Validate(fromProtoMessages(resp.GetMessages())); err != nil {
		t.Fatal(err)
	}

	_, err = c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: "6f1c2a1e-0000-4000-8000-00000000dead"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("unknown mysis: %v, want NotFound", err)
	}

	// A small latency sample over loopback gRPC (warm cache); docs/BENCHMARKS.md has the real measurement.
	lat := make([]time.Duration, 200)
	for i := range lat {
		start := time.Now()
		if _, err := c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id}); err != nil {
			t.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	t.Logf("ComposeContext against the real memory service, %d calls: p50 %v, p99 %v", len(lat), lat[len(lat)/2], lat[len(lat)*99/100])
}
