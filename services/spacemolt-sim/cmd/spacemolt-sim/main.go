// Command spacemolt-sim runs an offline SpaceMolt game server: the legacy MCP tools over Streamable HTTP at /mcp
// plus admin endpoints, on one listener. Everything but the signal context lives in internal/app.
//
//	spacemolt-sim               serve (configuration from ZOEA_* variables, see services/spacemolt-sim/README.md)
//	spacemolt-sim healthcheck   exit 0 when the local server answers /healthz (container health checks)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], version)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "spacemolt-sim:", err)
		os.Exit(1)
	}
}
