package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartAuth runs a JetStream server that only admits the given users, each with its subject permissions, as a
// production server with an authorization config would. Connections without valid credentials are refused.
func StartAuth(tb testing.TB, users []*server.User) *server.Server {
	tb.Helper()
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoLog:     true,
		NoSigs:    true,
		Users:     users,
	})
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
