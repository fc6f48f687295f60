// Command memory is the Zoea memory service: the Postgres-backed store of myses, memories, broadcasts and
// SpaceMolt accounts behind zoea.memory.v1.MemoryService. Everything but the signal context lives in internal/app.
//
//	memory [serve] [-migrate]   run the gRPC server (ZOEA_MIGRATE_ON_START=true also migrates first)
//	memory migrate              apply pending schema migrations and exit
//	memory healthcheck          exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
//
// Seeding and measuring a benchmark database is a separate tool, tools/cmd/memorybench (its own module), so the server binary carries no
// benchmark code.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/services/memory/internal/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], version)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "memory:", err)
		os.Exit(1)
	}
}
