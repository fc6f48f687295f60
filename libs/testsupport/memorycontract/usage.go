package memorycontract

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// t0 is when the usage cases' calls started: long ago, so that no window of now counts them.
var t0 = time.Date(2001, 2, 3, 4, 30, 0, 0, time.UTC)

func llmCall(provider, model string, prompt, completion, cost int64, at time.Time) *memoryv1.LlmCall {
	return &memoryv1.LlmCall{CallId: uuid.NewString(), Provider: provider, Model: model, PromptTokens: prompt, CompletionTokens: completion,
		CostNanos: cost, LatencyMs: 100, StartedAt: timestamppb.New(at)}
}

func record(t *testing.T, c memoryv1.MemoryServiceClient, mysisID string, calls ...*memoryv1.LlmCall) int32 {
	t.Helper()
	resp, err := c.RecordLlmCalls(ctxT(t), &memoryv1.RecordLlmCallsRequest{MysisId: mysisID, Calls: calls})
	if err != nil {
		t.Fatalf("RecordLlmCalls: %v", err)
	}
	return resp.GetRecordedCount()
}

// testRecordLlmCalls: RecordLlmCalls stores calls once per call_id (a retry records nothing) and refuses bad ones
// naming the field.
func testRecordLlmCalls(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("calls"))
	a, b := llmCall("openai", "m1", 10, 2, 30, t0), &memoryv1.LlmCall{CallId: uuid.NewString(), Provider: "openai", Error: "timeout", StartedAt: timestamppb.New(t0)}
	if n := record(t, c, m.GetId(), a, b); n != 2 {
		t.Errorf("recorded %d of two new calls", n)
	}
	if n := record(t, c, m.GetId(), a, b); n != 0 {
		t.Errorf("a retry recorded %d calls, want 0", n)
	}
	if n := record(t, c, m.GetId(), b, llmCall("openai", "m1", 1, 1, 1, t0)); n != 1 {
		t.Errorf("one old and one new call recorded %d, want 1", n)
	}
	u, err := c.GetUsage(ctx, &memoryv1.GetUsageRequest{MysisIds: []string{m.GetId()}})
	if err != nil || u.GetTotal().GetCalls() != 3 || u.GetTotal().GetFailedCalls() != 1 || u.GetTotal().GetPromptTokens() != 11 {
		t.Errorf("usage after the records = %v, %v; want 3 calls, 1 failed, 11 prompt tokens", u.GetTotal(), err)
	}
	id := uuid.NewString()
	for _, tc := range []struct {
		what, field string
		calls       []*memoryv1.LlmCall
	}{
		{"no calls", "calls", nil},
		{"101 calls", "calls", make([]*memoryv1.LlmCall, 101)},
		{"a malformed call id", "calls[0].call_id", []*memoryv1.LlmCall{{CallId: "nope", Provider: "openai"}}},
		{"no provider", "calls[0].provider", []*memoryv1.LlmCall{{CallId: uuid.NewString()}}},
		{"negative prompt tokens", "calls[0].prompt_tokens", []*memoryv1.LlmCall{{CallId: uuid.NewString(), Provider: "openai", PromptTokens: -1}}},
		{"a negative cost", "calls[0].cost_nanos", []*memoryv1.LlmCall{{CallId: uuid.NewString(), Provider: "openai", CostNanos: -1}}},
		{"a call id twice", "calls[1].call_id", []*memoryv1.LlmCall{{CallId: id, Provider: "openai"}, {CallId: id, Provider: "openai"}}},
	} {
		_, err := c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: m.GetId(), Calls: tc.calls})
		wantInvalid(t, "RecordLlmCalls with "+tc.what, err, tc.field)
	}
	_, err = c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: "nope", Calls: []*memoryv1.LlmCall{a}})
	wantInvalid(t, "RecordLlmCalls with a malformed mysis id", err, "mysis_id")
	_, err = c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: uuid.NewString(), Calls: []*memoryv1.LlmCall{llmCall("openai", "m", 1, 1, 1, t0)}})
	wantCode(t, "RecordLlmCalls for an unknown mysis", err, codes.NotFound)
}

// testUsage: GetUsage sums the calls of the selected myses — recorded alone or with their assistant memory — in
// total and per mysis or per model, a page at a time, within [from, to).
func testUsage(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	prefix := uniqueName("usage")
	a, b := newMysis(t, c, prefix+"-a"), newMysis(t, c, prefix+"-b")
	record(t, c, a.GetId(), llmCall("openai", "m1", 100, 20, 500, t0), llmCall("openai", "m2", 10, 5, 50, t0.Add(time.Hour)),
		&memoryv1.LlmCall{CallId: uuid.NewString(), Provider: "openai", Model: "m1", Error: "timeout", Retries: 2, StartedAt: timestamppb.New(t0)})
	appendOK(t, c, b.GetId(), &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "ok",
		LlmCall: llmCall("ollama", "m3", 7, 3, 0, t0.Add(2*time.Hour))})
	ids := []string{a.GetId(), b.GetId()}
	usage := func(req *memoryv1.GetUsageRequest) *memoryv1.GetUsageResponse {
		t.Helper()
		resp, err := c.GetUsage(ctx, req)
		if err != nil {
			t.Fatalf("GetUsage: %v", err)
		}
		return resp
	}
	tot := usage(&memoryv1.GetUsageRequest{MysisIds: ids}).GetTotal()
	if tot.GetCalls() != 4 || tot.GetFailedCalls() != 1 || tot.GetPromptTokens() != 117 || tot.GetCompletionTokens() != 28 ||
		tot.GetCostNanos() != 550 || tot.GetRetries() != 2 || !tot.GetFirstCallAt().AsTime().Equal(t0) || !tot.GetLastCallAt().AsTime().Equal(t0.Add(2*time.Hour)) {
		t.Errorf("total = %v; want 4 calls (1 failed), 117+28 tokens, 550 nanos, 2 retries, from t0 to t0+2h", tot)
	}
	if r := usage(&memoryv1.GetUsageRequest{MysisIds: ids, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS}).GetRows(); len(r) != 2 ||
		r[0].GetMysisId() != a.GetId() || r[0].GetMysisName() != a.GetName() || r[0].GetTotals().GetCalls() != 3 ||
		r[1].GetMysisId() != b.GetId() || r[1].GetTotals().GetPromptTokens() != 7 {
		t.Errorf("per mysis = %v; want a (3 calls) then b (7 prompt tokens)", r)
	}
	var models []string
	req := &memoryv1.GetUsageRequest{MysisIds: ids, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MODEL, PageSize: 2}
	for page := 0; ; page++ {
		if page > 3 {
			t.Fatal("per-model pages never end")
		}
		resp := usage(req)
		if resp.GetTotal().GetCalls() != 4 {
			t.Errorf("page %d: total %d calls, want the whole selection's 4", page, resp.GetTotal().GetCalls())
		}
		for _, r := range resp.GetRows() {
			models = append(models, fmt.Sprintf("%s/%s:%d", r.GetProvider(), r.GetModel(), r.GetTotals().GetCalls()))
		}
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			break
		}
	}
	if fmt.Sprint(models) != "[ollama/m3:1 openai/m1:2 openai/m2:1]" {
		t.Errorf("per model, two a page = %v, want [ollama/m3:1 openai/m1:2 openai/m2:1]", models)
	}
	span := usage(&memoryv1.GetUsageRequest{MysisIds: ids, From: timestamppb.New(t0.Add(time.Minute)), To: timestamppb.New(t0.Add(2 * time.Hour))}).GetTotal()
	if span.GetCalls() != 1 || span.GetPromptTokens() != 10 {
		t.Errorf("calls in [t0+1m, t0+2h) = %v; want the one at t0+1h", span)
	}
	for _, tc := range []struct {
		what, field string
		req         *memoryv1.GetUsageRequest
	}{
		{"a malformed mysis id", "mysis_ids[1]", &memoryv1.GetUsageRequest{MysisIds: []string{a.GetId(), "nope"}}},
		{"to before from", "to", &memoryv1.GetUsageRequest{From: timestamppb.New(t0), To: timestamppb.New(t0.Add(-time.Second))}},
		{"an unknown grouping", "group_by", &memoryv1.GetUsageRequest{GroupBy: 7}},
		{"a negative page size", "page_size", &memoryv1.GetUsageRequest{PageSize: -1}},
		{"a malformed page token", "page_token", &memoryv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageToken: "not a token"}},
	} {
		_, err := c.GetUsage(ctx, tc.req)
		wantInvalid(t, "GetUsage with "+tc.what, err, tc.field)
	}
}

// testSpend: SetSpendLimits replaces a mysis's limits (answered by window, then unit); GetSpend answers them with
// the mysis's counts in the hour, the day and the total containing `at` (the swarm's counts hold the mysis's). Each
// window counts from its newest call: a call in a newer window restarts it, a late call for an older one is not
// counted in it.
func testSpend(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	// Later than any other case's calls: the swarm's counters hold each shard's newest window, so a call of another
	// case in a newer hour than this case's (another mysis in the same shard, 1 in 16) makes this case's hour the
	// older one, and the swarm's count of it falls below this mysis's own. Other cases record at t0 and at the time
	// the test runs (ReplyDiscarded, appends with an llm_call leave started_at to the service), so this case's
	// calls are a century ahead; the day and hours are t0's a day later, as the expected counts spell them.
	t0 := time.Date(t0.Year()+100, t0.Month(), t0.Day()+1, t0.Hour(), t0.Minute(), 0, 0, time.UTC)
	m := newMysis(t, c, uniqueName("spend"))
	record(t, c, m.GetId(), llmCall("openai", "m1", 100, 20, 500, t0), llmCall("openai", "m1", 20, 10, 100, t0.Add(time.Hour)))
	record(t, c, m.GetId(), llmCall("openai", "m1", 1000, 0, 9, t0)) // late: the hour has moved on, the day has not
	set, err := c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: m.GetId(), Limits: []*memoryv1.SpendLimit{
		{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS, Amount: 2000},
		{Window: memoryv1.SpendWindow_SPEND_WINDOW_HOUR, Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: 0},
	}})
	if err != nil {
		t.Fatal(err)
	}
	limits := func(ls []*memoryv1.SpendLimit) string {
		var out []string
		for _, l := range ls {
			out = append(out, fmt.Sprintf("%d/%d=%d", l.GetWindow(), l.GetUnit(), l.GetAmount()))
		}
		return fmt.Sprint(out)
	}
	if got := limits(set.GetLimits()); got != "[1/1=0 2/2=2000]" {
		t.Errorf("set limits = %s, want [1/1=0 2/2=2000] (hour tokens, then day cost)", got)
	}
	sp, err := c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: m.GetId(), At: timestamppb.New(t0.Add(70 * time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	if got := limits(sp.GetLimits()); got != "[1/1=0 2/2=2000]" {
		t.Errorf("GetSpend limits = %s", got)
	}
	counts := func(cs []*memoryv1.SpendCount) string {
		var out []string
		for _, c := range cs {
			start := "-"
			if c.Start != nil {
				start = c.GetStart().AsTime().UTC().Format("02T15:04")
			}
			out = append(out, fmt.Sprintf("%d@%s:%d/%d", c.GetWindow(), start, c.GetTokens(), c.GetCostNanos()))
		}
		return fmt.Sprint(out)
	}
	if got := counts(sp.GetMysis()); got != "[1@04T05:00:30/100 2@04T00:00:1150/609 3@-:1150/609]" {
		t.Errorf("the mysis's counts at t0+70m = %s, want [1@04T05:00:30/100 2@04T00:00:1150/609 3@-:1150/609]", got)
	}
	if sp, err := c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: m.GetId(), At: timestamppb.New(t0)}); err != nil ||
		counts(sp.GetMysis()) != "[1@04T04:00:0/0 2@04T00:00:1150/609 3@-:1150/609]" {
		t.Errorf("the mysis's counts at t0 = %s, %v; want the past hour uncounted: [1@04T04:00:0/0 2@04T00:00:1150/609 3@-:1150/609]", counts(sp.GetMysis()), err)
	}
	if len(sp.GetSwarm()) != 3 {
		t.Fatalf("swarm counts = %v, want hour, day and total", sp.GetSwarm())
	}
	for i, s := range sp.GetSwarm() {
		if my := sp.GetMysis()[i]; s.GetWindow() != my.GetWindow() || s.GetTokens() < my.GetTokens() || s.GetCostNanos() < my.GetCostNanos() {
			t.Errorf("swarm count %v does not hold the mysis's %v", s, my)
		}
	}
	if _, err := c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: m.GetId()}); err != nil {
		t.Fatal(err)
	}
	if sp, err := c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: m.GetId()}); err != nil || len(sp.GetLimits()) != 0 {
		t.Errorf("limits after setting none = %v, %v", sp.GetLimits(), err)
	}
	for _, tc := range []struct {
		what, field string
		limits      []*memoryv1.SpendLimit
	}{
		{"no window", "limits[0].window", []*memoryv1.SpendLimit{{Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: 1}}},
		{"no unit", "limits[0].unit", []*memoryv1.SpendLimit{{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Amount: 1}}},
		{"a negative amount", "limits[0].amount", []*memoryv1.SpendLimit{{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: -1}}},
		{"a window and unit twice", "limits[1].window", []*memoryv1.SpendLimit{
			{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: 1},
			{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY, Unit: memoryv1.SpendUnit_SPEND_UNIT_TOKENS, Amount: 2}}},
	} {
		_, err := c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: m.GetId(), Limits: tc.limits})
		wantInvalid(t, "SetSpendLimits with "+tc.what, err, tc.field)
	}
	_, err = c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: "nope"})
	wantInvalid(t, "SetSpendLimits with a malformed mysis id", err, "mysis_id")
	_, err = c.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: uuid.NewString()})
	wantCode(t, "SetSpendLimits for an unknown mysis", err, codes.NotFound)
	_, err = c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: "nope"})
	wantInvalid(t, "GetSpend with a malformed mysis id", err, "mysis_id")
	_, err = c.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: uuid.NewString()})
	wantCode(t, "GetSpend for an unknown mysis", err, codes.NotFound)
}
