package usage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/spend"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

func TestCost(t *testing.T) {
	p := NewPrices(DefaultPrices())
	// gpt-4o-mini: 2006 prompt of which 1920 cached, 300 completion:
	// 86×0.15 + 1920×0.075 + 300×0.60 = 12.9 + 144 + 180 = 336.9 USD per million → 336,900 nanodollars.
	if got := p.Cost("openai", "gpt-4o-mini", llm.Usage{PromptTokens: 2006, CachedPromptTokens: 1920, CompletionTokens: 300}); got != 336_900 {
		t.Fatalf("cost %d", got)
	}
	// A dated snapshot takes its family's price; a longer family wins over a shorter one.
	if a, b := p.Cost("openai", "gpt-4o-mini-2024-07-18", llm.Usage{PromptTokens: 1000}), p.Cost("openai", "gpt-4o-2024-08-06", llm.Usage{PromptTokens: 1000}); a != 150_000 || b != 2_500_000 {
		t.Fatalf("snapshots %d %d", a, b)
	}
	for _, prov := range []string{"ollama", "autopilot"} {
		if got := p.Cost(prov, "qwen3:8b", llm.Usage{PromptTokens: 1e6, CompletionTokens: 1e6}); got != 0 {
			t.Fatalf("%s costs %d", prov, got)
		}
	}
	if _, ok := p.Lookup("openai", "unknown-model"); ok {
		t.Fatal("unknown model priced")
	}
	extra, err := ParsePrices("openai/my-ft=0.30,0.15,1.20; openai/gpt-4o-mini=1,1,1")
	if err != nil {
		t.Fatal(err)
	}
	p = NewPrices(DefaultPrices(), extra)
	if got := p.Cost("openai", "gpt-4o-mini", llm.Usage{PromptTokens: 1000}); got != 1_000_000 {
		t.Fatalf("override %d", got)
	}
	for _, bad := range []string{"gpt=1,2,3", "openai/x=1,2", "openai/x=a,1,1", "openai/x=-1,1,1"} {
		if _, err := ParsePrices(bad); err == nil {
			t.Errorf("ParsePrices(%q) accepted", bad)
		}
	}
}

func TestParseLimitsAndReason(t *testing.T) {
	ls, err := ParseLimits("cost/day=2.00, tokens/hour=200000,cost/total=$10")
	if err != nil {
		t.Fatal(err)
	}
	want := []Limit{{Day, Cost, 2e9}, {Hour, Tokens, 200000}, {Total, Cost, 10e9}}
	for i := range want {
		if ls[i] != want[i] {
			t.Fatalf("limit %d: %+v", i, ls[i])
		}
	}
	now := time.Date(2026, 11, 23, 22, 41, 0, 0, time.UTC)
	if got := Reason("mysis", ls[0], now); got != "spend limit reached: $2.00 per day, resets 00:00 UTC" {
		t.Fatalf("reason %q", got)
	}
	if got := Reason("swarm", ls[1], now); got != "spend limit reached: swarm 200000 tokens per hour, resets 23:00 UTC" {
		t.Fatalf("reason %q", got)
	}
	if got := Reason("mysis", ls[2], now); got != "spend limit reached: $10.00 in total; raise the limit to resume" {
		t.Fatalf("reason %q", got)
	}
	if a, b, c := spend.USD(150), spend.USD(336_900), spend.USD(12e9); a != "$0.00" || b != "$0.000337" || c != "$12.00" {
		t.Fatalf("FormatUSD: %s %s %s", a, b, c)
	}
	for _, bad := range []string{"cost/week=1", "coins/day=1", "tokens/day=1.5", "cost/day=-1", "cost/day", "tokens/day=1,tokens/day=2"} {
		if _, err := ParseLimits(bad); err == nil {
			t.Errorf("ParseLimits(%q) accepted", bad)
		}
	}
	eff := Effective([]Limit{{Day, Cost, 2e9}, {Hour, Tokens, 100}}, []Limit{{Hour, Tokens, 0}, {Total, Tokens, 5}})
	if len(eff) != 2 || eff[0] != (Limit{Day, Cost, 2e9}) || eff[1] != (Limit{Total, Tokens, 5}) {
		t.Fatalf("effective %+v", eff)
	}
}

type snapReader Snapshot

func (s snapReader) Spend(context.Context, string, time.Time) (Snapshot, error) {
	return Snapshot(s), nil
}

func TestCheckStopsBeforeTheCallThatWouldExceed(t *testing.T) {
	now := time.Date(2026, 11, 23, 22, 41, 0, 0, time.UTC)
	m := mysis.Mysis{ID: "m", Provider: "openai", Model: "gpt-4o-mini"}
	g := NewGuard(snapReader{Mysis: map[Window]Count{Hour: {Tokens: 900}}}, Config{MysisDefaults: []Limit{{Hour, Tokens, 1000}}}, NewPrices(DefaultPrices()), func() time.Time { return now })
	if st, err := g.Check(t.Context(), m, 100); err != nil || st != nil {
		t.Fatalf("900+100 <= 1000 stopped: %+v %v", st, err)
	}
	st, err := g.Check(t.Context(), m, 101)
	if err != nil || st == nil || st.Scope != "mysis" || !st.Until.Equal(time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)) {
		t.Fatalf("900+101 > 1000 not stopped: %+v %v", st, err)
	}
	// The swarm's limit says more and is checked first.
	g = NewGuard(snapReader{Swarm: map[Window]Count{Day: {CostNanos: 5e9}}}, Config{Swarm: []Limit{{Day, Cost, 5e9}}, MysisDefaults: []Limit{{Hour, Tokens, 1}}}, NewPrices(), func() time.Time { return now })
	if st, _ := g.Check(t.Context(), m, 0); st == nil || st.Scope != "swarm" {
		t.Fatalf("swarm stop %+v", st)
	}
	// An own limit of 0 lifts the default.
	g = NewGuard(snapReader{Own: []Limit{{Hour, Tokens, 0}}, Mysis: map[Window]Count{Hour: {Tokens: 5000}}}, Config{MysisDefaults: []Limit{{Hour, Tokens, 1000}}}, NewPrices(), func() time.Time { return now })
	if st, _ := g.Check(t.Context(), m, 10); st != nil {
		t.Fatalf("lifted default still stops: %+v", st)
	}
}

// CheckCounted judges counts read with the composition exactly as Check judges its own read, as of the time they
// were counted for (the stop's window end follows it), and never calls the reader.
func TestCheckCountedJudgesTheCompositionsCounts(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC)
	m := mysis.Mysis{ID: "m", Provider: "openai", Model: "gpt-4o-mini"}
	g := NewGuard(nil, Config{MysisDefaults: []Limit{{Hour, Tokens, 1000}}}, NewPrices(DefaultPrices()), func() time.Time { return at.Add(-24 * time.Hour) })
	counts := mysis.SpendCounts{At: at, Data: Snapshot{Mysis: map[Window]Count{Hour: {Tokens: 900}}}}
	if st, err := g.CheckCounted(m, 100, counts); err != nil || st != nil {
		t.Fatalf("900+100 <= 1000 stopped: %+v %v", st, err)
	}
	st, err := g.CheckCounted(m, 101, counts)
	if err != nil || st == nil || !st.Until.Equal(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("900+101 > 1000: %+v %v, want a stop until 10:00 (the hour of the counts)", st, err)
	}
	if _, err := g.CheckCounted(m, 1, mysis.SpendCounts{At: at, Data: "counts"}); !errors.Is(err, ErrCountsForm) {
		t.Fatalf("counts of another form: %v, want ErrCountsForm", err)
	}
}
