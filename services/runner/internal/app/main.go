package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/telemetry"
)

// Main is the whole runner command; cmd/runner gives it a signal context and turns its error into an exit code.
//
//	runner [serve]       run actors and serve SwarmService until ctx ends
//	runner healthcheck   exit 0 when the local server reports SERVING (container health checks)
func Main(ctx context.Context, args []string, version string) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	if len(args) > 0 {
		switch args[0] {
		case "serve":
		case "healthcheck":
			return server.Healthcheck(ctx, cfg.Server.ListenAddr)
		default:
			return fmt.Errorf("unknown subcommand %q (want: serve, healthcheck)", args[0])
		}
	}
	log := server.NewLogger(os.Stderr, cfg.Server.LogLevel)
	slog.SetDefault(log)
	config.Log(log, "runner configuration", cfg)
	log.Info("runner", "version", version)
	stopTelemetry, err := telemetry.Setup(ctx, "runner", version, log)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer stopTelemetry()
	return Run(ctx, cfg, Options{Logger: log})
}
