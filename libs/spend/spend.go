// Package spend is the one spelling of spend limits and money that the runner's configuration
// (ZOEA_SPEND_LIMITS_MYSIS, ZOEA_SPEND_LIMITS_SWARM) and the commander's CLI (`zoea limits`) share, so a limit
// written in one place reads the same in the other.
package spend

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// Parse reads "unit/window=amount" entries separated by commas — unit tokens or cost (US dollars, "$" allowed),
// window hour, day or total — e.g. "cost/day=2.00,tokens/hour=200000". Costs become billionths of a dollar. An
// amount of 0 is kept: it lifts a configured default for that window and unit. A window and unit given twice is an
// error, as is anything else the syntax does not allow; each error names the entry and says what is expected.
func Parse(s string) ([]*memoryv1.SpendLimit, error) {
	var out []*memoryv1.SpendLimit
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, val, ok := strings.Cut(entry, "=")
		unit, win, ok2 := strings.Cut(strings.TrimSpace(key), "/")
		if !ok || !ok2 {
			return nil, fmt.Errorf("limit %q: write unit/window=amount, e.g. cost/day=2.00 or tokens/hour=200000", entry)
		}
		l, err := parseOne(strings.TrimSpace(unit), strings.TrimSpace(win), strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("limit %q: %w", entry, err)
		}
		if slices.ContainsFunc(out, func(o *memoryv1.SpendLimit) bool { return o.Window == l.Window && o.Unit == l.Unit }) {
			return nil, fmt.Errorf("limit %q: %s/%s is given twice", entry, unit, win)
		}
		out = append(out, l)
	}
	return out, nil
}

func parseOne(unit, window, amount string) (*memoryv1.SpendLimit, error) {
	l := &memoryv1.SpendLimit{}
	switch strings.ToLower(window) {
	case "hour":
		l.Window = memoryv1.SpendWindow_SPEND_WINDOW_HOUR
	case "day":
		l.Window = memoryv1.SpendWindow_SPEND_WINDOW_DAY
	case "total":
		l.Window = memoryv1.SpendWindow_SPEND_WINDOW_TOTAL
	default:
		return nil, fmt.Errorf("the window must be hour, day or total, not %q", window)
	}
	switch strings.ToLower(unit) {
	case "tokens":
		n, err := strconv.ParseInt(amount, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a token count", amount)
		}
		l.Unit, l.Amount = memoryv1.SpendUnit_SPEND_UNIT_TOKENS, n
	case "cost":
		f, err := strconv.ParseFloat(strings.TrimPrefix(amount, "$"), 64)
		if err != nil || f < 0 || f > 9e9 || math.IsNaN(f) {
			return nil, fmt.Errorf("%q is not an amount in US dollars", amount)
		}
		l.Unit, l.Amount = memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS, int64(math.Round(f*1e9))
	default:
		return nil, fmt.Errorf("the unit must be tokens or cost, not %q", unit)
	}
	return l, nil
}

// Describe is how a person reads a limit: "$2.00 per day", "100000 tokens per hour", "$10.00 in total".
func Describe(l *memoryv1.SpendLimit) string {
	return DescribeParts(int32(l.GetWindow()), int32(l.GetUnit()), l.GetAmount())
}

// DescribeParts is Describe on a limit's parts, for callers that hold limits in types of their own (the runner's
// usage package): window and unit are zoea.memory.v1's SpendWindow and SpendUnit numbers.
func DescribeParts(window, unit int32, amount int64) string {
	text := strconv.FormatInt(amount, 10) + " tokens"
	if memoryv1.SpendUnit(unit) == memoryv1.SpendUnit_SPEND_UNIT_COST_NANOS {
		text = USD(amount)
	}
	switch memoryv1.SpendWindow(window) {
	case memoryv1.SpendWindow_SPEND_WINDOW_HOUR:
		return text + " per hour"
	case memoryv1.SpendWindow_SPEND_WINDOW_DAY:
		return text + " per day"
	}
	return text + " in total"
}

// USD formats billionths of a dollar with at least cents and more digits only when they matter: $0.00, $1.50,
// $0.000125.
func USD(nanos int64) string {
	s := strconv.FormatFloat(float64(nanos)/1e9, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 < 2 {
		s += strings.Repeat("0", 2-(len(s)-i-1))
	}
	return "$" + s
}
