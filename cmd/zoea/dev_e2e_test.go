package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	zserver "github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

// buildServices builds every service binary and devnats (and the zoea CLI when withCLI) into a temporary directory.
func buildServices(t *testing.T, withCLI bool) string {
	t.Helper()
	bin := t.TempDir()
	for _, svc := range []string{"memory", "composer", "runner", "bus", "spacemolt-sim"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, svc), "./cmd/"+svc)
		cmd.Dir = filepath.Join("..", "..", "services", svc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", svc, err, out)
		}
	}
	buildBinary(t, bin, devNATSBinary, "./cmd/zoea/devnats") // the embedded JetStream fallback, which these tests use
	if withCLI {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "zoea"), ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build zoea: %v\n%s", err, out)
		}
	}
	t.Logf("built the services into %s", bin)
	return bin
}

// milestones copies zoea dev's output into a buffer and reports its milestones (not the per-second table) with
// t.Log, so a long run shows where it is.
type milestones struct {
	t       *testing.T
	mu      sync.Mutex
	buf     bytes.Buffer
	tag     string
	changed chan struct{} // signalled (never blocking) after each write, for waitFor
}

func (m *milestones) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buf.Write(p)
	select {
	case m.changed <- struct{}{}:
	default:
	}
	for _, line := range strings.Split(string(p), "\n") {
		for _, k := range []string{"postgres:", "nats:", "serving on", "swarm:", "stopped", "earned credits", "fresh:", "memory: schema", "started again"} {
			if strings.Contains(line, k) {
				m.t.Logf("%s %s", m.tag, line)
				break
			}
		}
	}
	return len(p), nil
}

func (m *milestones) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buf.String()
}

// composedTurns is the turns the myses of a swarm have finished, summed, as its runner reports them.
func composedTurns(ctx context.Context, t *testing.T, c *clients) int64 {
	t.Helper()
	list, err := c.swarm.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: 100})
	if err != nil {
		t.Fatalf("list myses: %v", err)
	}
	var n int64
	for _, m := range list.GetMyses() {
		n += m.GetTurns()
	}
	return n
}

// waitFor waits until the output holds text, failing the test after within.
func (m *milestones) waitFor(text string, within time.Duration) {
	m.t.Helper()
	deadline := time.After(within)
	for !strings.Contains(m.String(), text) {
		select {
		case <-m.changed:
		case <-deadline:
			m.t.Fatalf("no %q in the output within %s:\n%s", text, within, tail(m.String(), 2000))
		}
	}
}

// simPlayers reads the simulator's state file: username → (credits_earned, calls, id).
type savedPlayer struct {
	ID            string `json:"id"`
	Username      string `json:"username"`
	Credits       int    `json:"credits"`
	CreditsEarned int    `json:"credits_earned"`
	Calls         int64  `json:"calls"`
}

func readSimState(t *testing.T, path string) map[string]savedPlayer {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("simulator state file: %v", err)
	}
	var st struct {
		Players []savedPlayer `json:"players"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]savedPlayer{}
	for _, p := range st.Players {
		out[p.Username] = p
	}
	return out
}

func countRows(t *testing.T, dbURL, table string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "select count(*) from "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDevRunsALocalSwarm is the README's first command end to end, twice: every service binary is built, `zoea
// dev` starts them on free loopback ports against a fresh database, creates three autopilot myses, broadcasts the
// mission, and each of them must earn credits in the simulator within two minutes; then everything stops cleanly.
// The second run continues the first: the same game accounts with their credits, no new registration, no error,
// the mission not broadcast again.
func TestDevRunsALocalSwarm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service and runs a swarm")
	}
	bin := buildServices(t, false)
	dbURL := pgtest.New(t)
	o := &devOptions{
		bin:         bin,
		stateDir:    t.TempDir(),
		databaseURL: dbURL,
		// Nothing answers there, so zoea dev starts its own embedded JetStream: a swarm on the machine's NATS (a
		// developer's make dev) shares the broadcast stream's delivery consumer and would take this test's mission.
		natsURL:    "nats://" + freeAddr(t),
		provider:   "autopilot",
		addrs:      freeAddrs(t),
		tick:       time.Second,
		turnPause:  time.Second,
		myses:      3,
		mission:    defaultMission,
		duration:   2 * time.Minute,
		minEarners: 3,
		quiet:      true,
	}
	out := &milestones{t: t, tag: "run 1:", changed: make(chan struct{}, 1)}
	began := time.Now()
	if err := runDev(context.Background(), o, out); err != nil {
		t.Fatalf("zoea dev: %v\n%s", err, tail(out.String(), 3000))
	}
	got := out.String()
	if !strings.Contains(got, "3 myses earned credits") {
		t.Fatalf("swarm did not report three earners:\n%s", tail(got, 3000))
	}
	for _, svc := range []string{"runner", "bus", "spacemolt-sim", "composer", "memory"} {
		if !strings.Contains(got, svc+": stopped\n") {
			t.Errorf("%s did not stop cleanly:\n%s", svc, tail(got, 1500))
		}
	}
	if !strings.Contains(got, "web console: http://"+o.addrs.web+"/ (") {
		t.Errorf("zoea dev did not print the web console's address %s:\n%s", o.addrs.web, tail(got, 1500))
	}
	t.Logf("three myses earned credits %s after start", time.Since(began).Round(time.Second))
	if _, err := os.Stat(filepath.Join(o.stateDir, pidFileName)); !os.IsNotExist(err) {
		t.Errorf("a clean stop must remove %s (stat: %v)", pidFileName, err)
	}
	first := readSimState(t, o.simStateFile())
	if len(first) != 3 {
		t.Fatalf("the simulator saved %d players, want 3: %+v", len(first), first)
	}

	// Run 2: the same database and state directory, for long enough that every mysis plays again.
	o.addrs, o.duration, o.minEarners = freeAddrs(t), 25*time.Second, 0
	out2 := &milestones{t: t, tag: "run 2:", changed: make(chan struct{}, 1)}
	if err := runDev(context.Background(), o, out2); err != nil {
		t.Fatalf("restarted zoea dev: %v\n%s", err, tail(out2.String(), 3000))
	}
	got2 := out2.String()
	if strings.Count(got2, "exists (history kept)") != 3 || strings.Contains(got2, "swarm: created") {
		t.Errorf("the restart must keep the three myses:\n%s", tail(got2, 2000))
	}
	runnerLog, err := os.ReadFile(filepath.Join(o.stateDir, "logs", "runner.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"duplicate key", "accounts_pkey", "registered a SpaceMolt account", "rejected by the game"} {
		if bytes.Contains(runnerLog, []byte(bad)) {
			t.Errorf("runner log of the restart contains %q:\n%s", bad, tail(string(runnerLog), 3000))
		}
	}
	second := readSimState(t, o.simStateFile())
	if len(second) != 3 {
		t.Fatalf("after the restart the simulator has %d players, want the same 3: %+v", len(second), second)
	}
	for name, p1 := range first {
		p2, ok := second[name]
		switch {
		case !ok || p2.ID != p1.ID:
			t.Errorf("%s is not the same game account after the restart: %+v → %+v", name, p1, p2)
		case p2.CreditsEarned < p1.CreditsEarned:
			t.Errorf("%s lost its earnings: %d → %d", name, p1.CreditsEarned, p2.CreditsEarned)
		case p2.Calls <= p1.Calls:
			t.Errorf("%s did not play after the restart (%d calls before, %d after)", name, p1.Calls, p2.Calls)
		}
		t.Logf("%s: credits %d → %d, earned %d → %d, calls %d → %d", name, p1.Credits, p2.Credits, p1.CreditsEarned, p2.CreditsEarned, p1.Calls, p2.Calls)
	}
	if n := countRows(t, dbURL, "accounts"); n != 3 {
		t.Errorf("%d stored accounts after a restart, want 3 (no orphans)", n)
	}
	if n := countRows(t, dbURL, "broadcasts"); n != 1 {
		t.Errorf("%d broadcasts after a restart, want the one mission", n)
	}
}

// freePortBase finds a base whose service ports (base+1…+4, base+100) and web console port (base+200) are free on
// loopback, all below the kernel's ephemeral range: a port in that range can be taken between this check and the
// swarm's start (or its restarts) by any connection or ":0" listener on the machine, which a loaded make test with
// other test processes did ("listen tcp 127.0.0.1:39396: bind: address already in use").
func freePortBase(t *testing.T) int {
	t.Helper()
	top := ephemeralLow() - 201
	if top <= 10000 {
		t.Fatalf("the ephemeral port range starts at %d: no room below it for a port base", top+201)
	}
	for range 100 {
		base := 10000 + rand.IntN(top-10000)
		ok := true
		for _, off := range []int{1, 2, 3, 4, 100, 200} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port base")
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's ip_local_port_range; 32768 where it
// cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// devProcess is a `zoea dev` running as its own process; exited delivers its Wait result. closeOutput closes the
// reading end of its output, as a pager or `| tee` that went away with the terminal does.
type devProcess struct {
	cmd         *exec.Cmd
	out         *milestones
	exited      chan error
	closeOutput func()
}

// startDevProcess runs the built `zoea dev` as its own process and waits until the mission is out.
func startDevProcess(t *testing.T, bin, stateDir, dbURL string, base int) devProcess {
	t.Helper()
	// Its own embedded JetStream (nothing answers at a free address), as in TestDevRunsALocalSwarm: on the machine's
	// NATS, a developer's running swarm shares the broadcast stream's delivery consumer and would deliver this
	// test's mission to its own myses.
	cmd := exec.Command(filepath.Join(bin, "zoea"), "dev", "--bin", bin, "--state-dir", stateDir, "--database-url", dbURL,
		"--nats-url", "nats://"+freeAddr(t), "--port-base", strconv.Itoa(base), "--quiet", "--duration", "5m", "--tick", "1s")
	out := &milestones{t: t, tag: "zoea dev:", changed: make(chan struct{}, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(out, line)
			if strings.Contains(line, "swarm: mission") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("zoea dev exited before the swarm was up: %v\n%s", err, out.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("zoea dev did not bring the swarm up in 2 minutes:\n%s", out.String())
	}
	t.Cleanup(func() { _ = stopStale(stateDir, io.Discard) })
	return devProcess{cmd: cmd, out: out, exited: exited, closeOutput: func() { _ = pr.Close() }}
}

// TestDevStopsOnHangupAndStopFindsAnOrphanedSwarm closes the launcher the two ways a terminal does: SIGKILL
// (nothing runs on the way out: the services are orphaned, holding their ports) and SIGHUP (the launcher stops them).
func TestDevStopsOnHangupAndStopFindsAnOrphanedSwarm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service and runs a swarm")
	}
	bin := buildServices(t, true)
	dbURL := pgtest.New(t)
	stateDir := t.TempDir()
	base := freePortBase(t)

	dev := startDevProcess(t, bin, stateDir, dbURL, base)
	pf, err := readPidFile(filepath.Join(stateDir, pidFileName))
	if err != nil || len(pf.Services) != 5 || pf.Launcher.PID != dev.cmd.Process.Pid {
		t.Fatalf("pid file: %+v, %v", pf, err)
	}
	_ = dev.cmd.Process.Signal(syscall.SIGKILL)
	<-dev.exited
	for _, r := range pf.Services {
		if !r.alive() {
			t.Fatalf("%s (pid %d) died with its launcher; this test needs it orphaned", r.Name, r.PID)
		}
	}
	t.Log("launcher killed; the five services are orphaned")
	err = portsFree(stateDir, devAddrsFor("127.0.0.1", base))
	runner := pf.Services[4]
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d (runner from an earlier 'zoea dev')", runner.PID)) ||
		!strings.Contains(err.Error(), "zoea dev --stop") {
		t.Fatalf("the next start must name the orphans and the advice, got: %v", err)
	}
	var stopOut bytes.Buffer
	if err := stopStale(stateDir, &stopOut); err != nil {
		t.Fatalf("zoea dev --stop: %v\n%s", err, stopOut.String())
	}
	t.Logf("zoea dev --stop:\n%s", stopOut.String())
	if !strings.Contains(stopOut.String(), "stopped 5 orphaned services;") {
		t.Errorf("zoea dev --stop does not say it stopped the five orphans:\n%s", stopOut.String())
	}
	for _, r := range pf.Services {
		if r.alive() {
			t.Errorf("%s (pid %d) survived --stop", r.Name, r.PID)
		}
	}
	if err := portsFree(stateDir, devAddrsFor("127.0.0.1", base)); err != nil {
		t.Fatalf("ports still taken after --stop: %v", err)
	}

	// SIGHUP: the terminal closed. The launcher stops every service and removes its record.
	dev = startDevProcess(t, bin, stateDir, dbURL, base)
	out := dev.out
	pf, err = readPidFile(filepath.Join(stateDir, pidFileName))
	if err != nil {
		t.Fatal(err)
	}
	_ = dev.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-dev.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("zoea dev did not exit on SIGHUP:\n%s", out.String())
	}
	for _, r := range pf.Services {
		if r.alive() {
			t.Errorf("%s (pid %d) still runs after SIGHUP", r.Name, r.PID)
		}
		if !strings.Contains(out.String(), r.Name+": stopped") {
			t.Errorf("%s was not stopped in order:\n%s", r.Name, tail(out.String(), 1500))
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, pidFileName)); !os.IsNotExist(err) {
		t.Errorf("the pid file outlived a clean stop: %v", err)
	}

	// A service killed in the middle of play is started again and the swarm plays on: the runner composes through
	// the new composer (its turns go on), and the pid file names the new process, which the hangup below stops.
	dev = startDevProcess(t, bin, stateDir, dbURL, base)
	if pf, err = readPidFile(filepath.Join(stateDir, pidFileName)); err != nil {
		t.Fatal(err)
	}
	composer := pf.Services[1]
	if composer.Name != "composer" {
		t.Fatalf("pid file order: %+v", pf.Services)
	}
	_ = syscall.Kill(composer.PID, syscall.SIGKILL)
	dev.out.waitFor("composer: exited unexpectedly (signal: killed); started again as pid", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := zserver.Healthcheck(ctx, composer.Addr); err != nil { // the launcher reports it once it serves
		t.Fatalf("the composer started again is not serving: %v", err)
	}
	restarted, err := readPidFile(filepath.Join(stateDir, pidFileName))
	if err != nil || restarted.Services[1].PID == composer.PID || !restarted.Services[1].alive() {
		t.Fatalf("pid file after the restart: %+v (%v), the killed composer was pid %d", restarted, err, composer.PID)
	}
	a := devAddrsFor("127.0.0.1", base)
	c, err := (&endpoints{runner: a.runner, bus: a.bus, memory: a.memory, timeout: 10 * time.Second}).dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	turnsAfter := composedTurns(ctx, t, c)
	for composedTurns(ctx, t, c) <= turnsAfter {
		select {
		case <-ctx.Done():
			t.Fatalf("no mysis finished a turn after the composer was started again:\n%s", tail(dev.out.String(), 2000))
		case <-dev.out.changed: // the progress line, every second
		}
	}
	_ = dev.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-dev.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("zoea dev did not exit on SIGHUP after a restart:\n%s", dev.out.String())
	}
	for _, r := range restarted.Services {
		if r.alive() {
			t.Errorf("%s (pid %d) still runs after SIGHUP", r.Name, r.PID)
		}
	}

	// SIGHUP with the output gone: `zoea dev | tee log` in a terminal that closes. tee dies first, so the
	// launcher's next lines hit a closed pipe; it must still stop every service instead of dying of SIGPIPE.
	dev = startDevProcess(t, bin, stateDir, dbURL, base)
	if pf, err = readPidFile(filepath.Join(stateDir, pidFileName)); err != nil {
		t.Fatal(err)
	}
	dev.closeOutput()
	_ = dev.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-dev.exited:
		if ws, ok := dev.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("zoea dev was killed by %v on the way out (%v)", ws.Signal(), err)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("zoea dev did not exit on SIGHUP with its output closed:\n%s", dev.out.String())
	}
	for _, r := range pf.Services {
		if r.alive() {
			t.Errorf("%s (pid %d) still runs after SIGHUP with the output closed", r.Name, r.PID)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, pidFileName)); !os.IsNotExist(err) {
		t.Errorf("the pid file outlived a stop with the output closed: %v", err)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
