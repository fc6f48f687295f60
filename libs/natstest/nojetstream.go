package natstest

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// StartWithoutJetStream runs a plain NATS server, JetStream off, on a random loopback port, as Debian's nats-server
// package starts one with its stock /etc/nats-server.conf: core NATS answers, every JetStream request gets no
// responders. Tests use it to check that each component names JetStream when it is missing.
func StartWithoutJetStream(tb testing.TB) *server.Server {
	tb.Helper()
	return serve(tb, &server.Options{Port: server.RANDOM_PORT})
}
