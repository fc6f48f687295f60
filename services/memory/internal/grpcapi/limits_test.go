package grpcapi_test

import (
	"context"
	"strings"
	"testing"

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
