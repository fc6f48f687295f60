// Command bus is the Zoea bus service: broadcasts and direct messages over NATS JetStream, delivered exactly once
// into the memory service, and the swarm's event stream (zoea.bus.v1.BusService).
//
//	bus               serve (configuration from ZOEA_* variables, see services/bus/README.md)
//	bus healthcheck   exit 0 when the local server reports SERVING (container health checks)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/telemetry"
	"github.com/zoeaswarm/zoea/services/bus/internal/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bus:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := app.LoadConfig()
	if err != nil {
		return err
	}
	cmd := "serve"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	switch cmd {
	case "serve":
	case "healthcheck":
		return server.Healthcheck(ctx, cfg.Server.ListenAddr)
	default:
		return fmt.Errorf("unknown command %q (usage: bus [serve | healthcheck])", cmd)
	}

	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	stopTelemetry, err := telemetry.Setup(ctx, "bus", version, log)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer stopTelemetry()
	log.Info("bus", "version", version)
	return app.Run(ctx, cfg, app.Options{Logger: log})
}
