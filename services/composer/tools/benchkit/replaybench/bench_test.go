package replaybench

import "testing"

// BenchmarkReplay is the replay benchmark's `make bench` entry: five generated sessions of 300+ calls (one per
// personality) through Zoea v1 and v2, reporting v2's quality and cost next to v1's. The full six-system table on
// 40 sessions is `go run ./tools/cmd/composereplay` (docs/BENCHMARKS.md).
func BenchmarkReplay(b *testing.B) {
	var res Result
	for b.Loop() {
		var err error
		res, err = Run(Options{Sessions: 5, Seed: 1, Calls: 300, Only: "zoea", Parallel: 1})
		if err != nil {
			b.Fatal(err)
		}
	}
	var v1, v2 Stats
	for _, s := range res.Stats {
		switch s.System {
		case "Zoea v1":
			v1 = s
		case "Zoea v2":
			v2 = s
		}
	}
	b.ReportMetric(float64(res.Requests), "requests")
	b.ReportMetric(v2.MeanHist(), "v2-mean-hist-tokens")
	b.ReportMetric(v2.CoveragePct(), "v2-coverage-%")
	b.ReportMetric(v1.CoveragePct(), "v1-coverage-%")
	b.ReportMetric(float64(v2.OverBudget), "v2-over-budget")
	b.ReportMetric(float64(v2.InvalidOAI+v2.InvalidAnth), "v2-invalid")
	if v1.BilledA > 0 {
		b.ReportMetric(100*(v2.BilledA-v1.BilledA)/v1.BilledA, "v2-billed-a-vs-v1-%")
	}
}
