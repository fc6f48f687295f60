package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartWithoutJetStream runs a plain NATS server, JetStream off, on a random loopback port, as Debian's nats-server
// package starts one with its stock /etc/nats-server.conf: core NATS answers, every JetStream request gets no
// responders. Tests use it to check that each component names JetStream when it is missing.
func StartWithoutJetStream(tb testing.TB) *server.Server {
	tb.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
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
