// Package natstest runs real NATS servers with JetStream for tests: each one a nats-server process of the version
// Zoea pins (Version, see Binary), on loopback, with its own store, stopped when the test ends. Real NATS semantics,
// no shared state between tests, and no nats-server code linked into any module's tests: a module that uses
// natstest does not require github.com/nats-io/nats-server.
package natstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options say how a server runs; the zero value is a JetStream server on a free loopback port with a fresh store.
type Options struct {
	// Port is the client port; 0 takes a free one.
	Port int
	// Dir is the JetStream store directory; "" is a new temp dir of the test. Restarting on the same Dir (and Port,
	// see Server.Port) finds the data again, as a NATS pod that came back would.
	Dir string
	// NoJetStream runs core NATS only, as Debian's nats-server package does with its stock config.
	NoJetStream bool
	// SyncAlways fsyncs every JetStream write before acknowledging it (sync_interval: always), as the shipped
	// deploy/nats/nats.conf does.
	SyncAlways bool
	// Users, when set, are the only clients the server admits, each with its subject permissions, as a production
	// server with an authorization config would.
	Users []User
	// Log, when set, gets every line the server logs (notices, warnings, errors such as permission violations).
	// It is called from a goroutine of natstest's own.
	Log func(line string)
	// ConfigFile, when set, is a nats-server config file the server runs as shipped (deploy/nats/nats.conf): it is
	// copied beside natstest's own settings (ports, cluster) and included from them unchanged, and JetStream is
	// turned on from the command line (--jetstream --store_dir), as docker-compose.yml and the dev overlay do, so
	// the file's own jetstream block (sync_interval) stays in force. Users cannot be combined with it: the file
	// brings its own authorization.
	ConfigFile string
	// Env is added to the server's environment, e.g. the passwords a ConfigFile reads as $VARIABLES.
	Env []string

	// cluster is set by StartCluster.
	cluster *clusterConf
}

// Server is a running nats-server process.
type Server struct {
	opts Options
	bin  string
	cmd  *exec.Cmd
	// exited is closed once the process has exited and its log is read to the end.
	exited  chan struct{}
	waitErr error

	url, monitor string
	port         int

	mu   sync.Mutex
	tail []string // the last lines the server logged, for failure messages

	stopOnce sync.Once
}

// Start runs a JetStream-enabled server on a free loopback port, stores its data under a test temp dir and stops it
// when the test ends. Connect with srv.ClientURL().
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartWith(tb, Options{})
}

// StartDir is Start with an explicit JetStream store directory, so a test can restart a server on the same data.
func StartDir(tb testing.TB, dir string) *Server {
	tb.Helper()
	return StartWith(tb, Options{Dir: dir})
}

// StartDirPort is StartDir on a fixed port (a stopped server's srv.Port()), so clients that were connected before
// a restart find the server again, as they would find a NATS pod that came back.
func StartDirPort(tb testing.TB, dir string, port int) *Server {
	tb.Helper()
	return StartWith(tb, Options{Dir: dir, Port: port})
}

// StartWith runs a server as opts say and stops it when the test ends.
func StartWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := launch(tb, opts)
	tb.Cleanup(s.Shutdown)
	if err := s.waitReady(30 * time.Second); err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	return s
}

// ClientURL is the nats:// URL clients connect to.
func (s *Server) ClientURL() string { return s.url }

// Port is the client port, for a restart on the same address (StartDirPort).
func (s *Server) Port() int { return s.port }

// Shutdown stops the server as an orchestrator would (SIGTERM: it closes its connections and flushes its store)
// and waits until the process has exited; after 10 s it kills it. Calling it again does nothing.
func (s *Server) Shutdown() { s.stop(syscall.SIGTERM) }

// Kill stops the server abruptly (SIGKILL, as a crashed node or kill -9) and waits until the process has exited.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

func (s *Server) stop(sig syscall.Signal) {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(sig)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// launch starts the process; the caller waits for it to be ready.
func launch(tb testing.TB, o Options) *Server {
	tb.Helper()
	bin := Binary(tb)
	if o.Dir == "" && !o.NoJetStream {
		o.Dir = tb.TempDir()
	}
	run := tb.TempDir() // the config file and the ports file the server writes
	conf, err := config(o, run)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	confFile := filepath.Join(run, "natstest.conf")
	if err := os.WriteFile(confFile, conf, 0o600); err != nil {
		tb.Fatal(err)
	}
	args := []string{"-c", confFile}
	if o.ConfigFile != "" && !o.NoJetStream {
		args = append([]string{"--jetstream", "--store_dir", o.Dir}, args...)
	}
	s := &Server{opts: o, bin: bin, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	if len(o.Env) > 0 {
		s.cmd.Env = append(os.Environ(), o.Env...)
	}
	s.cmd.SysProcAttr = procAttr()
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd.Stdout = s.cmd.Stderr
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("natstest: start %s: %v", bin, err)
	}
	go func() {
		s.readLog(stderr)
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	return s
}

// config is the server's config file: JSON, which nats-server's config format accepts (with a ConfigFile, the
// JSON object's members after an include of a copy of that file). Ports given as -1 are chosen by the server, which
// writes them to the ports file in run.
func config(o Options, run string) ([]byte, error) {
	port := o.Port
	if port == 0 {
		port = -1
	}
	c := map[string]any{
		"host":           "127.0.0.1",
		"port":           port,
		"http_port":      -1, // monitoring, on the same host: readiness is its /healthz
		"ports_file_dir": run,
	}
	if !o.NoJetStream && o.ConfigFile == "" {
		js := map[string]any{"store_dir": o.Dir}
		if o.SyncAlways {
			js["sync_interval"] = "always"
		}
		c["jetstream"] = js
	}
	if o.ConfigFile != "" && len(o.Users) > 0 {
		return nil, errors.New("natstest: Users and ConfigFile exclude each other: the config file brings its own authorization")
	}
	if len(o.Users) > 0 {
		users := make([]map[string]any, len(o.Users))
		for i, u := range o.Users {
			if u.Name == "" || u.Password == "" {
				return nil, fmt.Errorf("users[%d]: Name and Password are required", i)
			}
			users[i] = map[string]any{"user": u.Name, "password": u.Password, "permissions": map[string]any{
				"publish":   permission(u.PublishAllow, u.PublishDeny),
				"subscribe": permission(u.SubscribeAllow, u.SubscribeDeny),
			}}
		}
		c["authorization"] = map[string]any{"users": users}
	}
	if cl := o.cluster; cl != nil {
		c["server_name"] = cl.name
		c["cluster"] = map[string]any{"name": cl.cluster, "host": "127.0.0.1", "port": cl.port, "routes": cl.routes}
	}
	// No HTML escaping: nats-server's parser knows no \u escapes, and subjects hold '>'.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	if o.ConfigFile == "" {
		return b.Bytes(), nil
	}
	// include takes a path relative to the including file: the copy sits beside it. The members of the object
	// above follow the include without their braces, in the config format's own syntax.
	shipped, err := os.ReadFile(o.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("ConfigFile: %w", err)
	}
	name := "included-" + filepath.Base(o.ConfigFile)
	if err := os.WriteFile(filepath.Join(run, name), shipped, 0o600); err != nil {
		return nil, err
	}
	body := bytes.TrimSpace(b.Bytes())
	body = bytes.TrimSuffix(bytes.TrimPrefix(body, []byte("{")), []byte("}"))
	return append([]byte(fmt.Sprintf("include %q\n", name)), append(body, '\n')...), nil
}

// permission is an allow/deny block with only the lists that have subjects (no list: no restriction of that kind).
func permission(allow, deny []string) map[string]any {
	p := map[string]any{}
	if len(allow) > 0 {
		p["allow"] = allow
	}
	if len(deny) > 0 {
		p["deny"] = deny
	}
	return p
}

// readLog keeps the last lines the server logs and hands each to Options.Log.
func (s *Server) readLog(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		if len(s.tail) == 40 {
			s.tail = s.tail[1:]
		}
		s.tail = append(s.tail, line)
		s.mu.Unlock()
		if s.opts.Log != nil {
			s.opts.Log(line)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (s *Server) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// waitReady waits until the server has written its ports file (all its listeners are up) and its monitoring port
// answers /healthz with 200: for JetStream, that JetStream is up and its store recovered.
func (s *Server) waitReady(within time.Duration) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no ports file yet"
	for {
		if s.url == "" {
			if err := s.readPorts(); err != nil {
				last = err.Error()
			}
		}
		if s.url != "" {
			resp, err := client.Get(s.monitor + "/healthz")
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				last = fmt.Sprintf("/healthz %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
			} else {
				last = err.Error()
			}
		}
		select {
		case <-tick.C:
		case <-s.exited:
			return fmt.Errorf("nats-server exited before it was ready (%v); its log:\n%s", s.waitErr, s.logTail())
		case <-deadline.C:
			return fmt.Errorf("nats-server not ready within %s (last: %s); its log:\n%s", within, last, s.logTail())
		}
	}
}

// readPorts reads the ports file the server writes once its listeners are up (<binary>_<pid>.ports in
// ports_file_dir), possibly while it is still being written.
func (s *Server) readPorts() error {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(s.confFile()), filepath.Base(s.bin)+"_"+strconv.Itoa(s.cmd.Process.Pid)+".ports"))
	if err != nil {
		return err
	}
	var p struct {
		Nats       []string `json:"nats"`
		Monitoring []string `json:"monitoring"`
	}
	if err := json.Unmarshal(b, &p); err != nil || len(p.Nats) == 0 || len(p.Monitoring) == 0 {
		return errors.New("ports file incomplete")
	}
	_, portStr, ok := strings.Cut(strings.TrimPrefix(p.Nats[0], "nats://"), ":")
	port, err := strconv.Atoi(portStr)
	if !ok || err != nil {
		return fmt.Errorf("ports file: client URL %q", p.Nats[0])
	}
	s.url, s.port, s.monitor = p.Nats[0], port, p.Monitoring[0]
	return nil
}

func (s *Server) confFile() string { return s.cmd.Args[len(s.cmd.Args)-1] }
