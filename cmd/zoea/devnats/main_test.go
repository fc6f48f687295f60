package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// started runs devnats in the test process and returns the URL from its ready line and a channel with run's result.
func started(t *testing.T, ctx context.Context, stdin io.Reader) (string, <-chan error) {
	t.Helper()
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-store", t.TempDir()}, stdin, w); w.Close() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (run: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok || !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("ready line %q, want \"ready nats://127.0.0.1:PORT\"", line)
	}
	return url, done
}

// The server it reports serves JetStream, and it stops when the launcher's end of stdin closes (a launcher killed
// with SIGKILL) as well as on a signal (ctx).
func TestServesJetStreamUntilStdinClosesOrASignal(t *testing.T) {
	stdin, launcher := io.Pipe()
	url, done := started(t, context.Background(), stdin)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := swarmbus.CheckJetStream(ctx, nc); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	nc.Close()
	launcher.Close()
	if err := <-done; err != nil {
		t.Fatalf("after stdin closed: %v", err)
	}

	sig, stop := context.WithCancel(context.Background())
	keep, _ := io.Pipe() // never closed: only the signal stops it
	_, done = started(t, sig, keep)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("after the signal: %v", err)
	}
}

func TestRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-store is required"},
		{[]string{"-store", t.TempDir(), "-listen", "127.0.0.1:x"}, "the port must be a number"},
		{[]string{"-store", t.TempDir(), "-listen", "nowhere"}, `-listen "nowhere"`},
	} {
		err := run(context.Background(), c.args, strings.NewReader(""), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %q: %v, want %q", c.args, err, c.want)
		}
	}
}
