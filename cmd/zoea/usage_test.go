package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

func TestUsageRangeAndTable(t *testing.T) {
	now := time.Date(2026, 11, 23, 22, 30, 0, 0, time.UTC)
	f, to, err := usageRange(now, 0, true, "", "")
	if err != nil || !f.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) || !to.IsZero() {
		t.Fatalf("--today: %v %v %v", f, to, err)
	}
	if _, _, err := usageRange(now, time.Hour, true, "", ""); err == nil {
		t.Fatal("--since with --today accepted")
	}
	if _, _, err := usageRange(now, 0, false, "yesterday", ""); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Fatalf("bad --from: %v", err)
	}
	var b bytes.Buffer
	printUsage(&b, "mysis", &runnerv1.GetUsageResponse{
		Rows:  []*memoryv1.UsageRow{{MysisName: "miner-1", Totals: &memoryv1.UsageTotals{Calls: 2, PromptTokens: 2006, CachedPromptTokens: 1920, CompletionTokens: 300, CostNanos: 336_900, LatencyMs: 300}}},
		Total: &memoryv1.UsageTotals{Calls: 2, PromptTokens: 2006, CostNanos: 336_900, LatencyMs: 300},
	}, false)
	printUsage(&b, "model", &runnerv1.GetUsageResponse{
		Rows:  []*memoryv1.UsageRow{{Provider: "autopilot", Model: "autopilot", Totals: &memoryv1.UsageTotals{Calls: 40, LatencyMs: 3}}},
		Total: &memoryv1.UsageTotals{Calls: 40, LatencyMs: 3},
	}, false)
	out := b.String()
	for _, want := range []string{"MYSIS", "miner-1", "2,006", "1,920", "$0.000337", "150ms", "TOTAL", "autopilot/autopilot", "<1ms"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestUsageTopShowsTheOthersAsOneLine: with --top the table ends with the myses not shown (the total minus the
// rows) before the total.
func TestUsageTopShowsTheOthersAsOneLine(t *testing.T) {
	var b bytes.Buffer
	printUsage(&b, "mysis", &runnerv1.GetUsageResponse{
		Rows:  []*memoryv1.UsageRow{{MysisName: "miner-1", Totals: &memoryv1.UsageTotals{Calls: 2, PromptTokens: 2000, CostNanos: 3_000_000_000}}},
		Total: &memoryv1.UsageTotals{Calls: 7, PromptTokens: 9000, CostNanos: 4_500_000_000},
	}, true)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "OTHERS") || !strings.Contains(lines[2], "7,000") ||
		!strings.Contains(lines[2], "$1.50") || !strings.Contains(lines[3], "TOTAL") {
		t.Fatalf("top table:\n%s", b.String())
	}
}
