// Command runner runs mysis actors (turn loop, tools, LLM providers) for the myses whose leases this replica holds,
// and serves SwarmService, the commander's admin API. `runner healthcheck` asks a running runner's gRPC health.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/telemetry"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
)

var version = "dev"

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := app.LoadConfig()
	if err != nil {
		return err
	}
	if len(args) > 0 {
		switch args[0] {
		case "healthcheck":
			return server.Healthcheck(ctx, cfg.Server.ListenAddr)
		default:
			return fmt.Errorf("unknown subcommand %q (want: healthcheck)", args[0])
		}
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	config.Log(log, "runner configuration", cfg)
	stopTelemetry, err := telemetry.Setup(ctx, "runner", version, log)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer stopTelemetry()
	return app.Run(ctx, cfg, app.Options{Logger: log})
}
