package swarmbus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoJetStream means the NATS server answers but JetStream is off for this connection's account. A JetStream
// API request then gets "no responders": nobody listens on $JS.API, which names neither JetStream nor the fix.
var ErrNoJetStream = errors.New("the NATS server answers but has no JetStream: enable it (`jetstream: enabled` in " +
	"its config, e.g. /etc/nats-server.conf, then restart it; or run nats-server with -js)")

// ExplainNoJetStream returns err with ErrNoJetStream's sentence in front when err is what a server without
// JetStream answers, and err unchanged otherwise.
func ExplainNoJetStream(err error) error {
	if err == nil || errors.Is(err, ErrNoJetStream) {
		return err
	}
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, nats.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrJetStreamNotEnabledForAccount) {
		return fmt.Errorf("%w (%w)", ErrNoJetStream, err)
	}
	return err
}

// CheckJetStream asks the server behind nc for its JetStream account information: nil when JetStream answers,
// an error wrapping ErrNoJetStream when it is off, or the request's own error.
func CheckJetStream(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.AccountInfo(ctx)
	return ExplainNoJetStream(err)
}
