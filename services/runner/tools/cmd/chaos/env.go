package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/server"
)

// memoryMaxConns is the memory service's pool bound (ZOEA_DB_MAX_CONNS) in every run.
const memoryMaxConns = 16

const secretKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// proc is a process that can be killed and started again with the same settings.
type proc struct {
	name, bin, logPath string
	args, env          []string
	cred               *syscall.Credential // run as this user (Postgres refuses root); nil: as chaos runs
	// debugAddr serves Go's goroutine profile (pprof, /debug/pprof/goroutine?debug=1): a service's ZOEA_DEBUG_ADDR,
	// a NATS node's prof_port; empty for a process without one (Postgres, etcd, Patroni).
	debugAddr string
	cmd       *exec.Cmd
	done      chan struct{}
}

func (p *proc) start() error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(p.done) }()
	return nil
}

// kill is kill -9: no shutdown code runs.
func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) term() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.kill()
		}
	}
}

// natsNode is one member of the JetStream cluster.
type natsNode struct {
	name                                   string
	port, monitorPort, routePort, profPort int
	proc                                   *proc
}

type env struct {
	dir    string
	pgName string
	// pgVersion is the major version of the private cluster (pg_createcluster), the newest installed.
	pgVersion string
	pgPort    int
	// dbURL is the memory service's database (the private cluster, or Patroni's multi-host URL).
	dbURL    string
	nodes    []*natsNode
	natsURL  string
	procs    map[string]*proc
	memAddr  string
	busAddr  string
	runAddrs []string
	// down is the NATS node killLeader left down for killSecond.
	down *natsNode
	// ha is the Patroni cluster of -postgres patroni (nil: one private Postgres, pgName).
	ha *patroniCluster
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		// The root module's go.mod, not deploy's: chaos may be run from any directory of the repository.
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/zoeaswarm/zoea\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the repository's go.mod not found: run from inside the repository")
		}
		dir = parent
	}
}

func sh(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func waitHealthy(ctx context.Context, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := server.Healthcheck(ctx, addr)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// natsConf is one node's configuration: JetStream fsyncing every write (as the shipped nats.conf), a cluster route
// to every node, the monitoring port whose /healthz says when the node is back, and the profiling port (on the
// listen host, loopback) whose goroutine profile the resource report reads: /varz has no goroutine count.
func natsConf(n *natsNode, storeDir string, routes []string) string {
	return fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
prof_port: %d
jetstream { store_dir: %q, sync_interval: always }
cluster { name: zoea-chaos, listen: 127.0.0.1:%d, routes: [%s] }
`, n.name, n.port, n.monitorPort, n.profPort, storeDir, n.routePort, strings.Join(routes, ", "))
}

// setupNATS starts a 3-node JetStream cluster as separate nats-server processes, so a node can be kill -9ed.
func (e *env) setupNATS(ctx context.Context, bin string) error {
	routePorts := make([]int, 3)
	var routes []string
	for i := range routePorts {
		routePorts[i] = freePort()
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
	}
	var urls []string
	for i := range 3 {
		n := &natsNode{name: fmt.Sprintf("n%d", i+1), port: freePort(), monitorPort: freePort(), routePort: routePorts[i], profPort: freePort()}
		n.proc = &proc{name: "nats-" + n.name, bin: bin, logPath: filepath.Join(e.dir, "nats-"+n.name+".log"),
			debugAddr: fmt.Sprintf("127.0.0.1:%d", n.profPort)}
		conf := filepath.Join(e.dir, "nats-"+n.name+".conf")
		if err := os.WriteFile(conf, []byte(natsConf(n, filepath.Join(e.dir, "nats-"+n.name), routes)), 0o644); err != nil {
			return err
		}
		n.proc.args = []string{"-c", conf}
		e.procs[n.proc.name] = n.proc
		e.nodes = append(e.nodes, n)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", n.port))
	}
	for _, n := range e.nodes {
		if err := n.proc.start(); err != nil {
			return err
		}
	}
	for _, n := range e.nodes {
		if err := n.waitHealthy(ctx, 60*time.Second); err != nil {
			return err
		}
	}
	e.natsURL = strings.Join(urls, ",")
	return nil
}

// waitHealthy waits for the node's /healthz (JetStream current with its cluster).
func (n *natsNode) waitHealthy(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", n.monitorPort)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("nats node %s not healthy: %w", n.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jetstream connects to the cluster for one inspection; done closes the connection.
func (e *env) jetstream() (js jetstream.JetStream, done func(), err error) {
	nc, err := nats.Connect(e.natsURL, nats.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, err
	}
	if js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

// streamLeader names the node leading the swarm's message stream (the stream that is not a KV bucket).
func (e *env) streamLeader(ctx context.Context) (*natsNode, error) {
	js, done, err := e.jetstream()
	if err != nil {
		return nil, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, "KV_") {
			continue
		}
		s, err := js.Stream(ctx, name)
		if err != nil {
			return nil, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return nil, err
		}
		if info.Cluster == nil {
			return nil, fmt.Errorf("stream %s has no cluster info", name)
		}
		for _, n := range e.nodes {
			if n.name == info.Cluster.Leader {
				return n, nil
			}
		}
		return nil, fmt.Errorf("stream %s: leader %q is none of the nodes", name, info.Cluster.Leader)
	}
	return nil, errors.New("no message stream found")
}

// replicas reads the replication factor of every stream (the message stream and the KV buckets), by name.
func (e *env) replicas(ctx context.Context) (map[string]int, error) {
	js, done, err := e.jetstream()
	if err != nil {
		return nil, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out := map[string]int{}
	infos := js.ListStreams(ctx)
	for info := range infos.Info() {
		out[info.Config.Name] = info.Config.Replicas
	}
	return out, infos.Err()
}

// killLeader kill -9s the node leading the message stream and leaves it down: the other two keep a quorum.
func (e *env) killLeader() error {
	n, err := e.streamLeader(context.Background())
	if err != nil {
		return fmt.Errorf("find the stream leader: %w", err)
	}
	n.proc.kill()
	e.down = n
	return nil
}

// killSecond kill -9s a second node while the leader killed before is still down — one node of three left, no
// quorum: the bus cannot acknowledge — holds it 5 s, then starts both again.
func (e *env) killSecond() error {
	if e.down == nil {
		return errors.New("killLeader did not run first")
	}
	var second *natsNode
	for _, n := range e.nodes {
		if n != e.down {
			second = n
			break
		}
	}
	second.proc.kill()
	time.Sleep(5 * time.Second)
	for _, n := range []*natsNode{e.down, second} {
		if err := n.proc.start(); err != nil {
			return err
		}
	}
	e.down = nil
	return nil
}

func setup(ctx context.Context, o options, log *slog.Logger, model *slowModel) (*env, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "zoea-chaos-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, procs: map[string]*proc{}}
	log.Info("building binaries", "dir", dir)
	for _, svc := range []string{"memory", "composer", "bus", "runner", "spacemolt-sim"} {
		if err := sh("go", "build", "-C", root, "-o", filepath.Join(dir, svc), "./services/"+svc+"/cmd/"+svc); err != nil {
			return e, err
		}
	}
	// The NATS server the repository pins (go.mod), built as a binary so a node can be kill -9ed.
	natsBin := filepath.Join(dir, "nats-server")
	if err := sh("go", "build", "-C", root, "-o", natsBin, "github.com/nats-io/nats-server/v2"); err != nil {
		return e, err
	}
	var dbURL string
	if o.postgres == "patroni" {
		// An HA cluster: Patroni, a primary and two replicas (synchronous), the memory service on a multi-host URL.
		log.Info("starting etcd and a 3-node Patroni cluster (synchronous_mode)")
		ha, err := startPatroni(ctx, dir, log, o.pgBinDir)
		e.ha = ha
		if err != nil {
			return e, err
		}
		dbURL = ha.url()
	} else {
		// A private Postgres cluster on a free port (trust auth on loopback), never the shared one, of the newest
		// major version installed.
		bin := pgBinDir("/usr/lib/postgresql")
		if bin == "" {
			return e, errors.New("no PostgreSQL server is installed (/usr/lib/postgresql/<version>/bin/postgres): sudo apt-get install -y postgresql")
		}
		e.pgVersion = filepath.Base(filepath.Dir(bin))
		e.pgPort, e.pgName = freePort(), fmt.Sprintf("zoeachaos%d", os.Getpid())
		log.Info("creating a private Postgres cluster", "name", e.pgName, "port", e.pgPort)
		if err := sh("pg_createcluster", e.pgVersion, e.pgName, "-p", strconv.Itoa(e.pgPort), "--start", "--", "--auth=trust"); err != nil {
			return e, err
		}
		dbURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", e.pgPort)
	}
	e.dbURL = dbURL
	log.Info("database", "url", dbURL)
	log.Info("starting a 3-node NATS cluster")
	if err := e.setupNATS(ctx, natsBin); err != nil {
		return e, err
	}
	if err := model.start(); err != nil {
		return e, err
	}
	// Every service serves pprof on a loopback port of its own (ZOEA_DEBUG_ADDR), kept across restarts: the resource
	// report reads its goroutine count there.
	add := func(name, bin string, envs ...string) error {
		debugAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
		p := &proc{name: name, bin: filepath.Join(dir, bin), logPath: filepath.Join(dir, name+".log"),
			env: append(envs, "ZOEA_DEBUG_ADDR="+debugAddr), debugAddr: debugAddr}
		e.procs[name] = p
		return p.start()
	}
	simAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	if err := add("spacemolt-sim", "spacemolt-sim", "ZOEA_LISTEN_ADDR="+simAddr, "ZOEA_SIM_TICK=20ms", "ZOEA_SIM_MUTATIONS_PER_MIN=-1", "ZOEA_SIM_READS_PER_MIN=-1", "ZOEA_SIM_CHAT_PER_MIN=-1", "ZOEA_SIM_AUTH_PER_MIN=-1"); err != nil {
		return e, err
	}
	e.memAddr = fmt.Sprintf("127.0.0.1:%d", freePort())
	if err := add("memory", "memory", "ZOEA_LISTEN_ADDR="+e.memAddr, "ZOEA_DATABASE_URL="+dbURL, "ZOEA_SECRET_KEY="+secretKey, "ZOEA_MIGRATE_ON_START=true", fmt.Sprintf("ZOEA_DB_MAX_CONNS=%d", memoryMaxConns)); err != nil {
		return e, err
	}
	compAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
	compEnv := []string{"ZOEA_LISTEN_ADDR=" + compAddr, "ZOEA_MEMORY_ADDR=" + e.memAddr}
	if o.carryCacheBytes > 0 {
		compEnv = append(compEnv, fmt.Sprintf("ZOEA_COMPOSE_CARRY_CACHE_BYTES=%d", o.carryCacheBytes))
	}
	if o.tokenCacheEntries > 0 {
		compEnv = append(compEnv, fmt.Sprintf("ZOEA_COMPOSE_TOKEN_CACHE_ENTRIES=%d", o.tokenCacheEntries))
	}
	if err := add("composer", "composer", compEnv...); err != nil {
		return e, err
	}
	e.busAddr = fmt.Sprintf("127.0.0.1:%d", freePort())
	if err := add("bus", "bus", "ZOEA_LISTEN_ADDR="+e.busAddr, "ZOEA_MEMORY_ADDR="+e.memAddr, "ZOEA_NATS_URL="+e.natsURL, "ZOEA_NATS_REPLICAS=3"); err != nil {
		return e, err
	}
	for _, addr := range []string{e.memAddr, compAddr, e.busAddr} {
		if err := waitHealthy(ctx, addr, 60*time.Second); err != nil {
			return e, err
		}
	}
	for _, id := range []string{"r1", "r2"} {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort())
		e.runAddrs = append(e.runAddrs, addr)
		if err := add("runner-"+id, "runner", "ZOEA_LISTEN_ADDR="+addr, "ZOEA_MEMORY_ADDR="+e.memAddr, "ZOEA_COMPOSER_ADDR="+compAddr,
			"ZOEA_NATS_URL="+e.natsURL, "ZOEA_NATS_REPLICAS=3", "ZOEA_SPACEMOLT_URL=http://"+simAddr+"/mcp", "ZOEA_SPACEMOLT_AUTH_PER_MIN=-1", "ZOEA_REPLICA_ID="+id, "ZOEA_DEFAULT_PROVIDER=autopilot",
			"OPENAI_BASE_URL="+model.url(), "OPENAI_API_KEY=chaos-not-a-key",
			"ZOEA_LEASE_TTL=3s", "ZOEA_TURN_PAUSE=200ms", "ZOEA_ERROR_BACKOFF_MIN=200ms", "ZOEA_ERROR_BACKOFF_MAX=2s", "ZOEA_SHUTDOWN_TIMEOUT=5s"); err != nil {
			return e, err
		}
	}
	for _, addr := range e.runAddrs {
		if err := waitHealthy(ctx, addr, 60*time.Second); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (e *env) teardown(log *slog.Logger, keep bool) {
	for name, p := range e.procs {
		if !strings.HasPrefix(name, "nats-") {
			p.term()
		}
	}
	for _, n := range e.nodes {
		n.proc.term()
	}
	if e.ha != nil {
		e.ha.stop()
	}
	if e.pgName != "" {
		if err := sh("pg_dropcluster", e.pgVersion, e.pgName, "--stop"); err != nil {
			log.Warn("drop Postgres cluster", "err", err)
		}
	}
	if keep {
		log.Info("logs kept", "dir", e.dir)
		return
	}
	_ = os.RemoveAll(e.dir)
}

// rpcCode is how a gRPC error reads in a service's log.
var rpcCode = regexp.MustCompile(`rpc error: code = (\w+)`)

// loggedCodes counts the gRPC errors the runners, the bus and the composer logged, by code.
func (e *env) loggedCodes() (map[string]int, error) {
	out := map[string]int{}
	for name, p := range e.procs {
		if !strings.HasPrefix(name, "runner") && name != "bus" && name != "composer" {
			continue
		}
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			return out, err
		}
		for _, m := range rpcCode.FindAllSubmatch(b, -1) {
			out[string(m[1])]++
		}
	}
	return out, nil
}

func codeCounts(m map[string]int) string {
	var parts []string
	for code, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", code, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// usage is one process's footprint: RSS, threads and open files from /proc, goroutines from its pprof endpoint.
type usage struct {
	rssKiB, threads, fds int
	// goroutines is the goroutine profile's total; goroutineNA: the process has no such endpoint (Postgres, etcd,
	// Patroni); goroutineErr: it has one that did not answer.
	goroutines int
	// uptime is how long this process has run: the faults restart every service and NATS node, so the end column is
	// of a process younger than the run.
	uptime time.Duration
	ok     bool
}

const (
	goroutineNA  = -1
	goroutineErr = -2
)

func (u usage) String() string {
	if !u.ok {
		return "(not running)"
	}
	g := strconv.Itoa(u.goroutines)
	switch u.goroutines {
	case goroutineNA:
		g = "n/a"
	case goroutineErr:
		g = "?"
	}
	return fmt.Sprintf("%6.1f / %3d / %4d / %5s (up %s)", float64(u.rssKiB)/1024, u.threads, u.fds, g, u.uptime.Round(time.Second))
}

// resources reads RSS, threads, open files and goroutines of every running process, Postgres' postmaster included.
func (e *env) resources() map[string]usage {
	out := map[string]usage{}
	for name, p := range e.procs {
		out[name] = p.usage()
	}
	if e.ha != nil {
		out["etcd"] = e.ha.etcd.usage()
		for name, pid := range e.ha.postmasters() {
			out[name] = procUsage(pid)
		}
		for _, n := range e.ha.nodes {
			out[n.proc.name] = n.proc.usage()
		}
		return out
	}
	if b, err := os.ReadFile(fmt.Sprintf("/var/lib/postgresql/%s/%s/postmaster.pid", e.pgVersion, e.pgName)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil {
			out["postgres (main)"] = procUsage(pid)
		}
	}
	return out
}

// usage is the process's footprint while it runs, with the goroutine count from its debug address if it has one.
func (p *proc) usage() usage {
	if !p.running() {
		return usage{}
	}
	u := procUsage(p.cmd.Process.Pid)
	if u.ok && p.debugAddr != "" {
		u.goroutines = goroutineCount(p.debugAddr)
	}
	return u
}

// goroutineCount reads "goroutine profile: total N", the first line of a Go process's goroutine profile.
func goroutineCount(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+server.DebugPath+"goroutine?debug=1", nil)
	if err != nil {
		return goroutineErr
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return goroutineErr
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total ")))
	if resp.StatusCode != http.StatusOK || err != nil {
		return goroutineErr
	}
	return n
}

// procUsage reads a process's RSS, threads, open files and uptime from /proc; goroutines n/a.
func procUsage(pid int) usage {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage{}
	}
	u := usage{ok: true, goroutines: goroutineNA, uptime: procUptime(pid)}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			u.rssKiB, _ = strconv.Atoi(f[1])
		case "Threads:":
			u.threads, _ = strconv.Atoi(f[1])
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		u.fds = len(fds)
	}
	return u
}

// procUptime is how long pid has run: /proc/uptime less the start time in /proc/<pid>/stat (field 22, clock ticks
// since boot; USER_HZ is 100 on Linux). 0 when unreadable.
func procUptime(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count fields after its closing parenthesis.
	rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(rest) < 20 {
		return 0
	}
	ticks, err1 := strconv.ParseFloat(rest[19], 64)
	boot, err2 := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration((boot - ticks/100) * float64(time.Second))
}
