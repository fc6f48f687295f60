// Command devnats is the JetStream server `zoea dev` falls back on when the machine's NATS has no JetStream or
// nothing answers: nats-server embedded in a process of its own, so the zoea CLI itself does not link nats-server
// (deploy TestCLILinksNoServerCode). `make build` builds it into bin/ beside the services; zoea dev starts it as a
// child, reads the address it listens on from its first line of output, and stops it after the services.
//
//	devnats -store DIR [-listen 127.0.0.1:0]
//
// Once it accepts connections it prints one line on stdout, "ready nats://127.0.0.1:PORT"; its log goes to stderr.
// It stops on SIGTERM or SIGINT, and when its standard input closes: zoea dev holds the other end of that pipe, so a
// launcher killed with SIGKILL takes its embedded server with it, as it did when the server ran inside it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "devnats:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends or stdin reaches its end.
func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("devnats", flag.ContinueOnError)
	store := fs.String("store", "", "JetStream store directory (required; zoea dev uses <state-dir>/nats)")
	listen := fs.String("listen", "127.0.0.1:0", "host:port to listen on (port 0: any free port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *store == "" {
		return errors.New("-store is required")
	}
	host, port, err := splitListen(*listen)
	if err != nil {
		return err
	}
	// SyncAlways: fsync before acknowledging, as every shipped NATS config does (docs/OPERATIONS.md "NATS"), so an
	// acknowledged broadcast survives the machine losing power, not just the process dying. NoSigs: this process
	// handles its signals itself, to shut the server down the one way below.
	srv, err := server.NewServer(&server.Options{Host: host, Port: port, JetStream: true, StoreDir: *store,
		SyncAlways: true, NoSigs: true, Logtime: true})
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	srv.ConfigureLogger()
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		return errors.New("the NATS server did not accept connections within 10s")
	}
	if _, err := fmt.Fprintln(stdout, "ready", srv.ClientURL()); err != nil {
		return err
	}
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin) // returns when the launcher's end of the pipe closes
		close(closed)
	}()
	select {
	case <-ctx.Done():
	case <-closed:
	}
	return nil
}

// splitListen parses host:port; port 0 becomes the server's "any free port".
func splitListen(listen string) (string, int, error) {
	host, ps, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("-listen %q: %w", listen, err)
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("-listen %q: the port must be a number from 0 to 65535", listen)
	}
	if p == 0 {
		p = server.RANDOM_PORT
	}
	return host, p, nil
}
