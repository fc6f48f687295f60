// Command zoea is the commander's CLI: it manages myses, broadcasts missions, sends direct messages, searches
// memories, previews composed context, watches events, and (`zoea dev`) runs a whole local swarm on one machine.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
)

var version = "dev"

func main() {
	// SIGHUP too: closing the terminal must stop `zoea dev` and, through it, its services.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err := newRoot(version).ExecuteContext(ctx)
	stop()
	var code exitCode
	if errors.As(err, &code) {
		os.Exit(int(code)) // the console's child process has said why
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zoea:", present.Safe(err.Error())) // an error may quote a model's text
		os.Exit(1)
	}
}
