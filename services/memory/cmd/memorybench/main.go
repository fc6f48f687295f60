// Command memorybench seeds and measures a benchmark database for the memory service. It is benchmark tooling,
// kept out of the server binary (cmd/memory):
//
//	memorybench seed  -db URL [flags]   bulk-load synthetic SpaceMolt-like data into an EMPTY database (COPY)
//	memorybench bench -db URL [flags]   measure a seeded database (compose window, append, search, size)
//
// -db defaults to ZOEA_DATABASE_URL.
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

	"github.com/zoeaswarm/zoea/services/memory/internal/bench"
)

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
	if len(args) == 0 {
		return errors.New("usage: memorybench seed|bench [flags]")
	}
	switch args[0] {
	case "seed":
		return bench.SeedMain(ctx, log, dbURL, args[1:])
	case "bench":
		return bench.BenchMain(ctx, log, dbURL, args[1:])
	}
	return fmt.Errorf("unknown command %q (seed, bench)", args[0])
}
