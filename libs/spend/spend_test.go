package spend_test

import (
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/spend"
)

func TestParse(t *testing.T) {
	ls, err := spend.Parse(" cost/day=$2.00, tokens/HOUR=200000,cost/total=0 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		w memoryv1.SpendWindow
		u memoryv1.SpendUnit
		a int64
	}{
		{memoryv1.SpendWindow_SPEND_WINDOW_DAY, memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS, 2_000_000_000},
		{memoryv1.SpendWindow_SPEND_WINDOW_HOUR, memoryv1.SpendUnit_SPEND_UNIT_TOKENS, 200_000},
		{memoryv1.SpendWindow_SPEND_WINDOW_TOTAL, memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS, 0},
	}
	if len(ls) != len(want) {
		t.Fatalf("got %d limits, want %d", len(ls), len(want))
	}
	for i, w := range want {
		if ls[i].GetWindow() != w.w || ls[i].GetUnit() != w.u || ls[i].GetAmount() != w.a {
			t.Errorf("limit %d = %v, want %v", i, ls[i], w)
		}
	}
	if ls, err := spend.Parse(""); err != nil || len(ls) != 0 {
		t.Errorf("empty: %v, %v", ls, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, bad := range []string{"cost=2", "cost/week=2", "dollars/day=2", "tokens/day=-1", "tokens/day=1.5",
		"cost/day=abc", "cost/day=NaN", "cost/day=1e12", "cost/day=1,cost/day=2"} {
		if _, err := spend.Parse(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestUSD(t *testing.T) {
	for nanos, want := range map[int64]string{0: "$0.00", 1_500_000_000: "$1.50", 125_000: "$0.000125", 2_000_000_000: "$2.00", 12_345_670_000: "$12.34567"} {
		if got := spend.USD(nanos); got != want {
			t.Errorf("USD(%d) = %q, want %q", nanos, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	ls, err := spend.Parse("cost/day=2.00,tokens/hour=200000,cost/total=0.000125")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"$2.00 per day", "200000 tokens per hour", "$0.000125 in total"}
	for i, l := range ls {
		if got := spend.Describe(l); got != want[i] {
			t.Errorf("Describe(%v) = %q, want %q", l, got, want[i])
		}
	}
}
