// Package memorypb converts between the runner's domain types (mysis, usage) and zoea.memory.v1 messages. It is
// the one place those conversions live: the memoryclient adapter uses it for its calls, and the adapters that carry
// memory-service messages inside other services' messages (composerclient: the relayed rows, spend and mysis of a
// compose call; natsbus: a state change event) use it too, so no adapter imports another.
package memorypb

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// FromProtoMysis converts a stored mysis.
func FromProtoMysis(m *memoryv1.Mysis) mysis.Mysis {
	return mysis.Mysis{
		ID: m.GetId(), Name: m.GetName(), Provider: m.GetProvider(), Model: m.GetModel(), Temperature: m.GetTemperature(),
		SystemPrompt: m.GetSystemPrompt(), State: FromProtoState(m.GetState()), StateReason: m.GetStateReason(),
		EncouragementCount: int(m.GetEncouragementCount()), CurrentTurn: m.GetCurrentTurn(), LastSeq: m.GetLastSeq(),
		AccountUsername: m.GetAccountUsername(), ReplyDiscarded: m.GetReplyDiscarded(), SpaceMoltEndpoint: m.GetSpacemoltEndpoint(),
	}
}

// FromProtoMemory converts a stored memory.
func FromProtoMemory(m *memoryv1.Memory) mysis.Memory {
	out := mysis.Memory{
		ID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(), Role: chatpb.FromProtoRole(m.GetRole()), Source: FromProtoSource(m.GetSource()),
		SenderID: m.GetSenderId(), Content: m.GetContent(), Reasoning: m.GetReasoning(), ToolCallID: m.GetToolCallId(),
		ToolName: m.GetToolName(), IdempotencyKey: m.GetIdempotencyKey(), CallArguments: m.GetCallArgumentsJson(),
	}
	out.ToolCalls = chatpb.FromProtoToolCalls(m.GetToolCalls())
	return out
}

// ToProtoNewMemories converts memories to append (nil for none).
func ToProtoNewMemories(ms []mysis.NewMemory) []*memoryv1.NewMemory {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*memoryv1.NewMemory, len(ms))
	for i, m := range ms {
		out[i] = ToProtoNewMemory(m)
	}
	return out
}

// ToProtoNewMemory converts one memory to append.
func ToProtoNewMemory(m mysis.NewMemory) *memoryv1.NewMemory {
	out := &memoryv1.NewMemory{
		Role: chatpb.ToProtoRole(m.Role), Source: ToProtoSource(m.Source), SenderId: m.SenderID, Content: m.Content,
		Reasoning: m.Reasoning, ToolCallId: m.ToolCallID, ToolName: m.ToolName, IdempotencyKey: m.IdempotencyKey,
		// Empty (a call without arguments) lets the memory service take them from the stored call, which holds
		// "{}" for it (see the tool calls below).
		CallArgumentsJson: m.CallArguments,

		LlmCall: ToProtoLlmCall(m.LlmCall),
	}
	for _, c := range m.ToolCalls {
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, &memoryv1.ToolCall{Id: c.ID, Name: c.Name, ArgumentsJson: args})
	}
	return out
}

// ToProtoState converts a state ("" is UNSPECIFIED).
func ToProtoState(s mysis.State) memoryv1.MysisState {
	switch s {
	case mysis.StateIdle:
		return memoryv1.MysisState_MYSIS_STATE_IDLE
	case mysis.StateRunning:
		return memoryv1.MysisState_MYSIS_STATE_RUNNING
	case mysis.StateStopped:
		return memoryv1.MysisState_MYSIS_STATE_STOPPED
	case mysis.StateErrored:
		return memoryv1.MysisState_MYSIS_STATE_ERRORED
	}
	return memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED
}

// FromProtoState converts a state.
func FromProtoState(s memoryv1.MysisState) mysis.State {
	switch s {
	case memoryv1.MysisState_MYSIS_STATE_IDLE:
		return mysis.StateIdle
	case memoryv1.MysisState_MYSIS_STATE_RUNNING:
		return mysis.StateRunning
	case memoryv1.MysisState_MYSIS_STATE_STOPPED:
		return mysis.StateStopped
	case memoryv1.MysisState_MYSIS_STATE_ERRORED:
		return mysis.StateErrored
	}
	return mysis.State(fmt.Sprintf("unknown(%d)", s))
}

// ToProtoSource converts a source.
func ToProtoSource(s mysis.Source) memoryv1.Source {
	switch s {
	case mysis.SourceDirect:
		return memoryv1.Source_SOURCE_DIRECT
	case mysis.SourceBroadcast:
		return memoryv1.Source_SOURCE_BROADCAST
	case mysis.SourceNudge:
		return memoryv1.Source_SOURCE_NUDGE
	case mysis.SourceLLM:
		return memoryv1.Source_SOURCE_LLM
	case mysis.SourceTool:
		return memoryv1.Source_SOURCE_TOOL
	case mysis.SourceSystem:
		return memoryv1.Source_SOURCE_SYSTEM
	}
	return memoryv1.Source_SOURCE_UNSPECIFIED
}

// FromProtoSource converts a source.
func FromProtoSource(s memoryv1.Source) mysis.Source {
	switch s {
	case memoryv1.Source_SOURCE_DIRECT:
		return mysis.SourceDirect
	case memoryv1.Source_SOURCE_BROADCAST:
		return mysis.SourceBroadcast
	case memoryv1.Source_SOURCE_NUDGE:
		return mysis.SourceNudge
	case memoryv1.Source_SOURCE_LLM:
		return mysis.SourceLLM
	case memoryv1.Source_SOURCE_TOOL:
		return mysis.SourceTool
	case memoryv1.Source_SOURCE_SYSTEM:
		return mysis.SourceSystem
	}
	return ""
}

// ToProtoLlmCall converts a call's accounting; nil stays nil.
func ToProtoLlmCall(c *mysis.LlmCall) *memoryv1.LlmCall {
	if c == nil {
		return nil
	}
	out := &memoryv1.LlmCall{
		CallId: c.CallID, Provider: c.Provider, Model: c.Model, PromptTokens: c.PromptTokens,
		CachedPromptTokens: c.CachedPromptTokens, CompletionTokens: c.CompletionTokens, ReasoningTokens: c.ReasoningTokens,
		ComposedTokens: c.ComposedTokens, LatencyMs: c.Latency.Milliseconds(), Retries: int32(c.Retries), Error: c.Error,
		CostNanos: c.CostNanos, Discarded: c.Discarded,
	}
	if !c.StartedAt.IsZero() {
		out.StartedAt = timestamppb.New(c.StartedAt)
	}
	return out
}

// FromProtoSpend converts GetSpend's answer (also returned with a compose window) into a snapshot.
func FromProtoSpend(resp *memoryv1.GetSpendResponse) usage.Snapshot {
	return usage.Snapshot{Own: FromProtoLimits(resp.GetLimits()), Mysis: fromProtoCounts(resp.GetMysis()), Swarm: fromProtoCounts(resp.GetSwarm())}
}

// FromProtoLimits converts limits (proto enum numbers equal the usage package's).
func FromProtoLimits(ls []*memoryv1.SpendLimit) []usage.Limit {
	out := make([]usage.Limit, len(ls))
	for i, l := range ls {
		out[i] = usage.Limit{Window: usage.Window(l.GetWindow()), Unit: usage.Unit(l.GetUnit()), Amount: l.GetAmount()}
	}
	return out
}

// ToProtoLimits converts limits.
func ToProtoLimits(ls []usage.Limit) []*memoryv1.SpendLimit {
	out := make([]*memoryv1.SpendLimit, len(ls))
	for i, l := range ls {
		out[i] = &memoryv1.SpendLimit{Window: memoryv1.SpendWindow(l.Window), Unit: memoryv1.SpendUnit(l.Unit), Amount: l.Amount}
	}
	return out
}

func fromProtoCounts(cs []*memoryv1.SpendCount) map[usage.Window]usage.Count {
	out := make(map[usage.Window]usage.Count, len(cs))
	for _, c := range cs {
		out[usage.Window(c.GetWindow())] = usage.Count{Tokens: c.GetTokens(), CostNanos: c.GetCostNanos()}
	}
	return out
}
