// Package memoryclient is the composer's adapter to the memory service: one GetComposeWindow round trip per
// composition, converted into compose.Input, with gRPC statuses turned back into libs/errs errors by libs/server's
// one mapper. grpcapi (the transport) reads no memoryv1 type: what it relays between the runner and the memory
// service (rows to append, the spend time; the mysis and the spend back) passes through unread.
package memoryclient

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/window"
)

// WindowAPI is the one memory-service call the composer makes; the generated MemoryServiceClient implements it.
type WindowAPI interface {
	GetComposeWindow(ctx context.Context, in *memoryv1.GetComposeWindowRequest, opts ...grpc.CallOption) (*memoryv1.GetComposeWindowResponse, error)
}

// Client reads compose windows.
type Client struct {
	api WindowAPI
}

// New wraps api.
func New(api WindowAPI) *Client { return &Client{api: api} }

// Window returns what composing mysisID's next request under policy p needs: its system prompt, mission,
// encouragement count and window of memories. Tools and the turn flag are the caller's to fill in. Errors are
// libs/errs errors (NotFound for an unknown mysis, Unavailable when the memory service cannot answer).
// The relay's rows are stored by the memory service before it reads the window, in the same call.
// With known set, the memory service leaves the carried rows out when they are the ones known names
// (Relayed.CarryOmitted), and the recent rows known holds with them (Relayed.RecentOmittedThrough); the caller
// splices them back. When the recent part starts later than known's, the service derives the carried rows from
// known's seqs and returns the whole window.
func (c *Client) Window(ctx context.Context, mysisID string, p compose.Policy, recentFrom int64, known *window.CarryKnown, relay window.Relay) (compose.Input, window.Relayed, error) {
	req := toProtoWindowRequest(mysisID, p)
	req.RecentFromSeq = recentFrom
	if known != nil {
		req.CarryKnown = &memoryv1.CarryKnown{ObjectiveSeq: known.ObjectiveSeq, RecentStartSeq: known.RecentStartSeq, Bytes: known.Bytes,
			Seqs: known.Seqs, RecentThroughSeq: known.RecentThrough, RecentBytes: known.RecentBytes}
	}
	req.Append, req.SpendAt = relay.Append, relay.SpendAt
	w, err := c.api.GetComposeWindow(ctx, req)
	if err != nil {
		return compose.Input{}, window.Relayed{}, fmt.Errorf("memory GetComposeWindow for mysis %s: %w", mysisID, server.FromStatus(err))
	}
	return fromProtoWindow(w), window.Relayed{Appended: w.GetAppended(), Mysis: w.GetMysis(), Spend: w.GetSpend(),
		CarryOmitted: w.GetCarryOmitted(), CarryCut: w.GetCarryCut(), CarryBytes: w.GetCarryBytes(),
		RecentOmittedThrough: w.GetRecentOmittedThrough(), RecentBytes: w.GetRecentBytes()}, nil
}

// Ready is the composer's readiness check: it can answer nothing while the memory service's health is not
// SERVING.
func Ready(h healthpb.HealthClient) server.Check {
	return server.Check{Name: "memory", Fn: func(ctx context.Context) error {
		if err := server.PeerServing(ctx, h, memoryv1.MemoryService_ServiceDesc.ServiceName); err != nil {
			return fmt.Errorf("memory %w", err)
		}
		return nil
	}}
}

// resultBytesPerToken sizes the memory service's cut of tool results from the policy's cap in tokens: no tokenizer
// averages anywhere near 32 bytes per token, so a result cut there still holds more than ToolResultCap tokens and
// the composer's own cap (with its pointer) is what decides what the model sees.
const (
	resultBytesPerToken = 32
	minResultCutBytes   = 64 << 10
)

// toProtoWindowRequest asks the memory service for what composition needs under policy p.
// The memory service keys calls by tool name, so "tool.action" entries are asked for as Policy.WindowTools says.
func toProtoWindowRequest(id string, p compose.Policy) *memoryv1.GetComposeWindowRequest {
	snapshot, pinned := p.WindowTools()
	return &memoryv1.GetComposeWindowRequest{
		MysisId: id, Window: int32(p.ScanWindow), GlobalMissionFallback: !p.DisableMissionFallback,
		CarryLimit: int32(p.CarryLimit), SnapshotTools: snapshot, PinnedTools: pinned,
		ReplyLimit: int32(p.ReplyLimit), MaxTurnRows: int32(p.MaxTurnRows),
		MaxResultBytes: int32(min(max(minResultCutBytes, p.ToolResultCap*resultBytesPerToken), 1<<30)),
	}
}

// fromProtoWindow builds the compose input from the memory service's window. A v1 memory service leaves
// recent_start_seq at 0: the whole window is then recent, as before.
func fromProtoWindow(w *memoryv1.GetComposeWindowResponse) compose.Input {
	mems := w.GetMemories()
	in := compose.Input{
		SystemPrompt:       w.GetMysis().GetSystemPrompt(),
		Mission:            fromProtoMission(w.GetMission()),
		Window:             make([]compose.Memory, len(mems)),
		RecentStartSeq:     w.GetRecentStartSeq(),
		ObjectiveSeq:       w.GetObjectiveSeq(),
		TurnTruncated:      w.GetTurnTruncated(),
		EncouragementCount: int(w.GetMysis().GetEncouragementCount()),
	}
	for i, m := range mems {
		in.Window[i] = fromProtoMemory(m)
	}
	return in
}

func fromProtoMemory(m *memoryv1.Memory) compose.Memory {
	out := compose.Memory{
		ID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(),
		Role: chatpb.FromProtoRole(m.GetRole()), Source: fromProtoSource(m.GetSource()), SenderID: m.GetSenderId(),
		Content: m.GetContent(), Reasoning: m.GetReasoning(),
		ToolCallID: m.GetToolCallId(), ToolName: m.GetToolName(),
		CallArguments: m.GetCallArgumentsJson(), CallKey: m.GetCallKey(),
	}
	out.ToolCalls = chatpb.FromProtoToolCalls(m.GetToolCalls())
	return out
}

// fromProtoMission converts the mission; a global fallback never names a memory row of this mysis.
func fromProtoMission(m *memoryv1.Mission) *compose.Mission {
	if m == nil || m.GetMemory() == nil {
		return nil
	}
	mem := m.GetMemory()
	out := &compose.Mission{MemoryID: mem.GetId(), Seq: mem.GetSeq(), Source: fromProtoSource(mem.GetSource()),
		SenderID: mem.GetSenderId(), Content: mem.GetContent()}
	if m.GetGlobalFallback() {
		out.MemoryID, out.Seq = 0, 0
	}
	return out
}

func fromProtoSource(s memoryv1.Source) compose.Source {
	switch s {
	case memoryv1.Source_SOURCE_DIRECT:
		return compose.SourceDirect
	case memoryv1.Source_SOURCE_BROADCAST:
		return compose.SourceBroadcast
	case memoryv1.Source_SOURCE_NUDGE:
		return compose.SourceNudge
	case memoryv1.Source_SOURCE_LLM:
		return compose.SourceLLM
	case memoryv1.Source_SOURCE_TOOL:
		return compose.SourceTool
	case memoryv1.Source_SOURCE_SYSTEM:
		return compose.SourceSystem
	}
	return ""
}
