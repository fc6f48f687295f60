package grpcapi_test

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// On the wire: a refused conditional append is FAILED_PRECONDITION with ErrorInfo reason PROMPT_ARRIVED (a state
// conflict keeps STATE_CONFLICT), and bad condition fields are InvalidArgument naming the field.
func TestConditionalAppendOnTheWire(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, false)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "cond", Provider: "ollama", Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	direct := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "orders"}
	answer := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "done", IdempotencyKey: "llm:0"}
	if _, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{direct}}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{answer}, IfNoPromptAfterSeq: &zero})
	if reason := errorReason(t, err, codes.FailedPrecondition); reason != "PROMPT_ARRIVED" {
		t.Fatalf("reason = %q, want PROMPT_ARRIVED", reason)
	}
	one := int64(1)
	sc := &memoryv1.AppendStateChange{State: memoryv1.MysisState_MYSIS_STATE_RUNNING, ExpectedState: memoryv1.MysisState_MYSIS_STATE_RUNNING}
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{answer}, IfNoPromptAfterSeq: &one, StateChange: sc})
	if reason := errorReason(t, err, codes.FailedPrecondition); reason != "STATE_CONFLICT" {
		t.Fatalf("reason = %q, want STATE_CONFLICT (the mysis is idle)", reason)
	}
	resp, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{answer}, IfNoPromptAfterSeq: &one})
	if err != nil || resp.GetMemories()[0].GetSeq() != 2 {
		t.Fatalf("allowed append: %v %v", resp, err)
	}
	neg := int64(-1)
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{direct}, IfNoPromptAfterSeq: &neg})
	wantCode(t, err, codes.InvalidArgument, "if_no_prompt_after_seq")
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{direct}, StateChange: &memoryv1.AppendStateChange{}})
	wantCode(t, err, codes.InvalidArgument, "state_change.state")
}

func errorReason(t *testing.T, err error, code codes.Code) string {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("want %v, got %v: %v", code, st.Code(), err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	t.Fatalf("no ErrorInfo in %v", st.Details())
	return ""
}
