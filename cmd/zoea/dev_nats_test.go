package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zoeaswarm/zoea/libs/natstest"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// hasJetStream fails the test unless url's server answers JetStream requests.
func hasJetStream(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := swarmbus.CheckJetStream(ctx, nc); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// ensureNATS checks JetStream, not just the port: Debian's nats-server package answers on 4222 without it.
func TestEnsureNATSChecksJetStream(t *testing.T) {
	ctx := context.Background()
	t.Run("with JetStream: used as it is", func(t *testing.T) {
		js := natstest.Start(t).ClientURL()
		url, note, stop, err := ensureNATS(ctx, js, t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if url != js || note != "nats: using "+js {
			t.Fatalf("got %s (%q), want %s used", url, note, js)
		}
	})
	plain := natstest.StartWithoutJetStream(t).ClientURL()
	t.Run("without JetStream at the default: the embedded server, and a sentence", func(t *testing.T) {
		url, note, stop, err := ensureNATS(ctx, plain, t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if url == plain {
			t.Fatalf("used %s, which has no JetStream", plain)
		}
		hasJetStream(t, url)
		for _, want := range []string{plain + " answers but has no JetStream", "`jetstream: enabled` in /etc/nats-server.conf", "embedded JetStream server at " + url} {
			if !strings.Contains(note, want) {
				t.Errorf("note %q does not say %q", note, want)
			}
		}
	})
	t.Run("without JetStream at a chosen URL: an error naming JetStream", func(t *testing.T) {
		_, _, _, err := ensureNATS(ctx, plain, t.TempDir(), true)
		if !errors.Is(err, swarmbus.ErrNoJetStream) || !strings.Contains(err.Error(), "ZOEA_NATS_URL") {
			t.Fatalf("got %v, want an error naming JetStream and ZOEA_NATS_URL", err)
		}
	})
	t.Run("nothing there: the embedded server", func(t *testing.T) {
		url, note, stop, err := ensureNATS(ctx, "nats://"+freeAddr(t), t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		hasJetStream(t, url)
		if !strings.Contains(note, "nothing answered at") {
			t.Errorf("note %q", note)
		}
	})
}
