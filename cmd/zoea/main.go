// Command zoea is the commander's CLI: it manages myses, broadcasts missions, sends direct messages, searches
// memories, previews composed context, watches events, and (`zoea dev`) runs a whole local swarm on one machine.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot(version).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zoea:", err)
		os.Exit(1)
	}
}
