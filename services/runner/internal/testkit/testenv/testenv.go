// Package testenv builds and starts Zoea binaries for the runner's integration and end-to-end tests: the simulator,
// memory, composer and bus are separate modules, so tests run them as processes exactly as they are deployed; the
// runner's own binary is started the same way when a test must kill a replica like a crashed pod.
package testenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/testsupport/svcbin"
)

// RepoRoot is the repository root (the directory holding the root go.mod).
func RepoRoot(tb testing.TB) string { return svcbin.RepoRoot(tb) }

// Build compiles services/<svc>/cmd/<svc> once per test process and returns the binary path (libs/testsupport/svcbin).
func Build(tb testing.TB, svc string) string { return svcbin.Build(tb, svc) }

// Available reports whether services/<svc>/cmd/<svc>/main.go exists (a colleague may not have landed it yet).
func Available(tb testing.TB, svc string) bool {
	_, err := os.Stat(filepath.Join(RepoRoot(tb), "services", svc, "cmd", svc, "main.go"))
	return err == nil
}

// Process is a started binary.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	logs strings.Builder
	grew chan struct{} // closed (and replaced) each time a line is added to logs
}

// Start runs bin with env (added to a minimal environment) and args; the process is killed when the test ends.
// Its output is kept and printed if the test fails.
func Start(tb testing.TB, name, bin string, env []string, args ...string) *Process {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(baseEnv(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &Process{Name: name, Cmd: cmd, done: make(chan struct{}), grew: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			if p.logs.Len() < 4<<20 {
				p.logs.WriteString(sc.Text())
				p.logs.WriteByte('\n')
			}
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	if err := cmd.Start(); err != nil {
		tb.Fatalf("testenv: start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.Stop(5 * time.Second)
		if tb.Failed() && os.Getenv("ZOEA_TEST_QUIET") == "" {
			tb.Logf("---- %s output (tail) ----\n%s", name, tail(p.Logs(), 6000))
		}
	})
	return p
}

// StartGRPC starts a Zoea gRPC service (memory, composer, bus, runner) listening on a port the kernel picks
// (ZOEA_LISTEN_ADDR=127.0.0.1:0) and returns it with the address it logged once listening ("grpc server
// listening", libs/server). A port chosen in advance could be taken by another test process before the service
// binds it; a port the service bound itself cannot. It fails the test when the process exits first or does not
// listen within timeout.
func StartGRPC(tb testing.TB, name, bin string, env []string, timeout time.Duration) (*Process, string) {
	tb.Helper()
	p := Start(tb, name, bin, append([]string{"ZOEA_LISTEN_ADDR=127.0.0.1:0"}, env...))
	addr, err := p.waitListening("grpc server listening", timeout)
	if err != nil {
		tb.Fatalf("testenv: %s: %v", name, err)
	}
	return p, addr
}

// waitListening waits for the process's log line with message msg ("grpc server listening", "http server
// listening") and returns its addr.
func (p *Process) waitListening(msg string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		logs, grew := p.logs.String(), p.grew
		p.mu.Unlock()
		if addr := svcbin.LoggedAddr(logs, msg); addr != "" {
			return addr, nil
		}
		select {
		case <-grew:
		case <-p.done:
			return "", fmt.Errorf("exited before listening")
		case <-deadline:
			return "", fmt.Errorf("not listening after %v", timeout)
		}
	}
}

// Logs returns the output so far.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Stop sends SIGTERM and waits up to grace before killing.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Kill kills the process at once (a crash).
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func baseEnv() []string {
	var out []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOCACHE", "GOPATH", "GOFLAGS", "GOMODCACHE"} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// WaitHTTP polls url until it answers 200 or the timeout passes.
func WaitHTTP(tb testing.TB, url string, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("testenv: %s not ready after %v", url, timeout)
}

// Sim is a running simulator.
type Sim struct {
	*Process
	Addr string
}

// MCPURL is the MCP endpoint.
func (s *Sim) MCPURL() string { return "http://" + s.Addr + "/mcp" }

// AdminURL is the admin base URL.
func (s *Sim) AdminURL() string { return "http://" + s.Addr + "/admin" }

// StartSim builds and starts the simulator with a millisecond tick and unlimited rates unless env overrides.
func StartSim(tb testing.TB, env ...string) *Sim {
	tb.Helper()
	bin := Build(tb, "spacemolt-sim")
	defaults := []string{"ZOEA_LISTEN_ADDR=127.0.0.1:0", "ZOEA_SIM_TICK=5ms", "ZOEA_SIM_MUTATIONS_PER_MIN=-1",
		"ZOEA_SIM_READS_PER_MIN=-1", "ZOEA_SIM_CHAT_PER_MIN=-1", "ZOEA_SIM_AUTH_PER_MIN=-1"}
	p := Start(tb, "spacemolt-sim", bin, append(defaults, env...))
	addr, err := p.waitListening("http server listening", 20*time.Second)
	if err != nil {
		tb.Fatalf("testenv: spacemolt-sim: %v", err)
	}
	WaitHTTP(tb, "http://"+addr+"/healthz", 20*time.Second)
	return &Sim{Process: p, Addr: addr}
}

// WaitTCP waits until addr accepts connections.
func WaitTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
