// Command runner runs mysis actors (turn loop, tools, LLM providers) for the myses whose leases this replica holds,
// and serves SwarmService, the commander's admin API. `runner healthcheck` asks a running runner's gRPC health.
// Everything but the signal context lives in internal/app.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/services/runner/internal/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], version)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}
