// Command composereplay replays generated SpaceMolt play (histgen.RealPlay: realistic sessions of several model
// personalities) request by request through six context-composition systems side by side — full history, last-20,
// the seed's loop slice, the seed's turn-aware composition, Zoea v1 (frozen copy) and Zoea v2 (live compose) — and
// prints one Markdown table: history tokens, invalid requests under OpenAI and Anthropic rules, state coverage,
// mission presence, prompt-cache prefix share and billed-equivalent input tokens (tools/benchkit/replaybench):
//
//	go run ./tools/cmd/composereplay -sessions 40 -calls 300 -seed 1
//
// With -turns it runs the older single-session replay of an internal/testkit/replay session instead (strategies.go;
// docs/benchmarks/2026-11-22-context-composer.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/replay"
	"github.com/zoeaswarm/zoea/services/composer/tools/benchkit/replaybench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "composereplay:", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("composereplay", flag.ContinueOnError)
	sessions := fs.Int("sessions", 40, "generated sessions (one mysis each; personalities round robin)")
	calls := fs.Int("calls", 300, "tool calls per session at least (each session adds 0-150 more)")
	seed := fs.Uint64("seed", 1, "random seed: session i uses seed+i")
	budget := fs.Int("budget", 0, "token budget of Zoea's policy, tool definitions included (0: the default policy's)")
	only := fs.String("only", "", "run only the systems whose name contains this text")
	parallel := fs.Int("parallel", 2, "sessions replayed at once")
	byPers := fs.Bool("personalities", false, "also print state coverage, mean history tokens and billed (a) per personality")
	turns := fs.Int("turns", 0, "run the older single-session replay with this many turns instead")
	carry := fs.Int("carry-tokens", -1, "Zoea v2's policy.carry_tokens (-1: the default policy's)")
	low := fs.Int("low-water", -1, "Zoea v2's policy.low_water_tokens (-1: the default policy's)")
	high := fs.Int("high-water", -1, "Zoea v2's policy.high_water_tokens (-1: the default policy's)")
	replicas := fs.Int("replicas", 1, "also replay Zoea v2 as this many composer replicas taking turns, none passed the previous compaction")
	anatomy := fs.Bool("anatomy", false, "replay Zoea v2 only and dissect its boundary moves: what each rewrites and why")
	shape := fs.String("shape", "", "objective lengths: short (15-40 calls), long (300-1000), mixed, all (each of the three in turn); empty: the original 150-400 with the v2 tables")
	endpointV2 := fs.Bool("v2", false, "play SpaceMolt's MCP v2 endpoint: the same calls as action-dispatched tools (spacemolt, spacemolt_market, ...)")
	v3carry := fs.Int("v3-carry-tokens", -1, "Zoea v3's policy.carry_tokens (-1: the default policy's)")
	v3limit := fs.Int("v3-carry-limit", -1, "Zoea v3's policy.carry_limit (-1: the default policy's)")
	v3cache := fs.String("v3-cache", "anthropic", "the cache model Zoea v3 prices compaction with: anthropic (what billed (a) bills), openai (what (b) bills), local, none")
	diagnose := fs.Bool("diagnose", false, "replay Zoea v3 only (with -shape, -v2) and sort its misses by cause: prefix breaks within a turn (with the fewest any composer could make), state not sent, planted facts lost")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *sessions < 1:
		return errors.New("-sessions must be at least 1")
	case *calls < 1:
		return errors.New("-calls must be at least 1")
	case *budget < 0:
		return errors.New("-budget must not be negative")
	}
	if *turns > 0 {
		return legacy(*turns, *seed)
	}
	start := time.Now()
	tune := func(p *compose.Policy) {
		for _, o := range []struct {
			v   int
			dst *int
		}{{*carry, &p.CarryTokens}, {*low, &p.LowWater}, {*high, &p.HighWater}} {
			if o.v >= 0 {
				*o.dst = o.v
			}
		}
	}
	if *anatomy {
		a, err := replaybench.Anatomy(replaybench.Options{Sessions: *sessions, Calls: *calls, Seed: *seed, Budget: *budget, Tune: tune})
		if err != nil {
			return err
		}
		a.Table(os.Stdout)
		fmt.Printf("\nreplayed in %s\n", time.Since(start).Round(time.Second))
		return nil
	}
	cache, ok := compose.CacheModelNamed(*v3cache)
	if !ok {
		return fmt.Errorf("-v3-cache %q: use anthropic, openai, local or none", *v3cache)
	}
	tuneV3 := func(p *compose.Policy) {
		p.Cache = cache
		if *v3carry >= 0 {
			p.CarryTokens = *v3carry
		}
		if *v3limit >= 0 {
			p.CarryLimit = *v3limit
		}
	}
	if *diagnose {
		shapes := []histgen.Shape{histgen.Shape(*shape)}
		if *shape == "all" {
			shapes = histgen.Shapes()
		}
		for _, sh := range shapes {
			if sh != histgen.ShapeDefault && !slices.Contains(histgen.Shapes(), sh) {
				return fmt.Errorf("-shape %q: use short, long, mixed or all", *shape)
			}
			d, err := replaybench.Diagnose(replaybench.Options{Sessions: *sessions, Calls: *calls, Seed: *seed, Budget: *budget,
				TuneV3: tuneV3, Shape: sh, V2: *endpointV2})
			if err != nil {
				return err
			}
			fmt.Printf("### shape: %s\n\n", sh)
			d.Table(os.Stdout)
			fmt.Println()
		}
		fmt.Printf("replayed in %s\n", time.Since(start).Round(time.Second))
		return nil
	}
	if *shape != "" {
		shapes := []histgen.Shape{histgen.Shape(*shape)}
		if *shape == "all" {
			shapes = histgen.Shapes()
		}
		for _, sh := range shapes {
			if !slices.Contains(histgen.Shapes(), sh) {
				return fmt.Errorf("-shape %q: use short, long, mixed or all", *shape)
			}
			res, err := replaybench.Run(replaybench.Options{Sessions: *sessions, Calls: *calls, Seed: *seed, Budget: *budget, Only: *only,
				Tune: tune, TuneV3: tuneV3, Parallel: *parallel, Shape: sh, V2: *endpointV2})
			if err != nil {
				return err
			}
			fmt.Printf("### shape: %s\n\n", sh)
			res.V3Table(os.Stdout)
			fmt.Println()
			res.V3Targets(os.Stdout)
			fmt.Println()
		}
		fmt.Printf("replayed in %s\n", time.Since(start).Round(time.Second))
		return nil
	}
	res, err := replaybench.Run(replaybench.Options{Sessions: *sessions, Calls: *calls, Seed: *seed, Budget: *budget, Only: *only, Tune: tune,
		TuneV3: tuneV3, Parallel: *parallel, Replicas: *replicas, V2: *endpointV2})
	if err != nil {
		return err
	}
	res.Table(os.Stdout)
	fmt.Println()
	res.Targets(os.Stdout)
	if *byPers {
		fmt.Println("\nPer personality: state coverage · mean history tokens · billed (a) per request")
		fmt.Println()
		res.PersonalityTable(os.Stdout)
	}
	fmt.Printf("\nreplayed in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func legacy(turns int, seed uint64) error {
	s := replay.Generate(turns, seed)
	p := compose.DefaultPolicy()
	at := []int64{1, 50, 100, int64(turns)}
	stats, err := replayStrategies(s, p, at)
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
