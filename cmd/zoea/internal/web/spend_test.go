package web

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// spending is the scripted swarm with usage: one mysis with a day cost limit, the top spenders, and a record of
// every usage request the spend page makes.
type spending struct {
	*scripted
	mu     sync.Mutex
	tops   []int32
	froms  []time.Time
	byIDs  [][]string
	hourly int
}

func (s *spending) Usage(_ context.Context, from, to time.Time, group memoryv1.UsageGroup) (*runnerv1.GetUsageResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if group == memoryv1.UsageGroup_USAGE_GROUP_MYSIS {
		return nil, context.Canceled // the spend page never pages through every mysis
	}
	s.hourly++
	return &runnerv1.GetUsageResponse{Total: &memoryv1.UsageTotals{}}, nil
}

func (s *spending) TopUsage(_ context.Context, from, to time.Time, n int32) (*runnerv1.GetUsageResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tops, s.froms = append(s.tops, n), append(s.froms, from)
	row := func(name string, cost int64) *memoryv1.UsageRow {
		return &memoryv1.UsageRow{MysisId: "id-" + name, MysisName: name, Totals: &memoryv1.UsageTotals{Calls: 2, PromptTokens: 100, CostNanos: cost}}
	}
	return &runnerv1.GetUsageResponse{
		Total: &memoryv1.UsageTotals{Calls: 10, PromptTokens: 1000, CostNanos: 4_000_000_000},
		Rows:  []*memoryv1.UsageRow{row("scout-1", 2_000_000_000), row("miner-2", 1_000_000_000)},
	}, nil
}

func (s *spending) UsageOf(_ context.Context, myses []string, from, to time.Time) (*runnerv1.GetUsageResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byIDs = append(s.byIDs, myses)
	out := &runnerv1.GetUsageResponse{}
	for _, id := range myses {
		out.Rows = append(out.Rows, &memoryv1.UsageRow{MysisId: id, Totals: &memoryv1.UsageTotals{CostNanos: 1_500_000_000}})
	}
	return out, nil
}

// TestSpendPageAsksTheTopSpendersOnceAndOnlyLimitedMyses: the spend page reads the top myses by cost of today and
// of all time in one request each (one stored list each for the memory service) and shows the rest as one sum (the
// total minus them), and reads the windows of only the myses with a limit — never a page through every mysis.
func TestSpendPageAsksTheTopSpendersOnceAndOnlyLimitedMyses(t *testing.T) {
	b := &spending{scripted: newScripted()}
	b.myses[1].SpendLimits = []*memoryv1.SpendLimit{{Window: memoryv1.SpendWindow_SPEND_WINDOW_DAY,
		Unit: memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS, Amount: 2_000_000_000}}
	c := startConsole(t, b)
	c.login(testToken)
	dayBefore := time.Now().UTC().Truncate(24 * time.Hour)
	code, body := c.get("/spend?hours=6")
	dayAfter := time.Now().UTC().Truncate(24 * time.Hour) // the same day unless the request crossed midnight
	if code != 200 {
		t.Fatalf("spend page: %d %s", code, body)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.tops) != 2 || b.tops[0] != topSpenders || b.tops[1] != topSpenders {
		t.Errorf("top spenders asked %v, want two requests for %d", b.tops, topSpenders)
	} else if (!b.froms[0].Equal(dayBefore) && !b.froms[0].Equal(dayAfter)) || !b.froms[1].IsZero() {
		t.Errorf("top spenders asked from %v, want today (%v) and all time", b.froms, dayAfter)
	}
	if len(b.byIDs) != 1 || len(b.byIDs[0]) != 1 || b.byIDs[0][0] != "id-miner-2" {
		t.Errorf("limit windows asked for %v, want only the limited mysis's day", b.byIDs)
	}
	if b.hourly != 6 {
		t.Errorf("hourly by-model reads: %d, want 6", b.hourly)
	}
	for _, table := range []string{`id="top-table"`, `id="top-all-table"`} {
		top := body[strings.Index(body, table):]
		top = top[:strings.Index(top, "</table>")]
		for _, want := range []string{"scout-1", "$2.00", "50%", "miner-2", "25%", "all other myses", "800"} {
			if !strings.Contains(top, want) {
				t.Errorf("%s lacks %q:\n%s", table, want, top)
			}
		}
	}
	if !strings.Contains(body, "75%") { // miner-2 spent $1.50 of its $2.00 a day
		t.Errorf("limits lack miner-2 at 75%%:\n%s", body)
	}
}
