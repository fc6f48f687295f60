package app

import (
	"context"

	"github.com/zoeaswarm/zoea/libs/server"
)

// Main is the whole runner command; cmd/runner gives it a signal context and turns its error into an exit code.
//
//	runner [serve]       run actors and serve SwarmService until ctx ends
//	runner healthcheck   exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
func Main(ctx context.Context, args []string, version string) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	cmd, rest, err := server.Subcommand("runner", args, "serve", "healthcheck")
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return server.HealthcheckCommand(ctx, "runner", cfg.Server.ListenAddr, rest)
	}
	log, stop, err := server.Start(ctx, "runner", version, cfg.Server, cfg)
	if err != nil {
		return err
	}
	defer stop()
	return Run(ctx, cfg, Options{Logger: log})
}
