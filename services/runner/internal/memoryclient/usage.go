package memoryclient

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

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

// RecordCalls implements mysis.CallLog.
func (c *Client) RecordCalls(ctx context.Context, id string, calls []mysis.LlmCall) error {
	req := &memoryv1.RecordLlmCallsRequest{MysisId: id, Calls: make([]*memoryv1.LlmCall, len(calls))}
	for i := range calls {
		req.Calls[i] = ToProtoLlmCall(&calls[i])
	}
	_, err := c.api.RecordLlmCalls(ctx, req)
	return server.FromStatus(err)
}

// Spend implements usage.SpendReader: the mysis's own limits and the counts of the windows containing at.
func (c *Client) Spend(ctx context.Context, id string, at time.Time) (usage.Snapshot, error) {
	resp, err := c.api.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: id, At: timestamppb.New(at)})
	if err != nil {
		return usage.Snapshot{}, server.FromStatus(err)
	}
	return FromProtoSpend(resp), nil
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
