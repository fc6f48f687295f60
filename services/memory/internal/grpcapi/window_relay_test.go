package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// GetComposeWindow's append and spend_at (issue 16): the rows are stored before the window is read (the window holds
// them), with AppendMemories' semantics — a retry with the same keys writes nothing twice and returns the first
// rows, seqs stay gapless, a user row opens a turn — and the spend read with it equals GetSpend's answer.
func TestComposeWindowAppendsAndReadsSpend(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, false)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "relay", Provider: "ollama", Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	call := &memoryv1.ToolCall{Id: "c1", Name: "get_status", ArgumentsJson: "{}"}
	if _, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{
		{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "Mine."},
		{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, ToolCalls: []*memoryv1.ToolCall{call},
			LlmCall: &memoryv1.LlmCall{CallId: "0195f6c1-7c1e-7000-8000-000000000001", Provider: "ollama", Model: "qwen3", PromptTokens: 100, CompletionTokens: 20}},
	}}); err != nil {
		t.Fatal(err)
	}
	result := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, Content: `{"credits":5}`,
		ToolCallId: "c1", ToolName: "get_status", CallArgumentsJson: "{}", IdempotencyKey: "tool:2:c1"}
	at := time.Now()
	req := &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 20, Append: []*memoryv1.NewMemory{result}, SpendAt: timestamppb.New(at)}
	w, err := c.GetComposeWindow(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ap := w.GetAppended()
	if len(ap) != 1 || ap[0].GetSeq() != 3 || ap[0].GetTurn() != 1 || ap[0].GetIdempotencyKey() != "tool:2:c1" || ap[0].GetCallKey() != "get_status {}" {
		t.Fatalf("appended = %v, want the tool result at seq 3 in turn 1 with its key and call key", ap)
	}
	mems := w.GetMemories()
	if len(mems) != 3 || mems[2].GetId() != ap[0].GetId() || w.GetMysis().GetLastSeq() != 3 {
		t.Fatalf("window = %d rows (last seq %d), want the appended row read back as the newest of 3", len(mems), w.GetMysis().GetLastSeq())
	}
	sp, err := c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: id, At: timestamppb.New(at)})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(w.GetSpend(), sp) || w.GetSpend().GetMysis()[2].GetTokens() != 120 {
		t.Fatalf("spend with the window = %v, GetSpend = %v; want equal, 120 tokens in total", w.GetSpend(), sp)
	}

	// A retry (the response was lost) returns the stored row and writes nothing.
	again, err := c.GetComposeWindow(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.GetAppended(); len(got) != 1 || got[0].GetId() != ap[0].GetId() || again.GetMysis().GetLastSeq() != 3 || len(again.GetMemories()) != 3 {
		t.Fatalf("retry appended %v, last seq %d; want the first row back and nothing new", got, again.GetMysis().GetLastSeq())
	}

	// The same key with other content is refused naming this request's field, and the window is not read.
	other := proto.Clone(req).(*memoryv1.GetComposeWindowRequest)
	other.Append[0].Content = `{"credits":6}`
	_, err = c.GetComposeWindow(ctx, other)
	wantCode(t, err, codes.AlreadyExists, "append[0].idempotency_key")

	// A user row opens the next turn, as in AppendMemories; without spend_at no spend comes back.
	w, err = c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 20, Append: []*memoryv1.NewMemory{
		{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_NUDGE, Content: "Continue."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ap := w.GetAppended(); len(ap) != 1 || ap[0].GetSeq() != 4 || ap[0].GetTurn() != 2 || w.GetSpend() != nil {
		t.Fatalf("appended %v (spend %v), want seq 4 opening turn 2 and no spend", ap, w.GetSpend())
	}
}

// Bad relay fields are InvalidArgument naming this request's field, and nothing is stored.
func TestComposeWindowAppendValidation(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, false)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "relaybad", Provider: "ollama", Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	ok := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "hi", IdempotencyKey: "k"}
	for _, tc := range []struct {
		name  string
		req   *memoryv1.GetComposeWindowRequest
		field string
	}{
		{"no role", &memoryv1.GetComposeWindowRequest{MysisId: id, Append: []*memoryv1.NewMemory{ok, {Source: memoryv1.Source_SOURCE_DIRECT}}}, "append[1].role"},
		{"empty row", &memoryv1.GetComposeWindowRequest{MysisId: id, Append: []*memoryv1.NewMemory{{}}}, "append[0].role"},
		{"NUL in content", &memoryv1.GetComposeWindowRequest{MysisId: id, Append: []*memoryv1.NewMemory{{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "a\x00b"}}}, "append[0].content"},
		{"repeated key", &memoryv1.GetComposeWindowRequest{MysisId: id, Append: []*memoryv1.NewMemory{ok, ok}}, "append[1].idempotency_key"},
		{"bad spend_at", &memoryv1.GetComposeWindowRequest{MysisId: id, Append: []*memoryv1.NewMemory{ok}, SpendAt: &timestamppb.Timestamp{Nanos: -1}}, "spend_at"},
		{"bad mysis id", &memoryv1.GetComposeWindowRequest{MysisId: "nope", Append: []*memoryv1.NewMemory{ok}}, "mysis_id"},
	} {
		_, err := c.GetComposeWindow(ctx, tc.req)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, codes.InvalidArgument, tc.field) })
	}
	w, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id})
	if err != nil || w.GetMysis().GetLastSeq() != 0 {
		t.Fatalf("after refused requests: last seq %d, err %v; want nothing stored", w.GetMysis().GetLastSeq(), err)
	}
}
