package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/spend"
)

// series is one stacked part of an hourly chart: a mysis or a model, with a value per hour.
type series struct {
	Name   string
	Values []float64
}

const chartSeries = 6 // the largest series are drawn; the rest are summed as "others"

// hourly reads the usage of each of the hours hours before now (the current hour last), grouped by group. Hours are
// read a few at a time, in parallel.
func (s *Server) hourly(ctx context.Context, now time.Time, hours int, group memoryv1.UsageGroup) ([]*runnerv1.GetUsageResponse, error) {
	start := now.UTC().Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)
	out := make([]*runnerv1.GetUsageResponse, hours)
	errs := make([]error, hours)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range hours {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			from := start.Add(time.Duration(i) * time.Hour)
			out[i], errs[i] = s.b.Usage(ctx, from, from.Add(time.Hour), group)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stack turns hourly rows into the chartSeries largest series plus "others", by value.
func stack(hours []*runnerv1.GetUsageResponse, name func(*memoryv1.UsageRow) string, value func(*memoryv1.UsageTotals) float64) []series {
	byName := map[string][]float64{}
	totals := map[string]float64{}
	for i, h := range hours {
		for _, r := range h.GetRows() {
			n := name(r)
			if byName[n] == nil {
				byName[n] = make([]float64, len(hours))
			}
			v := value(r.GetTotals())
			byName[n][i] += v
			totals[n] += v
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if totals[a] != totals[b] {
			if totals[a] > totals[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var out []series
	for i, n := range names {
		if i < chartSeries {
			out = append(out, series{Name: n, Values: byName[n]})
			continue
		}
		if i == chartSeries {
			out = append(out, series{Name: "others", Values: make([]float64, len(hours))})
		}
		for h, v := range byName[n] {
			out[chartSeries].Values[h] += v
		}
	}
	return out
}

// topSpenders is how many myses the spend page names; the rest are one sum.
const topSpenders = 10

// spenderView is one row of the spend page's top myses by cost.
type spenderView struct {
	Mysis, Ref, Tokens, Cost string
	Share                    int // percent of the range's cost
	Others                   bool
}

// spenders turns a top-by-cost answer into rows: the top myses, then "all other myses" (the total minus them)
// when they spent or called anything.
func spenders(u *runnerv1.GetUsageResponse) []spenderView {
	total := u.GetTotal()
	share := func(cost int64) int {
		if total.GetCostNanos() == 0 {
			return 0
		}
		return int(cost * 100 / total.GetCostNanos())
	}
	var out []spenderView
	var tokens, cost, calls int64
	for _, r := range u.GetRows() {
		t := r.GetTotals()
		tk := t.GetPromptTokens() + t.GetCompletionTokens()
		tokens, cost, calls = tokens+tk, cost+t.GetCostNanos(), calls+t.GetCalls()
		out = append(out, spenderView{Mysis: present.Safe(r.GetMysisName()), Ref: r.GetMysisName(), Tokens: present.Grouped(tk),
			Cost: spend.USD(t.GetCostNanos()), Share: share(t.GetCostNanos())})
	}
	if rest := total.GetCalls() - calls; rest > 0 {
		c := total.GetCostNanos() - cost
		out = append(out, spenderView{Mysis: "all other myses", Tokens: present.Grouped(total.GetPromptTokens() + total.GetCompletionTokens() - tokens),
			Cost: spend.USD(c), Share: share(c), Others: true})
	}
	return out
}

// limitView is one spend limit of one mysis and how close the mysis is to it.
type limitView struct {
	Mysis, Ref, Limit, Spent string
	Percent                  int
	Over                     bool
}

func (s *Server) spendPage(w http.ResponseWriter, r *http.Request) {
	hours := 24
	if h, err := strconv.Atoi(r.URL.Query().Get("hours")); err == nil && h >= 1 && h <= 168 {
		hours = h
	}
	ctx, cancel := s.call(r)
	defer cancel()
	now := s.opts.Now()
	byModel, err := s.hourly(ctx, now, hours, memoryv1.UsageGroup_USAGE_GROUP_MODEL)
	if err != nil {
		s.failed(w, r, err, present.Subject{Service: "runner"})
		return
	}
	start := now.UTC().Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)
	// The top spenders of today (UTC) and of all time: each one stored list the memory service reads in cost order
	// (≤ 50 ms p99 at 10,000 myses), where a ranking over the chart's hours sums every mysis's hours (docs/BENCHMARKS.md).
	today := now.UTC().Truncate(24 * time.Hour)
	topToday, err := s.b.TopUsage(ctx, today, time.Time{}, topSpenders)
	if err != nil {
		s.failed(w, r, err, present.Subject{Service: "runner"})
		return
	}
	topAll, err := s.b.TopUsage(ctx, time.Time{}, time.Time{}, topSpenders)
	if err != nil {
		s.failed(w, r, err, present.Subject{Service: "runner"})
		return
	}
	tokens := func(t *memoryv1.UsageTotals) float64 { return float64(t.GetPromptTokens() + t.GetCompletionTokens()) }
	cost := func(t *memoryv1.UsageTotals) float64 { return float64(t.GetCostNanos()) / 1e9 }
	model := func(r *memoryv1.UsageRow) string { return present.Safe(r.GetProvider() + "/" + r.GetModel()) }
	labels := make([]string, hours)
	for i := range labels {
		labels[i] = start.Add(time.Duration(i) * time.Hour).Format("15h")
	}
	intFmt := func(v float64) string { return present.Compact(int64(v)) }
	usdFmt := func(v float64) string { return spend.USD(int64(v * 1e9)) }
	charts := []template.HTML{
		barChart("Tokens per hour by model", labels, stack(byModel, model, tokens), intFmt),
		barChart("Cost per hour by model", labels, stack(byModel, model, cost), usdFmt),
	}
	var sumTokens, sumCost int64
	for _, h := range byModel {
		sumTokens += h.GetTotal().GetPromptTokens() + h.GetTotal().GetCompletionTokens()
		sumCost += h.GetTotal().GetCostNanos()
	}
	limits, err := s.limitViews(ctx, now)
	if err != nil {
		s.failed(w, r, err, present.Subject{Service: "runner"})
		return
	}
	s.render(w, r, http.StatusOK, "spend", map[string]any{"Hours": hours, "Charts": charts, "Limits": limits, "Top": spenders(topToday), "TopAll": spenders(topAll), "TopN": topSpenders,
		"Tokens": present.Grouped(sumTokens), "Cost": spend.USD(sumCost), "From": start.Format("2006-01-02 15:04 UTC")})
}

// limitViews is every spend limit of every mysis that has one with what it spent in the limit's window: the list,
// and for the hour and day windows a by-mysis read of only the limited myses (backend.UsagePage a request).
func (s *Server) limitViews(ctx context.Context, now time.Time) ([]limitView, error) {
	list, err := s.b.List(ctx)
	if err != nil {
		return nil, err
	}
	var limited []*runnerv1.MysisStatus
	for _, st := range list {
		if len(st.GetSpendLimits()) > 0 {
			limited = append(limited, st)
		}
	}
	if len(limited) == 0 {
		return nil, nil
	}
	hourStart := now.UTC().Truncate(time.Hour)
	dayStart := time.Date(now.UTC().Year(), now.UTC().Month(), now.UTC().Day(), 0, 0, 0, 0, time.UTC)
	window := map[memoryv1.SpendWindow]map[string]*memoryv1.UsageTotals{}
	for w, from := range map[memoryv1.SpendWindow]time.Time{memoryv1.SpendWindow_SPEND_WINDOW_HOUR: hourStart, memoryv1.SpendWindow_SPEND_WINDOW_DAY: dayStart} {
		var ids []string // the myses with a limit over this window
		for _, st := range limited {
			if slices.ContainsFunc(st.GetSpendLimits(), func(l *memoryv1.SpendLimit) bool { return l.GetWindow() == w && l.GetAmount() > 0 }) {
				ids = append(ids, st.GetMysis().GetId())
			}
		}
		if len(ids) == 0 {
			continue
		}
		u, err := s.b.UsageOf(ctx, ids, from, time.Time{})
		if err != nil {
			return nil, err
		}
		window[w] = map[string]*memoryv1.UsageTotals{}
		for _, r := range u.GetRows() {
			window[w][r.GetMysisId()] = r.GetTotals()
		}
	}
	var out []limitView
	for _, st := range limited {
		m := st.GetMysis()
		for _, l := range st.GetSpendLimits() {
			if l.GetAmount() == 0 {
				continue // "no limit" for this window and unit
			}
			t := st.GetUsage()
			if w := l.GetWindow(); w != memoryv1.SpendWindow_SPEND_WINDOW_TOTAL {
				t = window[w][m.GetId()]
			}
			used := t.GetPromptTokens() + t.GetCompletionTokens()
			spent := present.Grouped(used) + " tokens"
			if l.GetUnit() == memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS {
				used = t.GetCostNanos()
				spent = spend.USD(used)
			}
			pct := int(used * 100 / l.GetAmount())
			out = append(out, limitView{Mysis: present.Safe(m.GetName()), Ref: m.GetName(), Limit: spend.Describe(l), Spent: spent,
				Percent: min(pct, 100), Over: used >= l.GetAmount()})
		}
	}
	slices.SortFunc(out, func(a, b limitView) int { return b.Percent - a.Percent })
	return out, nil
}

var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#9c755f"}

// barChart draws stacked bars, one per hour, as inline SVG with a legend and each bar's total in its title (shown on
// hover) — no script. Every text in it is escaped.
func barChart(title string, labels []string, ss []series, format func(float64) string) template.HTML {
	const w, h, left, bottom, top = 720.0, 220.0, 64.0, 24.0, 12.0
	n := len(labels)
	totals := make([]float64, n)
	peak := 0.0
	for i := range n {
		for _, s := range ss {
			totals[i] += s.Values[i]
		}
		peak = max(peak, totals[i])
	}
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<figure class="chart"><figcaption>%s</figcaption>`, esc(title))
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, w, h, esc(title))
	plotH := h - bottom - top
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="axis"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="tick" text-anchor="end">%s</text>`, left-4, top+8, esc(format(peak)))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="tick" text-anchor="end">0</text>`, left-4, h-bottom)
	slot := (w - left) / float64(max(n, 1))
	for i := range n {
		x := left + float64(i)*slot + slot*0.15
		y := h - bottom
		for k, s := range ss {
			if s.Values[i] <= 0 || peak == 0 {
				continue
			}
			bh := s.Values[i] / peak * plotH
			y -= bh
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				x, y, slot*0.7, bh, palette[k%len(palette)], esc(labels[i]), esc(s.Name), esc(format(s.Values[i])))
		}
		if n <= 24 || i%(n/12+1) == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%s</text>`, x+slot*0.35, h-6, esc(labels[i]))
		}
	}
	b.WriteString(`</svg><ul class="legend">`)
	if len(ss) == 0 {
		b.WriteString(`<li>no LLM calls in these hours</li>`)
	}
	for k, s := range ss {
		sum := 0.0
		for _, v := range s.Values {
			sum += v
		}
		fmt.Fprintf(&b, `<li><span class="swatch" data-color="%d"></span>%s — %s</li>`, k%len(palette), esc(s.Name), esc(format(sum)))
	}
	b.WriteString(`</ul></figure>`)
	return template.HTML(b.String()) // built from escaped parts above
}
