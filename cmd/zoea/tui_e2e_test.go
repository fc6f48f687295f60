package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/libs/testsupport/svcbin"
)

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitLogged waits until the log at path has the JSON line with message msg that names the address p listens on,
// and returns it. The log is another process's, written as it starts, so it is read again every 20 ms.
func waitLogged(p *proc, path, msg string) (string, error) {
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		logs, _ := os.ReadFile(path)
		if addr := svcbin.LoggedAddr(string(logs), msg); addr != "" {
			return addr, nil
		}
		select {
		case exitErr := <-p.done:
			p.done <- exitErr
			return "", fmt.Errorf("exited: %v", exitErr)
		case <-deadline:
			return "", fmt.Errorf("no %q line after 60s", msg)
		case <-tick.C:
		}
	}
}

// localSwarm builds every binary and starts the services on ports they pick against a fresh database and the local
// NATS, the way `zoea dev` does on its fixed ports.
type localSwarm struct {
	bin                 string
	runner, bus, memory string
	procs               []*proc
	logDir              string
	clients             *clients
	ep                  *endpoints
}

// startLocalSwarm starts the swarm; env entries (KEY=value) override its environment, e.g. a provider's address.
func startLocalSwarm(t testing.TB, env ...string) *localSwarm {
	t.Helper()
	s := &localSwarm{bin: t.TempDir(), logDir: t.TempDir()}
	for _, svc := range []string{"memory", "composer", "runner", "bus", "spacemolt-sim"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(s.bin, svc), "./cmd/"+svc)
		cmd.Dir = filepath.Join("..", "..", "services", svc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", svc, err, out)
		}
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(s.bin, "zoea"), ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build zoea: %v\n%s", err, out)
	}
	base := append(os.Environ(),
		"ZOEA_DATABASE_URL="+pgtest.New(t),
		// Its own JetStream: on the machine's NATS a running make dev would share the broadcast delivery consumer.
		"ZOEA_NATS_URL="+natstest.Start(t).ClientURL(),
		"ZOEA_SIM_TICK=200ms", "ZOEA_TURN_PAUSE=200ms", "ZOEA_DEFAULT_PROVIDER=autopilot", "ZOEA_ADMIN_TOKEN=",
		"OLLAMA_HOST=http://"+freeAddr(t), "OPENAI_API_KEY=", "OPENAI_BASE_URL=", // no Ollama there, no OpenAI key
		"ZOEA_SECRET_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	)
	base = append(base, env...) // later entries win
	migrate := exec.Command(filepath.Join(s.bin, "memory"), "migrate")
	migrate.Env = base
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		var out strings.Builder
		stopAll(s.procs, &out)
		t.Log(out.String())
	})
	// Each service binds a port the kernel picks and logs it (svcbin.LoggedAddr): a port picked here and freed could
	// be taken by another test before the service binds it. The later services are told the earlier ones' addresses.
	ctx := context.Background()
	for _, svc := range []string{"memory", "composer", "spacemolt-sim", "bus", "runner"} {
		p, err := startProc(s.bin, svc, "", append(base, "ZOEA_LISTEN_ADDR=127.0.0.1:0"), s.logDir, false)
		if err != nil {
			t.Fatal(err)
		}
		s.procs = append(s.procs, p)
		logPath := filepath.Join(s.logDir, svc+".log")
		fail := func(what string, err error) {
			logs, _ := os.ReadFile(logPath)
			t.Fatalf("%s %s: %v\n%s", svc, what, err, tail(string(logs), 2000))
		}
		msg := "grpc server listening"
		if svc == "spacemolt-sim" {
			msg = "http server listening"
		}
		if p.addr, err = waitLogged(p, logPath, msg); err != nil {
			fail("did not listen", err)
		}
		if err := waitHealthy(ctx, p, p.addr); err != nil {
			fail("did not become healthy", err)
		}
		switch svc {
		case "memory":
			s.memory = p.addr
			base = append(base, "ZOEA_MEMORY_ADDR="+p.addr)
		case "composer":
			base = append(base, "ZOEA_COMPOSER_ADDR="+p.addr)
		case "spacemolt-sim":
			base = append(base, "ZOEA_SPACEMOLT_URL=http://"+p.addr+"/mcp", "ZOEA_SPACEMOLT_AUTH_PER_MIN=-1")
		case "bus":
			s.bus = p.addr
			base = append(base, "ZOEA_BUS_ADDR="+p.addr)
		case "runner":
			s.runner = p.addr
		}
	}
	s.ep = &endpoints{runner: s.runner, bus: s.bus, memory: s.memory, timeout: 10 * time.Second}
	c, err := s.ep.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s.clients = c
	return s
}

// tmuxConsole is `zoea tui` running in a detached tmux session, read with capture-pane.
type tmuxConsole struct {
	t       *testing.T
	socket  string
	session string
}

func (c *tmuxConsole) tmux(args ...string) string {
	c.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", c.socket}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (c *tmuxConsole) screen() string { return c.tmux("capture-pane", "-p", "-t", c.session) }

func (c *tmuxConsole) keys(keys ...string) {
	c.tmux(append([]string{"send-keys", "-t", c.session}, keys...)...)
}

func (c *tmuxConsole) text(s string) { c.tmux("send-keys", "-t", c.session, "-l", s) }

// waitFor reads the screen until cond holds; the console is another process, so its screen is the only signal.
func (c *tmuxConsole) waitFor(what string, within time.Duration, cond func(screen string) bool) string {
	c.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		s := c.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("console never showed %s within %s; screen:\n%s", what, within, s)
		}
		<-tick.C
	}
}

// The console's three views, each told apart by text only it shows: the preview's messages may quote anything (its
// reasons say "recent history"), so a view is recognised by its own header and the absence of the others'.
func focusView(s string) bool {
	return strings.Contains(s, "last action:") && strings.Contains(s, "recent history") && !strings.Contains(s, "context preview of")
}

func previewView(s string) bool {
	return strings.Contains(s, "context preview of") && !strings.Contains(s, "last action:")
}

func tableView(s string) bool {
	return strings.Contains(s, "LAST ACTION") && !strings.Contains(s, "last action:") && !strings.Contains(s, "context preview of")
}

func (c *tmuxConsole) waitText(text string, within time.Duration) string {
	c.t.Helper()
	return c.waitFor(fmt.Sprintf("%q", text), within, func(s string) bool { return strings.Contains(s, text) })
}

// TestConsoleCommandsALocalSwarm drives the real zoea binary in tmux against a real local swarm: create a mysis with
// n, broadcast with b, watch it act, preview with p, stop with s, delete with d and confirm.
func TestConsoleCommandsALocalSwarm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service and runs a swarm")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed, and this test drives the console in it: apt-get install -y tmux (.ci/services.sh installs it)")
	}
	s := startLocalSwarm(t)
	c := &tmuxConsole{t: t, socket: fmt.Sprintf("zoea-e2e-%d", os.Getpid()), session: "console"}
	c.tmux("new-session", "-d", "-s", c.session, "-x", "160", "-y", "40",
		fmt.Sprintf("%s tui --runner %s --bus %s --memory %s; echo console-exited-$?; sleep 60",
			filepath.Join(s.bin, "zoea"), s.runner, s.bus, s.memory))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", c.socket, "kill-server").Run() })

	c.waitText("No myses yet", 30*time.Second)

	// n: create scout-1 with the autopilot provider; the console starts it.
	c.keys("n")
	c.waitText("Create a mysis", 30*time.Second)
	c.text("scout-1")
	c.keys("Tab")
	c.text("autopilot")
	c.keys("Enter")
	c.waitText("created scout-1", 20*time.Second)

	// b: the mission reaches the one mysis there is.
	c.keys("b")
	c.waitText("Broadcast to every mysis", 30*time.Second)
	c.text("Mine ore at main_belt in sol and sell it at sol_central.")
	c.keys("Enter")
	c.waitText("broadcast delivered to 1 myses", 20*time.Second)

	// Watch it act: the focus view fills with tool calls from the event stream, and its history with rows.
	c.keys("Enter")
	c.waitFor("the focus view", 10*time.Second, focusView)
	toolLine := regexp.MustCompile(`\d\d:\d\d:\d\d  tool \w+ \(\d+ ms\)`)
	c.waitFor("a tool call event", 60*time.Second, func(s string) bool { return toolLine.MatchString(s) })
	c.waitText("tool/tool", 30*time.Second)

	// p: the context preview explains each message.
	c.keys("p")
	c.waitText("context preview of scout-1", 20*time.Second)
	scr := c.waitFor("the preview's reasons", 20*time.Second, func(s string) bool { return previewView(s) && strings.Contains(s, "why:") })
	if !strings.Contains(scr, "[0] system") || !strings.Contains(scr, "why: system prompt") {
		t.Fatalf("preview without its reasons:\n%s", scr)
	}
	// One key per screen change: two escapes read together are one alt+esc, which the console ignores.
	c.keys("Escape")
	c.waitFor("the focus view again", 10*time.Second, focusView)
	c.keys("Escape")
	c.waitFor("the swarm table", 10*time.Second, tableView)

	// s: stop; the state column follows.
	c.keys("s")
	c.waitText("stopped scout-1", 20*time.Second)
	rowStopped := regexp.MustCompile(`scout-1\s+stopped`)
	c.waitFor("scout-1 stopped in the table", 30*time.Second, func(s string) bool { return rowStopped.MatchString(s) })

	// d: asks first, then deletes.
	c.keys("d")
	c.waitText("This cannot be undone", 30*time.Second)
	c.keys("y")
	c.waitText("deleted scout-1", 20*time.Second)
	c.waitText("No myses yet", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.clients.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: "scout-1"}); status.Code(err) != codes.NotFound {
		t.Fatalf("scout-1 still exists after the console deleted it: %v", err)
	}

	// q quits cleanly.
	c.keys("q")
	c.waitText("console-exited-0", 30*time.Second)

	s.cliSaysSentences(t)
}

// cliSaysSentences runs the one-shot commands against the same swarm, as a new user would.
func (s *localSwarm) cliSaysSentences(t *testing.T) {
	zoea := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(s.bin, "zoea"), append([]string{"--runner", s.runner, "--bus", s.bus, "--memory", s.memory}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ok := func(args ...string) string {
		t.Helper()
		out, err := zoea("", args...)
		if err != nil {
			t.Fatalf("zoea %v: %v\n%s", args, err, out)
		}
		return out
	}
	fails := func(want string, stdin string, args ...string) {
		t.Helper()
		out, err := zoea(stdin, args...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("zoea %v: want an error saying %q, got %v:\n%s", args, want, err, out)
		}
		for _, leak := range []string{"rpc error", "SQLSTATE", "code ="} {
			if strings.Contains(out, leak) {
				t.Errorf("zoea %v leaks %q:\n%s", args, leak, out)
			}
		}
	}
	ok("create", "scout-2")
	fails("zoea: a mysis named scout-2 already exists", "", "create", "scout-2")
	fails("zoea: no mysis named scuot-2 (did you mean scout-2?)", "", "get", "scuot-2")
	fails("zoea: no mysis named scuot-2 (did you mean scout-2?)", "", "watch", "--mysis", "scuot-2")
	fails(`--model: autopilot is Zoea's offline policy and runs no model, so model "foo" would be ignored`, "", "configure", "scout-2", "--model", "foo")
	fails("provider ollama is not reachable at http://", "", "configure", "scout-2", "--provider", "ollama")
	fails("provider openai needs an API key: set OPENAI_API_KEY", "", "create", "gpt-1", "--provider", "openai")
	if out := ok("broadcast", "first order"); !strings.Contains(out, "delivered to 1 myses") {
		t.Errorf("broadcast to one mysis: %s", out)
	}
	ok("create", "scout-3")
	if out := ok("broadcast", "second order"); !strings.Contains(out, "delivered to 2 myses") {
		t.Errorf("broadcast right after a second mysis was created: %s", out)
	}
	s.followAndWatchByName(t, "scout-3")
	get := ok("get", "scout-2")
	if !strings.Contains(get, "system prompt:") || !strings.Contains(get, "--json shows it all") || len(get) > 2000 {
		t.Errorf("get should summarise the system prompt:\n%s", get)
	}
	if list := ok("list"); !strings.Contains(list, "LAST ERROR") {
		t.Errorf("list has no error column:\n%s", list)
	}
	fails("no answer on stdin: nothing deleted (pass --yes", "", "delete", "scout-2")
	fails("not deleted: scout-2 is kept", "n\n", "delete", "scout-2")
	if out := ok("delete", "scout-2", "--yes"); !strings.Contains(out, "deleted scout-2") {
		t.Errorf("delete --yes: %s", out)
	}
}

// followAndWatchByName starts `history --follow` and `watch --mysis NAME`, sends the mysis an order and waits for
// both to print it: the row under its history label, the event under the mysis's name.
func (s *localSwarm) followAndWatchByName(t *testing.T, name string) {
	start := func(args ...string) <-chan string {
		cmd := exec.Command(filepath.Join(s.bin, "zoea"), append([]string{"--runner", s.runner, "--bus", s.bus, "--memory", s.memory}, args...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		return lines
	}
	// Both print something before the order goes out (history its rows, watch the mysis's own events), which shows
	// they are subscribed.
	follow := start("history", name, "--follow", "--limit", "1")
	watch := start("watch", "--mysis", name)
	await := func(what string, lines <-chan string, match func(string) bool) {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case l, open := <-lines:
				if !open {
					t.Fatalf("%s ended before printing it", what)
				}
				if match(l) {
					return
				}
			case <-timeout:
				t.Fatalf("%s never printed it", what)
			}
		}
	}
	await("history --follow", follow, func(l string) bool { return strings.HasPrefix(l, "seq ") })
	await("watch --mysis "+name, watch, func(l string) bool { return strings.Contains(l, name) })
	marker := "follow-marker-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command(filepath.Join(s.bin, "zoea"), "--runner", s.runner, "--bus", s.bus, "--memory", s.memory, "send", name, marker)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	await("history --follow", follow, func(l string) bool { return strings.Contains(l, marker) })
	await("watch --mysis "+name, watch, func(l string) bool {
		return strings.Contains(l, " "+name+" ") && strings.Contains(l, marker) && !strings.Contains(l, "mysis_id")
	})
}

// Not a terminal: the console says so and exits instead of drawing into a pipe.
func TestConsoleRefusesAPipe(t *testing.T) {
	var out strings.Builder
	root := newRoot("test")
	root.SetOut(&out)
	root.SetArgs([]string{"tui"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "zoea tui needs a terminal, and stdout is not one") {
		t.Fatalf("got %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("drew into a pipe: %q", out.String())
	}
}
