// Command bus is the Zoea bus service: broadcasts and direct messages over NATS JetStream, delivered exactly once
// into the memory service, and the swarm's event stream (zoea.bus.v1.BusService). Everything but the signal
// context lives in internal/app.
//
//	bus               serve (configuration from ZOEA_* variables, see services/bus/README.md)
//	bus healthcheck   exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/services/bus/internal/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], version)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bus:", err)
		os.Exit(1)
	}
}
