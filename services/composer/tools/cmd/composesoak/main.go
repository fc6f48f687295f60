// Command composesoak composes a large number of generated mysis histories (see internal/testkit/histgen) and counts how many
// requests are invalid under chatvalid.Strict or exceed their token budget. It exits non-zero if any are, so it can
// gate a release:
//
//	go run ./tools/cmd/composesoak -n 1000000 -seed 1 -workers 2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

type config struct {
	n           int
	seed        uint64
	workers     int
	determinism int // check determinism on one case in this many (0: never)
}

type counters struct {
	checked, ok, idle, unfit, invalid, overBudget, nondeterministic atomic.Int64
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 100_000, "histories to compose")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	flag.IntVar(&cfg.workers, "workers", 2, "parallel workers")
	flag.IntVar(&cfg.determinism, "determinism-every", 16, "check byte-identical output and nudge persistence on one case in N (0 = never)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "composesoak:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	if cfg.n < 0 || cfg.workers < 1 {
		return errors.New("need -n >= 0 and -workers >= 1")
	}
	tok, err := o200k.Load()
	if err != nil {
		return err
	}
	gen := histgen.NewGenerator()
	var (
		c        counters
		next     atomic.Int64
		firstErr sync.Once
		example  string
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(cfg.n) {
					return
				}
				// Each case has its own seed, so any failure can be replayed alone.
				cs := gen.Case(histgen.NewRand(cfg.seed*1_000_003 + uint64(i)))
				out, err := histgen.Check(cs, tok)
				c.checked.Add(1)
				switch out {
				case histgen.OK:
					c.ok.Add(1)
				case histgen.Idle:
					c.idle.Add(1)
				case histgen.Unfit:
					c.unfit.Add(1)
				case histgen.Invalid:
					c.invalid.Add(1)
				case histgen.OverBudget:
					c.overBudget.Add(1)
				}
				if err == nil && cfg.determinism > 0 && i%int64(cfg.determinism) == 0 {
					if derr := histgen.CheckDeterminism(cs); derr != nil {
						c.nondeterministic.Add(1)
						err = derr
					}
				}
				if err != nil {
					firstErr.Do(func() { example = fmt.Sprintf("case %d: %v", i, err) })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	invalid := c.invalid.Load() + c.nondeterministic.Load()
	fmt.Printf("checked=%d invalid=%d over_budget=%d\n", c.checked.Load(), invalid, c.overBudget.Load())
	fmt.Printf("ok=%d idle=%d unfit=%d nondeterministic=%d elapsed=%s rate=%.0f/s seed=%d workers=%d\n",
		c.ok.Load(), c.idle.Load(), c.unfit.Load(), c.nondeterministic.Load(), elapsed.Round(time.Millisecond),
		float64(c.checked.Load())/elapsed.Seconds(), cfg.seed, cfg.workers)
	if example != "" {
		fmt.Println("first failure:", example)
	}
	if invalid+c.overBudget.Load() > 0 {
		return fmt.Errorf("%d invalid, %d over budget", invalid, c.overBudget.Load())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}
