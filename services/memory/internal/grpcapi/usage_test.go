package grpcapi_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// TestUsageOverGRPC: calls travel with their memory over the wire, GetUsage pages by mysis with its token, spend
// limits round-trip, and bad input is InvalidArgument naming the field.
func TestUsageOverGRPC(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, true)
	var ids []string
	for i := range 3 {
		m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("usage-%d", i), Provider: "openai", Model: "gpt-4o-mini", SystemPrompt: "You play SpaceMolt."})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.GetMysis().GetId())
		_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: ids[i], Memories: []*memoryv1.NewMemory{{
			Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "ok",
			LlmCall: &memoryv1.LlmCall{CallId: fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i+1), Provider: "openai", Model: "gpt-4o-mini",
				PromptTokens: int64(100 * (i + 1)), CachedPromptTokens: 50, CompletionTokens: 10, CostNanos: 1000, StartedAt: timestamppb.Now()},
		}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	req := &memoryv1.GetUsageRequest{MysisIds: ids, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageSize: 2}
	for {
		resp, err := c.GetUsage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetTotal().GetPromptTokens() != 600 || resp.GetTotal().GetCachedPromptTokens() != 150 || resp.GetTotal().GetCostNanos() != 3000 {
			t.Fatalf("total %+v", resp.GetTotal())
		}
		for _, r := range resp.GetRows() {
			names = append(names, r.GetMysisName())
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if fmt.Sprint(names) != "[usage-0 usage-1 usage-2]" {
		t.Fatalf("pages %v", names)
	}

	set, err := c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: ids[0], Limits: []*memoryv1.SpendLimit{
		{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS, Amount: 2e9}}})
	if err != nil || len(set.GetLimits()) != 1 {
		t.Fatalf("set limits %v %v", set, err)
	}
	sp, err := c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: ids[0]})
	if err != nil || len(sp.GetLimits()) != 1 || sp.GetMysis()[1].GetTokens() != 110 || sp.GetSwarm()[2].GetTokens() != 630 {
		t.Fatalf("spend %v %v", sp, err)
	}

	_, err = c.GetUsage(ctx, &memoryv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MODEL, PageToken: req.GetPageToken() + "x"})
	wantCode(t, err, codes.InvalidArgument, "page_token")
	_, err = c.GetUsage(ctx, &memoryv1.GetUsageRequest{GroupBy: 7})
	wantCode(t, err, codes.InvalidArgument, "group_by")
	_, err = c.GetUsage(ctx, &memoryv1.GetUsageRequest{MysisIds: []string{"nope"}})
	wantCode(t, err, codes.InvalidArgument, "mysis_ids[0]")
	_, err = c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: ids[0], Calls: []*memoryv1.LlmCall{{CallId: "00000000-0000-4000-8000-000000000099"}}})
	wantCode(t, err, codes.InvalidArgument, "calls[0].provider")
	_, err = c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: ids[0], Limits: []*memoryv1.SpendLimit{{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Amount: 1}}})
	wantCode(t, err, codes.InvalidArgument, "limits[0].unit")
}
