// Package natstest starts an in-process NATS server with JetStream for tests: real NATS semantics, no shared
// state between tests, nothing to install.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start runs a JetStream-enabled server on a random loopback port, stores its data under a test temp dir and
// shuts it down when the test ends. It returns the server; use srv.ClientURL() to connect.
func Start(tb testing.TB) *server.Server {
	tb.Helper()
	return StartDir(tb, tb.TempDir())
}

// StartDir is Start with an explicit JetStream store directory, so a test can restart a server on the same data.
func StartDir(tb testing.TB, dir string) *server.Server {
	tb.Helper()
	return StartDirPort(tb, dir, server.RANDOM_PORT)
}

// StartDirPort is StartDir on a fixed port, so clients that were connected before a restart find the server again,
// as they would find a NATS pod that came back.
func StartDirPort(tb testing.TB, dir string, port int) *server.Server {
	tb.Helper()
	return run(tb, &server.Options{Port: port, StoreDir: dir})
}

// StartWith is Start with the server's options adjusted by configure before it starts (e.g. SyncAlways, to run
// as the shipped nats.conf does).
func StartWith(tb testing.TB, configure func(*server.Options)) *server.Server {
	tb.Helper()
	opts := &server.Options{Port: server.RANDOM_PORT, StoreDir: tb.TempDir()}
	configure(opts)
	return run(tb, opts)
}

// run starts an in-process JetStream server on 127.0.0.1 with opts (Port and StoreDir at least) and stops it when
// the test ends.
func run(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	opts.JetStream = true
	return serve(tb, opts)
}

// serve starts an in-process server on 127.0.0.1 with opts as given (JetStream only if opts asks for it) and stops
// it when the test ends.
func serve(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	opts.Host, opts.NoLog, opts.NoSigs = "127.0.0.1", true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		tb.Fatal("natstest: server not ready")
	}
	tb.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}
