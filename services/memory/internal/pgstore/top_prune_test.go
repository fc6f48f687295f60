package pgstore_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// wantTop is the call log's answer to a top-by-cost query over the whole swarm: per-mysis sums in (cost desc, name)
// order, the first top.
func wantTop(t *testing.T, p *pgxpool.Pool, names map[string]string, from, to time.Time, top int) []memory.UsageRow {
	t.Helper()
	byMysis := map[string]memory.UsageTotals{}
	for k, u := range rawUsage(t, p, from, to, nil) {
		byMysis[k[0]] = addTotals(byMysis[k[0]], u)
	}
	want := byCostThenName(byMysis, names)
	if len(want) > top {
		want = want[:top]
	}
	return want
}

// byCostThenName is the per-mysis sums as rows in the order top by cost answers: cost desc, then name.
func byCostThenName(byMysis map[string]memory.UsageTotals, names map[string]string) []memory.UsageRow {
	var rows []memory.UsageRow
	for id, u := range byMysis {
		rows = append(rows, memory.UsageRow{MysisID: id, MysisName: names[id], Totals: u})
	}
	slices.SortFunc(rows, func(a, b memory.UsageRow) int {
		if a.Totals.CostNanos != b.Totals.CostNanos {
			if a.Totals.CostNanos > b.Totals.CostNanos {
				return -1
			}
			return 1
		}
		return strings.Compare(a.MysisName, b.MysisName)
	})
	return rows
}

// TestTopByCostPrunes: the threshold algorithm over the hourly and daily lists (top.go) answers exactly what the
// call log says, and stops early when a few myses spend much more than the rest (skewed) — it reads the lists
// whole or falls back to the full sum only where it must. With every mysis spending about the same (uniform, the
// adversarial case for the threshold) it stays exact; how often it falls back is logged.
func TestTopByCostPrunes(t *testing.T) {
	for _, c := range []struct {
		name   string
		skewed bool
	}{{"skewed", true}, {"uniform", false}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			var hows []pgstore.TopHow
			p, err := pgutil.Open(ctx, pgtest.New(t), "zoea-test", 10)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			if _, err := migrations.Up(ctx, p, nil); err != nil {
				t.Fatal(err)
			}
			s := newSvcStore(p, testBox(t), pgstore.WithTopTrace(func(h pgstore.TopHow) {
				mu.Lock()
				hows = append(hows, h)
				mu.Unlock()
			}))
			rng := rand.New(rand.NewPCG(32, 11))
			base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
			const hours = 72
			names := map[string]string{}
			n := 0
			for i := range 200 {
				m := mkMysis(t, s)
				names[m.ID] = m.Name
				var calls []memory.LlmCall
				heavy := c.skewed && i < 5
				for h := range hours {
					// A heavy mysis calls every hour; every other about every sixth hour.
					if !heavy && rng.IntN(6) != 0 {
						continue
					}
					n++
					cost := 1000 + rng.Int64N(100)
					if heavy {
						cost = 1_000_000 + rng.Int64N(1000)
					}
					at := base.Add(time.Duration(h)*time.Hour + time.Duration(rng.Int64N(int64(time.Hour))))
					calls = append(calls, *call(uuidN(50_000+n), at, 100, 0, 10, cost))
				}
				if len(calls) > 0 {
					if _, err := s.RecordLlmCalls(ctx, m.ID, calls); err != nil {
						t.Fatal(err)
					}
				}
			}
			type rng2 struct {
				name     string
				from, to time.Time
			}
			ranges := []rng2{
				{"all time", time.Time{}, time.Time{}},
				{"a whole day", base.Add(24 * time.Hour), base.Add(48 * time.Hour)},
				{"the last day, open", base.Add(48 * time.Hour), time.Time{}},
				{"a whole hour", base.Add(30 * time.Hour), base.Add(31 * time.Hour)},
				{"24 whole hours", base.Add(13 * time.Hour), base.Add(37 * time.Hour)},
				{"since an hour, open", base.Add(50 * time.Hour), time.Time{}},
			}
			for range 20 { // ragged ranges of 3 to 50 hours
				from := base.Add(time.Duration(rng.Int64N(int64(20 * time.Hour))))
				ranges = append(ranges, rng2{"ragged", from, from.Add(3*time.Hour + time.Duration(rng.Int64N(int64(47*time.Hour))))})
			}
			whole, deeper := 0, 0
			for _, r := range ranges {
				for _, top := range []int{1, 3, 10} {
					mu.Lock()
					hows = hows[:0]
					mu.Unlock()
					u, err := s.GetUsage(ctx, memory.UsageQuery{From: r.from, To: r.to, GroupBy: memory.GroupMysis, Top: top})
					if err != nil {
						t.Fatal(err)
					}
					want := wantTop(t, p, names, r.from, r.to, top)
					if !slices.Equal(u.Rows, want) {
						t.Fatalf("%s [%v, %v) top %d:\n got %+v\nwant %+v", r.name, r.from, r.to, top, u.Rows, want)
					}
					mu.Lock()
					if len(hows) != 1 {
						t.Fatalf("%s: traced %d rankings, want 1", r.name, len(hows))
					}
					h := hows[0]
					mu.Unlock()
					if h.Whole {
						whole++
					}
					if h.Rounds == 2 {
						deeper++
					}
					// Skewed, the five heavy myses outspend the rest in every hour: the top 1 and 3 stop at the
					// first read of the lists.
					if c.skewed && top <= 3 && (h.Whole || h.Rounds != 1) {
						t.Errorf("%s [%v, %v) top %d: %+v, want one read of the lists", r.name, r.from, r.to, top, h)
					}
					if r.name == "24 whole hours" && h.Lists != 24 {
						t.Errorf("24 whole hours: %d lists, want 24", h.Lists)
					}
				}
			}
			t.Logf("%s: of %d rankings %d read the lists deeper, %d fell back to the full sum", c.name, 3*len(ranges), deeper, whole)
			if !c.skewed && whole == 0 {
				t.Errorf("uniform spend never fell back: the threshold case this test is for was not reached")
			}
		})
	}
}
