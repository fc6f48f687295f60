package natstest

import "testing"

// StartWithoutJetStream runs a plain NATS server, JetStream off, on a free loopback port, as Debian's nats-server
// package starts one with its stock /etc/nats-server.conf: core NATS answers, every JetStream request gets no
// responders. Tests use it to check that each component names JetStream when it is missing.
func StartWithoutJetStream(tb testing.TB) *Server {
	tb.Helper()
	return StartWith(tb, Options{NoJetStream: true})
}
