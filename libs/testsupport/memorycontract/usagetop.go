package memorycontract

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
)

// testUsageTopRanks: the top myses of a selection come highest cost first, equal costs in name order, in one
// response without a next page, and the total still sums the whole selection.
func testUsageTopRanks(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	prefix := uniqueName("top")
	at := t0.Truncate(time.Hour) // at the other usage cases' time (testSpend's calls must stay the newest)
	// Costs (nanos) per mysis, as sums of calls: b and c tie, d spends nothing but calls, e makes no call.
	costs := map[string][]int64{"a": {100, 50}, "b": {300}, "c": {200, 100}, "d": {0}, "e": nil}
	ids := map[string]string{}
	var all []string
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		m := newMysis(t, c, prefix+"-"+k)
		ids[k] = m.GetId()
		all = append(all, m.GetId())
		var calls []*memoryv1.LlmCall
		for i, cost := range costs[k] {
			calls = append(calls, &memoryv1.LlmCall{CallId: uuid.NewString(), Provider: memoryrules.AutopilotProvider, Model: memoryrules.AutopilotProvider,
				PromptTokens: 10, CompletionTokens: 2, CostNanos: cost, StartedAt: timestamppb.New(at.Add(time.Duration(i) * time.Minute))})
		}
		if len(calls) > 0 {
			if _, err := c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: m.GetId(), Calls: calls}); err != nil {
				t.Fatalf("RecordLlmCalls: %v", err)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		from, to *timestamppb.Timestamp
		top      int32
		want     []string
	}{
		{"all time top 3", nil, nil, 3, []string{"b", "c", "a"}},
		{"all time top 10", nil, nil, 10, []string{"b", "c", "a", "d"}},
		{"range top 1", timestamppb.New(at), timestamppb.New(at.Add(time.Hour)), 1, []string{"b"}},
		{"range starting after the first calls", timestamppb.New(at.Add(time.Minute)), nil, 5, []string{"c", "a"}},
	} {
		resp, err := c.GetUsage(ctx, &memoryv1.GetUsageRequest{MysisIds: all, From: tc.from, To: tc.to,
			GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, Top: tc.top})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, r := range resp.GetRows() {
			got = append(got, r.GetMysisName()[len(prefix)+1:])
			if r.GetMysisId() != ids[r.GetMysisName()[len(prefix)+1:]] {
				t.Errorf("%s: row %s has id %s", tc.name, r.GetMysisName(), r.GetMysisId())
			}
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: rows %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: rows %v, want %v", tc.name, got, tc.want)
			}
		}
		if resp.GetNextPageToken() != "" {
			t.Errorf("%s: a top query has one page, got a next page token", tc.name)
		}
	}
	resp, err := c.GetUsage(ctx, &memoryv1.GetUsageRequest{MysisIds: all, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, Top: 1})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTotal().GetCostNanos() != 750 || resp.GetTotal().GetCalls() != 6 || resp.GetRows()[0].GetTotals().GetCostNanos() != 300 {
		t.Errorf("top 1 of all: total %v, first row %v; want the total of every selected call (750 nanos, 6 calls) and b's 300",
			resp.GetTotal(), resp.GetRows()[0].GetTotals())
	}
}

// testUsageTopRejects: top is 1…100, ranks myses only, and is one page (no page size, no page token).
func testUsageTopRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	byMysis := memoryv1.UsageGroup_USAGE_GROUP_MYSIS
	for _, tc := range []struct {
		name  string
		req   *memoryv1.GetUsageRequest
		field string
	}{
		{"negative", &memoryv1.GetUsageRequest{GroupBy: byMysis, Top: -1}, "top"},
		{"over 100", &memoryv1.GetUsageRequest{GroupBy: byMysis, Top: 101}, "top"},
		{"by model", &memoryv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MODEL, Top: 5}, "top"},
		{"no grouping", &memoryv1.GetUsageRequest{Top: 5}, "top"},
		{"with a page size", &memoryv1.GetUsageRequest{GroupBy: byMysis, Top: 5, PageSize: 10}, "page_size"},
	} {
		_, err := c.GetUsage(ctx, tc.req)
		wantInvalid(t, "GetUsage top "+tc.name, err, tc.field)
	}
}
