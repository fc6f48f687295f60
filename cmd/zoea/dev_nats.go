package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// devNATSBinary is the embedded JetStream server's program in --bin (cmd/zoea/devnats, built by make build): a
// process of its own, so that this CLI does not link nats-server.
const devNATSBinary = "devnats"

// ensureNATS returns a JetStream-enabled NATS URL: the configured one, or the embedded server's, which it starts from
// bin (its store in storeDir, its log in logDir/nats.log). note says which and why; stop stops the embedded server
// (nothing when the machine's NATS is used). A NATS that answers without JetStream (Debian's nats-server package,
// whose stock /etc/nats-server.conf sets only host and port) cannot carry the swarm: at the default URL zoea dev falls
// back to the embedded server and says how to enable JetStream there; a URL the user chose (--nats-url,
// ZOEA_NATS_URL) is not second-guessed, it is an error that says the same.
func ensureNATS(ctx context.Context, bin, natsURL, storeDir, logDir string, chosen bool) (url, note string, stop func() error, err error) {
	nc, err := nats.Connect(natsURL, nats.Timeout(time.Second), nats.MaxReconnects(0))
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = swarmbus.CheckJetStream(cctx, nc)
		cancel()
		nc.Close()
		switch {
		case err == nil:
			return natsURL, "nats: using " + natsURL, func() error { return nil }, nil
		case !errors.Is(err, swarmbus.ErrNoJetStream):
			return "", "", nil, fmt.Errorf("nats at %s: %w", natsURL, err)
		case chosen:
			return "", "", nil, fmt.Errorf("nats at %s: %w; or unset ZOEA_NATS_URL/--nats-url to use an embedded server", natsURL, err)
		}
		note = fmt.Sprintf("nats: %s answers but has no JetStream, which Zoea needs (to use it: `jetstream: enabled` in "+
			"/etc/nats-server.conf, then restart it); started an embedded JetStream server at %%s", natsURL)
	} else {
		note = fmt.Sprintf("nats: nothing answered at %s; started an embedded JetStream server at %%s", natsURL)
	}
	child, err := startDevNATS(ctx, bin, storeDir, logDir)
	if err != nil {
		return "", "", nil, err
	}
	return child.url, fmt.Sprintf(note, child.url), child.stop, nil
}

// devNATS is the embedded JetStream server running as a child of zoea dev.
type devNATS struct {
	url  string
	cmd  *exec.Cmd
	done chan error
	// stdin is the write end of the child's standard input, held open for the child's whole life and never written:
	// the child stops when it closes, which the kernel does when this process dies, however it dies. It must stay
	// referenced here: an unreferenced *os.File is closed by its finalizer.
	stdin io.WriteCloser
	log   string
}

// startDevNATS starts bin/devnats and waits for the line that says where it listens.
func startDevNATS(ctx context.Context, bin, storeDir, logDir string) (*devNATS, error) {
	path := filepath.Join(bin, devNATSBinary)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("the embedded NATS server needs %s, which is missing: run 'make build' (or 'make dev', which builds first)", path)
	}
	logPath := filepath.Join(logDir, "nats.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	cmd := exec.Command(path, "-store", storeDir)
	cmd.Stderr = logFile
	// Its own process group, like the services: the terminal's Ctrl-C reaches only zoea, which stops it last.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	d := &devNATS{cmd: cmd, done: make(chan error, 1), stdin: stdin, log: logPath}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // Wait waits for stdout's copy to end
		d.done <- cmd.Wait()
	}()
	select {
	case d.url = <-ready:
		return d, nil
	case err := <-d.done:
		return nil, fmt.Errorf("the embedded NATS server exited before it served (%v); see %s", exitReason(err), logPath)
	case <-ctx.Done():
		_ = d.stop()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		_ = d.stop()
		return nil, fmt.Errorf("the embedded NATS server did not start within 30s; see %s", logPath)
	}
}

// stop ends the embedded server with SIGTERM (it shuts JetStream down cleanly), and with SIGKILL after 20 s.
func (d *devNATS) stop() error {
	defer d.stdin.Close()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			return fmt.Errorf("the embedded NATS server ended with %v; see %s", exitReason(err), d.log)
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		return fmt.Errorf("the embedded NATS server was killed after 20s; see %s", d.log)
	}
}
