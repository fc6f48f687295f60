package grpcapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
)

// One documented limit, reachable and enforced with the field named: content above gRPC's old 4 MiB default is
// stored; content above MaxTextBytes, or a batch above MaxRequestTextBytes, is refused naming the field.
func TestContentLimitIsOneLimit(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, true)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "limits", Provider: "autopilot", SystemPrompt: "You are a mysis."})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	mem := func(n int) *memoryv1.NewMemory {
		return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c", ToolName: "get_map", Content: strings.Repeat("x", n)}
	}
	resp, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{mem(chat.MaxTextBytes)}})
	if err != nil || len(resp.GetMemories()[0].GetContent()) != chat.MaxTextBytes {
		t.Fatalf("content at the documented limit (%d bytes): %v", chat.MaxTextBytes, err)
	}
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{mem(chat.MaxTextBytes + 1)}})
	wantCode(t, err, codes.InvalidArgument, "memories[0].content")
	batch := []*memoryv1.NewMemory{mem(7 << 20), mem(7 << 20), mem(7 << 20), mem(7 << 20), mem(7 << 20)}
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: batch})
	wantCode(t, err, codes.InvalidArgument, "memories")
}

// Over gRPC: a window of the largest results comes back cut with their pointers, small enough for a client with
// gRPC's default 4 MiB receive limit (8 results of 8 MiB would be 64 MiB uncut); a cap below the minimum is
// InvalidArgument naming max_result_bytes.
func TestComposeWindowCutOverGRPC(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, true)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "window-bytes", Provider: "autopilot", SystemPrompt: "You are a mysis."})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	for range 8 {
		_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{
			{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c", ToolName: "get_map", Content: strings.Repeat("x", chat.MaxTextBytes)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: 20, MaxResultBytes: 100 << 10},
		grpc.MaxCallRecvMsgSize(4<<20))
	if err != nil {
		t.Fatalf("window of 8 results of %d bytes: %v", chat.MaxTextBytes, err)
	}
	if n := len(resp.GetMemories()); n != 8 {
		t.Fatalf("%d rows, want 8", n)
	}
	for _, r := range resp.GetMemories() {
		want := fmt.Sprintf("…[cut: %d bytes more; full result is memory #%d, search for it]", chat.MaxTextBytes-(100<<10), r.GetId())
		if !strings.HasSuffix(r.GetContent(), want) || len(r.GetContent()) != 100<<10+len(want) {
			t.Fatalf("row %d: %d bytes, want %d bytes then %q", r.GetId(), len(r.GetContent()), 100<<10, want)
		}
	}
	_, err = c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, MaxResultBytes: 1})
	wantCode(t, err, codes.InvalidArgument, "max_result_bytes")
}
