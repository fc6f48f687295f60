package memoryclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/runner/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv"
	"github.com/zoeaswarm/zoea/services/runner/internal/tools"
)

// realMemory runs the memory service binary on a fresh database and returns the adapter over a real connection:
// the adapter is only right if it agrees with the service itself, so no fake stands in here.
func realMemory(t *testing.T) (*memoryclient.Client, memoryv1.MemoryServiceClient) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the memory service")
	}
	dbURL := pgtest.New(t)
	_, addr := testenv.StartGRPC(t, "memory", testenv.Build(t, "memory"), []string{
		"ZOEA_DATABASE_URL=" + dbURL, "ZOEA_MIGRATE_ON_START=true",
	}, 60*time.Second)
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// WaitForReady: the watch starts once the process listens; the server then pushes its status changes.
	w, err := grpc_health_v1.NewHealthClient(conn).Watch(ctx, &grpc_health_v1.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := w.Recv()
		if err != nil {
			t.Fatalf("memory never became SERVING: %v", err)
		}
		if resp.GetStatus() == grpc_health_v1.HealthCheckResponse_SERVING {
			break
		}
	}
	api := memoryv1.NewMemoryServiceClient(conn)
	return memoryclient.New(api), api
}

func TestAdapterAgainstTheMemoryService(t *testing.T) {
	c, api := realMemory(t)
	ctx := context.Background()
	created, err := api.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "adapter-1", Provider: "autopilot", SystemPrompt: "You are a mysis."})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetMysis().GetId()

	// GetMysis converts; unknown and malformed ids become the errs kinds the domain switches on.
	m, err := c.GetMysis(ctx, id)
	if err != nil || m.ID != id || m.Name != "adapter-1" || m.Provider != "autopilot" || m.State != mysis.StateIdle || m.SystemPrompt != "You are a mysis." {
		t.Fatalf("GetMysis = %+v, %v", m, err)
	}
	if _, err := c.GetMysis(ctx, uuid.NewString()); !errs.Is(err, errs.NotFound) {
		t.Errorf("unknown mysis: %v, want NotFound", err)
	}
	if _, err := c.GetMysis(ctx, "nope"); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "mysis_id" {
		t.Errorf("malformed id: %v (field %q), want Invalid naming mysis_id", err, errs.FieldOf(err))
	}

	// SetState is a compare-and-set; a stale expectation is a Conflict and changes nothing.
	three := 3
	m, err = c.SetState(ctx, id, mysis.StateChange{To: mysis.StateRunning, Expected: mysis.StateIdle, Reason: "start", Count: &three})
	if err != nil || m.State != mysis.StateRunning || m.EncouragementCount != 3 || m.StateReason != "start" {
		t.Fatalf("SetState idle→running = %+v, %v", m, err)
	}
	if _, err := c.SetState(ctx, id, mysis.StateChange{To: mysis.StateStopped, Expected: mysis.StateIdle}); !errs.Is(err, errs.Conflict) {
		t.Errorf("stale compare: %v, want Conflict", err)
	}

	// Append and Recent round-trip every field the runner writes, tool calls included; a retry is idempotent.
	batch := []mysis.NewMemory{
		{Role: chat.RoleUser, Source: mysis.SourceDirect, Content: "Mine iron ore.", IdempotencyKey: "u1"},
		{Role: chat.RoleAssistant, Source: mysis.SourceLLM, Content: "", Reasoning: "I should mine.", IdempotencyKey: "a1",
			ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "mine", Arguments: `{"target":"iron_ore"}`}}},
		{Role: chat.RoleTool, Source: mysis.SourceTool, Content: `{"mined":5}`, ToolCallID: "call_1", ToolName: "mine",
			CallArguments: `{"target":"iron_ore"}`, IdempotencyKey: "t1"},
	}
	got, err := c.Append(ctx, id, batch)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Append(ctx, id, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if again[i].ID != got[i].ID || got[i].Seq != int64(i+1) {
			t.Errorf("row %d: first %+v, retry %+v; want seq %d and the same row on retry", i, got[i], again[i], i+1)
		}
	}
	recent, err := c.Recent(ctx, id, 10)
	if err != nil || len(recent) != 3 {
		t.Fatalf("Recent = %d rows, %v", len(recent), err)
	}
	if a := recent[1]; a.Role != chat.RoleAssistant || a.Source != mysis.SourceLLM || a.Reasoning != "I should mine." ||
		len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Name != "mine" {
		t.Errorf("assistant row = %+v", a)
	}
	if r := recent[2]; r.Role != chat.RoleTool || r.ToolCallID != "call_1" || r.ToolName != "mine" || r.Content != `{"mined":5}` || r.IdempotencyKey != "t1" {
		t.Errorf("tool row = %+v", r)
	}
	if _, err := c.Append(ctx, id, []mysis.NewMemory{{Role: chat.RoleUser, Source: mysis.SourceDirect, Content: "nul\x00"}}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "memories[0].content" {
		t.Errorf("bad content: %v (field %q)", err, errs.FieldOf(err))
	}

	// ListMysisIDs pages through every mysis.
	for _, name := range []string{"adapter-2", "adapter-3"} {
		if _, err := api.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: name, Provider: "autopilot", SystemPrompt: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	token := ""
	for range 10 {
		page, next, err := c.ListMysisIDs(ctx, token, 2)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, page...)
		if token = next; token == "" {
			break
		}
	}
	if len(ids) != 3 || ids[0] != id {
		t.Errorf("listed %v, want three ids starting with %s", ids, id)
	}

	// Searches are scoped to the mysis and find identifiers.
	hits, _, err := c.SearchMessages(ctx, id, "iron_ore", 10, tools.OrderRelevance)
	if err != nil || len(hits) == 0 {
		t.Errorf("SearchMessages(iron_ore) = %v, %v", hits, err)
	}
}
