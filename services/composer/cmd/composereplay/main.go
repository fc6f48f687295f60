// Command composereplay replays a generated SpaceMolt-like session (internal/replay) through four context strategies
// and prints tokens per request and how many requests each would send that fail chatvalid.Strict:
//
//	go run ./cmd/composereplay -turns 200 -seed 1
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/replay"
)

func main() {
	turns := flag.Int("turns", 200, "turns in the session")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := run(*turns, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "composereplay:", err)
		os.Exit(1)
	}
}

func run(turns int, seed uint64) error {
	s := replay.Generate(turns, seed)
	p := compose.DefaultPolicy()
	at := []int64{1, 50, 100, int64(turns)}
	stats, err := replay.Run(s, p, at)
	if err != nil {
		return err
	}
	fmt.Printf("session: %d turns, %d memories, %d requests; zoea policy: budget %d, scan window %d, result cap %d\n",
		turns, len(s.Rows), len(s.Requests), p.TokenBudget, p.ScanWindow, p.ToolResultCap)
	fmt.Printf("%-26s %10s %10s %10s %10s %8s %8s %8s %12s\n", "strategy", "turn 1", "turn 50", "turn 100",
		fmt.Sprintf("turn %d", turns), "max", "invalid", ">budget", "total")
	for _, st := range stats {
		fmt.Printf("%-26s %10.0f %10.0f %10.0f %10.0f %8d %8d %8d %12d\n", st.Name, st.MeanAtTurn[1], st.MeanAtTurn[50],
			st.MeanAtTurn[100], st.MeanAtTurn[int64(turns)], st.MaxTokens, st.Invalid, st.OverBudget, st.TotalTokens)
	}
	return nil
}
