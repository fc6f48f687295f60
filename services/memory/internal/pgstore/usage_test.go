package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

func call(id string, at time.Time, prompt, cached, completion, cost int64) *memory.LlmCall {
	return &memory.LlmCall{
		CallID: id, Provider: "openai", Model: "gpt-4o-mini", PromptTokens: prompt, CachedPromptTokens: cached,
		CompletionTokens: completion, ReasoningTokens: completion / 2, ComposedTokens: max(prompt-3, 0), LatencyMS: 120,
		Retries: 1, CostNanos: cost, StartedAt: at,
	}
}

func uuidN(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// TestUsageRecordedWithTheMemory: calls travel with their assistant memory; a retried append does not count a call
// twice; failed calls are recorded alone; totals, ranges, groupings and spend counters add up exactly.
func TestUsageRecordedWithTheMemory(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	a, b := mkMysis(t, s), mkMysis(t, s)
	t0 := time.Date(2026, 11, 23, 22, 10, 0, 0, time.UTC)

	asst := func(key string, c *memory.LlmCall) []memory.NewMemory {
		return []memory.NewMemory{{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "ok", IdempotencyKey: key, LlmCall: c}}
	}
	if _, err := s.AppendMemories(ctx, a.ID, []memory.NewMemory{{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMemories(ctx, a.ID, asst("k1", call(uuidN(1), t0, 1000, 600, 50, 120_000))); err != nil {
		t.Fatal(err)
	}
	// The same append retried (same key, same call id): nothing new.
	if _, err := s.AppendMemories(ctx, a.ID, asst("k1", call(uuidN(1), t0, 1000, 600, 50, 120_000))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMemories(ctx, a.ID, asst("k2", call(uuidN(2), t0.Add(30*time.Minute), 2000, 1500, 100, 240_000))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMemories(ctx, b.ID, asst("k1", call(uuidN(3), t0.Add(time.Hour), 500, 0, 20, 60_000))); err != nil {
		t.Fatal(err)
	}
	failed := *call(uuidN(4), t0.Add(time.Hour), 0, 0, 0, 0)
	failed.Error = "openai: HTTP 500: boom"
	if n, err := s.RecordLlmCalls(ctx, b.ID, []memory.LlmCall{failed}); err != nil || n != 1 {
		t.Fatalf("record failed call: %d %v", n, err)
	}
	if n, err := s.RecordLlmCalls(ctx, b.ID, []memory.LlmCall{failed}); err != nil || n != 0 {
		t.Fatalf("record failed call again: %d %v", n, err)
	}

	u, err := s.GetUsage(ctx, memory.UsageQuery{GroupBy: memory.GroupMysis})
	if err != nil {
		t.Fatal(err)
	}
	want := memory.UsageTotals{Calls: 4, FailedCalls: 1, PromptTokens: 3500, CachedPromptTokens: 2100, CompletionTokens: 170,
		ReasoningTokens: 25 + 50 + 10, ComposedTokens: 997 + 1997 + 497, LatencyMS: 480, Retries: 4, CostNanos: 420_000,
		FirstCallAt: t0, LastCallAt: t0.Add(time.Hour)}
	if u.Total != want {
		t.Fatalf("total\n got %+v\nwant %+v", u.Total, want)
	}
	if len(u.Rows) != 2 || u.Rows[0].MysisID != a.ID || u.Rows[0].Totals.Calls != 2 || u.Rows[0].Totals.CostNanos != 360_000 ||
		u.Rows[1].MysisName != b.Name || u.Rows[1].Totals.FailedCalls != 1 || u.Rows[1].Totals.PromptTokens != 500 {
		t.Fatalf("rows %+v", u.Rows)
	}

	// A time range reads the call log and must agree with the totals for the calls it covers.
	r, err := s.GetUsage(ctx, memory.UsageQuery{From: t0.Add(15 * time.Minute), To: t0.Add(time.Hour), GroupBy: memory.GroupModel})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total.Calls != 1 || r.Total.PromptTokens != 2000 || r.Total.CachedPromptTokens != 1500 || r.Total.CostNanos != 240_000 ||
		len(r.Rows) != 1 || r.Rows[0].Model != "gpt-4o-mini" || r.Rows[0].Totals != r.Total {
		t.Fatalf("range %+v", r)
	}
	all, err := s.GetUsage(ctx, memory.UsageQuery{From: t0.Add(-time.Hour), GroupBy: memory.GroupMysis})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != u.Total || len(all.Rows) != 2 || all.Rows[0] != u.Rows[0] || all.Rows[1] != u.Rows[1] {
		t.Fatalf("range over everything %+v != totals %+v", all, u)
	}

	// Paging by mysis name.
	p1, err := s.GetUsage(ctx, memory.UsageQuery{GroupBy: memory.GroupMysis, PageSize: 1})
	if err != nil || len(p1.Rows) != 1 || !p1.More {
		t.Fatalf("page 1 %+v %v", p1, err)
	}
	p2, err := s.GetUsage(ctx, memory.UsageQuery{GroupBy: memory.GroupMysis, PageSize: 1, AfterName: p1.Rows[0].MysisName})
	if err != nil || len(p2.Rows) != 1 || p2.More || p2.Rows[0].MysisID != b.ID {
		t.Fatalf("page 2 %+v %v", p2, err)
	}
	only, err := s.GetUsage(ctx, memory.UsageQuery{MysisIDs: []string{b.ID}})
	if err != nil || only.Total.Calls != 2 || only.Total.CostNanos != 60_000 {
		t.Fatalf("one mysis %+v %v", only, err)
	}

	// Spend: a's hour at t0+30m holds both its calls (22:10 and 22:40), its day too; the swarm's hour at t0+1h
	// (23:10) holds b's two calls only.
	sp, err := s.GetSpend(ctx, a.ID, t0.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	wantA := []memory.SpendCount{
		{Window: memory.WindowHour, Start: t0.Truncate(time.Hour), Tokens: 3150, CostNanos: 360_000},
		{Window: memory.WindowDay, Start: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Tokens: 3150, CostNanos: 360_000},
		{Window: memory.WindowTotal, Start: memory.TotalStart, Tokens: 3150, CostNanos: 360_000},
	}
	for i := range wantA {
		if sp.Mysis[i] != wantA[i] {
			t.Fatalf("mysis count %d: got %+v want %+v", i, sp.Mysis[i], wantA[i])
		}
	}
	sw, err := s.GetSpend(ctx, a.ID, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if sw.Mysis[0].Tokens != 0 || sw.Swarm[0].Tokens != 520 || sw.Swarm[1].Tokens != 3670 || sw.Swarm[2].CostNanos != 420_000 {
		t.Fatalf("spend at the next hour %+v", sw)
	}
	// The next day: hour and day windows restart, the total does not.
	nd, err := s.GetSpend(ctx, a.ID, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if nd.Mysis[0].Tokens != 0 || nd.Mysis[1].Tokens != 0 || nd.Mysis[2].Tokens != 3150 || nd.Swarm[1].Tokens != 0 {
		t.Fatalf("spend on the next day %+v", nd)
	}

	// Limits.
	if _, err := s.SetSpendLimits(ctx, a.ID, []memory.SpendLimit{{Window: memory.WindowDay, Unit: memory.UnitCostNanos, Amount: 2e9}, {Window: memory.WindowHour, Unit: memory.UnitTokens, Amount: 0}}); err != nil {
		t.Fatal(err)
	}
	sp, _ = s.GetSpend(ctx, a.ID, t0)
	if len(sp.Limits) != 2 || sp.Limits[0] != (memory.SpendLimit{Window: memory.WindowHour, Unit: memory.UnitTokens}) || sp.Limits[1].Amount != 2e9 {
		t.Fatalf("limits %+v", sp.Limits)
	}
	_, err = s.SetSpendLimits(ctx, uuidN(99), nil)
	wantKind(t, err, errs.NotFound, "")
	_, err = s.GetSpend(ctx, uuidN(99), t0)
	wantKind(t, err, errs.NotFound, "")

	_, err = s.RecordLlmCalls(ctx, uuidN(99), []memory.LlmCall{*call(uuidN(7), t0, 1, 0, 1, 1)})
	wantKind(t, err, errs.NotFound, "")

	// Deleting a mysis drops its history but not the swarm's spend.
	if err := s.DeleteMysis(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	after, _ := s.GetUsage(ctx, memory.UsageQuery{})
	sw2, _ := s.GetSpend(ctx, a.ID, t0.Add(time.Hour))
	if after.Total.Calls != 2 || sw2.Swarm[0].Tokens != 520 {
		t.Fatalf("after delete: usage %+v spend %+v", after.Total, sw2.Swarm)
	}
}
