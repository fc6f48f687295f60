package natstest

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// StartAuth runs a JetStream server that only admits the given users, each with its subject permissions, as a
// production server with an authorization config would. Connections without valid credentials are refused.
func StartAuth(tb testing.TB, users []*server.User) *server.Server {
	tb.Helper()
	return run(tb, &server.Options{Port: server.RANDOM_PORT, StoreDir: tb.TempDir(), Users: users})
}
