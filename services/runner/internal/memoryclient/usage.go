package memoryclient

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/memorypb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// RecordCalls implements mysis.CallLog.
func (c *Client) RecordCalls(ctx context.Context, id string, calls []mysis.LlmCall) error {
	req := &memoryv1.RecordLlmCallsRequest{MysisId: id, Calls: make([]*memoryv1.LlmCall, len(calls))}
	for i := range calls {
		req.Calls[i] = memorypb.ToProtoLlmCall(&calls[i])
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
	return memorypb.FromProtoSpend(resp), nil
}
