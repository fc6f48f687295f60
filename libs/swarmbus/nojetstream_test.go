package swarmbus_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// lockedBuffer is a log sink the bus's goroutines may write to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A NATS without JetStream (Debian's stock /etc/nats-server.conf) answers JetStream requests with "no responders":
// Connect's retry log and its final error must name JetStream and the fix instead.
func TestConnectToNATSWithoutJetStreamNamesIt(t *testing.T) {
	srv := natstest.StartWithoutJetStream(t)
	var logs lockedBuffer
	// Connect retries until its context ends: long enough for several attempts on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := swarmbus.Connect(ctx, srv.ClientURL(), swarmbus.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !errors.Is(err, swarmbus.ErrNoJetStream) {
		t.Fatalf("Connect to a server without JetStream: got %v, want an error naming JetStream", err)
	}
	if !strings.Contains(err.Error(), "jetstream: enabled") || !strings.Contains(err.Error(), "/etc/nats-server.conf") {
		t.Errorf("the error does not say how to enable JetStream: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "has no JetStream") {
		t.Errorf("the retry log does not name JetStream:\n%s", l)
	}
}

func TestCheckJetStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		url    string
		wantJS bool
	}{
		{"with JetStream", natstest.Start(t).ClientURL(), true},
		{"without JetStream", natstest.StartWithoutJetStream(t).ClientURL(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := nats.Connect(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = swarmbus.CheckJetStream(ctx, nc)
			if tc.wantJS && err != nil {
				t.Fatalf("CheckJetStream: %v", err)
			}
			if !tc.wantJS && !errors.Is(err, swarmbus.ErrNoJetStream) {
				t.Fatalf("CheckJetStream: got %v, want ErrNoJetStream", err)
			}
		})
	}
}
