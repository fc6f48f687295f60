// Command memorybench is the memory service's benchmark tooling, kept out of the server binary:
//
//	memorybench seed [flags]    bulk-load synthetic SpaceMolt-like data into an EMPTY database (COPY)
//	memorybench bench [flags]   measure a seeded database (compose window, search, appends, broadcasts, size)
//	memorybench bench-search [flags]  SearchMessages by history length, query class and order, with EXPLAIN
//	memorybench recall [flags]  search recall: LoCoMo questions and planted facts, against a BM25 reference
//	memorybench explain-search [flags]  EXPLAIN every statement of one message search (-mysis NAME -q TEXT)
//	memorybench count-terms [flags]  fold queued memories into the search term counts (after a migration or a load)
//
// Both take -db (default ZOEA_DATABASE_URL); -h lists a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/services/memory/tools/benchkit"
)

const usage = "usage: memorybench seed [flags] | bench [flags] | bench-search [flags] | recall [flags] | count-terms [flags] | explain-search [flags]"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "memorybench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dbURL := os.Getenv("ZOEA_DATABASE_URL")
	if dbURL == "" {
		dbURL = "postgres://zoea:zoea@127.0.0.1:5432/zoea?sslmode=disable"
	}
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "seed":
		return benchkit.SeedMain(ctx, log, dbURL, args[1:])
	case "bench":
		return benchkit.BenchMain(ctx, log, dbURL, args[1:])
	case "bench-search":
		return benchkit.SearchBenchMain(ctx, log, dbURL, args[1:])
	case "recall":
		return benchkit.RecallMain(ctx, log, dbURL, args[1:])
	case "explain-search":
		return benchkit.ExplainSearchMain(ctx, log, dbURL, args[1:])
	case "count-terms":
		return benchkit.CountTermsMain(ctx, log, dbURL, args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(os.Stderr, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q (%s)", args[0], usage)
}
