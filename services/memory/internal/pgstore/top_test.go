package pgstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// TestTopByCostMatchesTheCallLog: the top myses by cost over a range (GetUsage with Top) are exactly the first
// Top of the call log's per-mysis sums ordered by cost, highest first, equal costs in name order — for random
// ranges (open, hour- and day-aligned, inside one hour, across hour edges), random sets of myses and random Top.
// Costs come from a small set so that many myses tie; some myses spend nothing but make calls (they rank, at
// zero), some make no call in a range (they do not rank), and one is deleted after its calls.
func TestTopByCostMatchesTheCallLog(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	rng := rand.New(rand.NewPCG(32, 7))
	ms := make([]memory.Mysis, 14)
	names := map[string]string{}
	for i := range ms {
		ms[i] = mkMysis(t, s)
		names[ms[i].ID] = ms[i].Name
	}
	base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	span := 3 * 24 * time.Hour
	randAt := func() time.Time {
		return base.Add(time.Duration(rng.Int64N(int64(span/time.Microsecond))) * time.Microsecond)
	}
	models := []string{"gpt-4o-mini", "gpt-4.1-mini"}
	n := 0
	for batch := range 90 {
		m := ms[rng.IntN(len(ms)-1)] // the last mysis makes no call at all
		var calls []memory.LlmCall
		for range 1 + rng.IntN(5) {
			n++
			cost := int64(rng.IntN(3)) * 1000 // 0, 1000 or 2000: sums tie often
			if m.ID == ms[0].ID {
				cost = 0 // calls that cost nothing
			}
			at := randAt()
			if rng.IntN(4) == 0 {
				at = at.Truncate(time.Hour) // on an hour edge
			}
			c := *call(uuidN(20_000+n), at, rng.Int64N(5000), 0, rng.Int64N(300), cost)
			c.Model = models[rng.IntN(len(models))]
			calls = append(calls, c)
		}
		if _, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil {
			t.Fatal(err)
		}
		_ = batch
	}
	if err := s.DeleteMysis(ctx, ms[1].ID); err != nil { // its calls leave the usage with it
		t.Fatal(err)
	}
	delete(names, ms[1].ID)

	randBound := func() time.Time {
		switch rng.IntN(5) {
		case 0:
			return time.Time{}
		case 1:
			return randAt().Truncate(24 * time.Hour)
		case 2:
			return randAt().Truncate(time.Hour)
		default:
			return base.Add(-2 * time.Hour).Add(time.Duration(rng.Int64N(int64((span+4*time.Hour)/time.Microsecond))) * time.Microsecond)
		}
	}
	ties, checked := 0, 0
	for i := range 250 {
		from, to := randBound(), randBound()
		switch {
		case i%5 == 0 && !from.IsZero():
			to = from.Add(time.Duration(rng.Int64N(int64(90 * time.Minute))))
		case !from.IsZero() && !to.IsZero() && to.Before(from):
			from, to = to, from
		}
		if !from.IsZero() && !to.IsZero() && !to.After(from) {
			to = from.Add(time.Hour)
		}
		var ids []string
		if rng.IntN(3) == 0 {
			for _, m := range ms {
				if rng.IntN(2) == 0 {
					ids = append(ids, m.ID)
				}
			}
		}
		top := 1 + rng.IntN(len(ms)+2)
		raw := rawUsage(t, p, from, to, ids)
		var wantTotal memory.UsageTotals
		byMysis := map[string]memory.UsageTotals{}
		for k, u := range raw {
			wantTotal = addTotals(wantTotal, u)
			byMysis[k[0]] = addTotals(byMysis[k[0]], u)
		}
		want := byCostThenName(byMysis, names)
		for k := 1; k < len(want) && k < top; k++ {
			if want[k].Totals.CostNanos == want[k-1].Totals.CostNanos {
				ties++
			}
		}
		if len(want) > top {
			want = want[:top]
		}
		u, err := s.GetUsage(ctx, memory.UsageQuery{From: from, To: to, MysisIDs: ids, GroupBy: memory.GroupMysis, Top: top})
		if err != nil {
			t.Fatalf("range [%v, %v) ids %v top %d: %v", from, to, ids, top, err)
		}
		if u.Total != wantTotal || u.More {
			t.Fatalf("range [%v, %v) ids %v top %d: total %+v more %v, want %+v", from, to, ids, top, u.Total, u.More, wantTotal)
		}
		if len(u.Rows) != len(want) {
			t.Fatalf("range [%v, %v) ids %v top %d: %d rows, want %d\n got %+v\nwant %+v", from, to, ids, top, len(u.Rows), len(want), u.Rows, want)
		}
		for k := range want {
			if u.Rows[k] != want[k] {
				t.Fatalf("range [%v, %v) ids %v top %d: row %d\n got %+v\nwant %+v", from, to, ids, top, k, u.Rows[k], want[k])
			}
		}
		if len(want) > 1 {
			checked++
		}
	}
	if checked < 100 || ties < 50 {
		t.Fatalf("%d ranges ranked several myses, %d ties: the test checks too little", checked, ties)
	}
}

// TestTopByCostRefusesBadInput: Top is 1…100, ranks myses only, and has one page.
func TestTopByCostRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	for _, c := range []struct {
		q     memory.UsageQuery
		field string
	}{
		{memory.UsageQuery{GroupBy: memory.GroupMysis, Top: -1}, "top"},
		{memory.UsageQuery{GroupBy: memory.GroupMysis, Top: memory.MaxTop + 1}, "top"},
		{memory.UsageQuery{GroupBy: memory.GroupModel, Top: 5}, "top"},
		{memory.UsageQuery{Top: 5}, "top"},
		{memory.UsageQuery{GroupBy: memory.GroupMysis, Top: 5, AfterName: "m"}, "page_token"},
	} {
		_, err := s.GetUsage(ctx, c.q)
		wantKind(t, err, errs.Invalid, c.field)
	}
}
