package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
)

// The runner's relay through ComposeContext against the real memory service (issue 16): the last tool result of an
// iteration rides in the compose call, is stored before the window is read (so the composed request ends with it),
// comes back as stored with the mysis record and the spend, and a retried call (a lost response) stores nothing
// twice. A bad row is InvalidArgument naming the request's field.
func TestRelayAgainstRealMemoryService(t *testing.T) {
	addr, mem := realMemoryClient(t)
	c := startComposer(t, addr, grpcapi.Options{Counter: cache(t), Logger: discardLogger()})
	c.waitHealth(t, healthpb.HealthCheckResponse_SERVING)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	created, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "relay", Provider: "autopilot", SystemPrompt: "You are a mysis."})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetMysis().GetId()
	if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{
		{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "Check your status."},
		{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "get_status", ArgumentsJson: "{}"}},
			LlmCall: &memoryv1.LlmCall{CallId: "0195f6c1-7c1e-7000-8000-0000000000aa", Provider: "autopilot", Model: "autopilot", PromptTokens: 300, CompletionTokens: 12}},
	}}); err != nil {
		t.Fatal(err)
	}
	const result = `{"credits":100}`
	req := &composerv1.ComposeContextRequest{MysisId: id, SpendAt: timestamppb.Now(), Append: []*memoryv1.NewMemory{{
		Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, Content: result, ToolCallId: "c1", ToolName: "get_status",
		CallArgumentsJson: "{}", IdempotencyKey: "tool:x:2:c1",
	}}}
	resp, err := c.client.ComposeContext(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	msgs := resp.GetMessages()
	if last := msgs[len(msgs)-1]; last.GetRole() != memoryv1.Role_ROLE_TOOL || last.GetContent() != result {
		t.Fatalf("composed request ends with %v, want the appended tool result", last)
	}
	ap := resp.GetAppended()
	if len(ap) != 1 || ap[0].GetSeq() != 3 || resp.GetMysis().GetId() != id || resp.GetMysis().GetLastSeq() != 3 {
		t.Fatalf("appended %v, mysis %v; want the row at seq 3 and the mysis record with last seq 3", ap, resp.GetMysis())
	}
	if sp := resp.GetSpend(); len(sp.GetMysis()) != 3 || sp.GetMysis()[2].GetTokens() != 312 {
		t.Fatalf("spend %v, want three windows with 312 tokens in total", sp)
	}

	again, err := c.client.ComposeContext(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.GetAppended(); len(got) != 1 || got[0].GetId() != ap[0].GetId() || again.GetMysis().GetLastSeq() != 3 {
		t.Fatalf("retry: appended %v, last seq %d; want the stored row back and nothing new", got, again.GetMysis().GetLastSeq())
	}
	if plain, err := c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id}); err != nil || plain.GetSpend() != nil || len(plain.GetAppended()) != 0 {
		t.Fatalf("without a relay: spend %v, appended %v, err %v; want neither", plain.GetSpend(), plain.GetAppended(), err)
	}

	_, err = c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id, Append: []*memoryv1.NewMemory{{Source: memoryv1.Source_SOURCE_TOOL}}})
	if f := fieldOf(t, err, codes.InvalidArgument); f != "append[0].role" {
		t.Fatalf("bad append row: field %q (%v), want append[0].role", f, err)
	}
}
