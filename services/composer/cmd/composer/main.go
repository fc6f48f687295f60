// Command composer is the Zoea composer service (zoea.composer.v1.ComposerService): it turns a mysis's stored
// history, fetched from the memory service in one round trip, into the small, valid, token-budgeted LLM request.
// Everything but the signal context lives in internal/app.
//
//	composer               serve (configuration from ZOEA_* variables, see services/composer/README.md)
//	composer healthcheck   exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/services/composer/internal/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], version)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "composer:", err)
		os.Exit(1)
	}
}
