package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
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
	bin := t.TempDir()
	buildBinary(t, bin, devNATSBinary, "./cmd/zoea/devnats")
	ensureNATSFrom := ensureNATS
	ensureNATS := func(ctx context.Context, url, store string, chosen bool) (string, string, func() error, error) {
		return ensureNATSFrom(ctx, bin, url, store, t.TempDir(), chosen)
	}
	t.Run("with JetStream: used as it is", func(t *testing.T) {
		js := natstest.Start(t).ClientURL()
		url, note, stop, err := ensureNATS(ctx, js, t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
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
		defer func() {
			if err := stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
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
	t.Run("no devnats in --bin: says to build it", func(t *testing.T) {
		_, _, _, err := ensureNATSFrom(ctx, t.TempDir(), "nats://"+freeAddr(t), t.TempDir(), t.TempDir(), false)
		if err == nil || !strings.Contains(err.Error(), "run 'make build'") {
			t.Fatalf("got %v, want the advice to run make build", err)
		}
	})
	t.Run("nothing there: the embedded server", func(t *testing.T) {
		url, note, stop, err := ensureNATS(ctx, "nats://"+freeAddr(t), t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
		hasJetStream(t, url)
		if !strings.Contains(note, "nothing answered at") {
			t.Errorf("note %q", note)
		}
	})
}

// .ci/services.sh --check (what `make dev` and `make test` run before anything else) must see that a NATS answering
// without JetStream is not enough, and say what to do; with JetStream it has nothing to say about NATS.
func TestServicesCheckNamesJetStream(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to run .ci/services.sh")
	}
	check := func(url string) (string, error) {
		port := url[strings.LastIndexByte(url, ':')+1:]
		cmd := exec.Command("bash", filepath.Join("..", "..", ".ci", "services.sh"), "--check")
		cmd.Env = append(os.Environ(), "ZOEA_NATS_PORT="+port)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := check(natstest.StartWithoutJetStream(t).ClientURL())
	if err == nil || !strings.Contains(out, "but has no JetStream, which Zoea needs") ||
		!strings.Contains(out, "/etc/nats-server.conf") || !strings.Contains(out, "systemctl disable --now nats-server") {
		t.Errorf("--check against a NATS without JetStream: %v\n%s", err, out)
	}
	out, _ = check(natstest.Start(t).ClientURL())
	if strings.Contains(out, "JetStream") || strings.Contains(out, "NATS answers") {
		t.Errorf("--check against a NATS with JetStream complains about it:\n%s", out)
	}
	out, err = check("nats://" + freeAddr(t))
	if err == nil || !strings.Contains(out, "no NATS answers on 127.0.0.1:") {
		t.Errorf("--check with nothing listening: %v\n%s", err, out)
	}
}
