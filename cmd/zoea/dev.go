package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	zserver "github.com/zoeaswarm/zoea/libs/server"
)

// devOptions configure `zoea dev`, the one-command local swarm.
type devOptions struct {
	bin         string
	stateDir    string
	databaseURL string
	natsURL     string
	provider    string
	model       string
	host        string
	portBase    int
	addrs       devAddrs // derived from host and portBase unless set (tests take free ports)
	tick        time.Duration
	turnPause   time.Duration
	myses       int
	mission     string
	duration    time.Duration
	minEarners  int
	quiet       bool
	fresh       bool
	stop        bool
	// natsChosen is set when --nats-url or ZOEA_NATS_URL named the NATS server: one without JetStream is an error
	// then, not a reason to use the embedded server.
	natsChosen bool
	// providerAsked is set when --provider, --model or ZOEA_PROVIDER chose the provider: existing demo myses switch to it.
	providerAsked bool
}

// devAddrs are where the local swarm's services listen, and the web console (zoea web, in the launcher's process;
// none when empty).
type devAddrs struct {
	memory, composer, runner, bus, sim, web string
}

// devAddrsFor puts the services on host at base+1…base+4 and base+100 (7001–7004 and 7100 by default), and the web
// console at base+200 on loopback (127.0.0.1:7200 by default) whatever the host: it is the commander's, not the
// swarm's.
func devAddrsFor(host string, base int) devAddrs {
	at := func(off int) string { return net.JoinHostPort(host, strconv.Itoa(base+off)) }
	return devAddrs{memory: at(1), composer: at(2), runner: at(3), bus: at(4), sim: at(100),
		web: net.JoinHostPort("127.0.0.1", strconv.Itoa(base+200))}
}

func (a devAddrs) of(svc string) string {
	switch svc {
	case "memory":
		return a.memory
	case "composer":
		return a.composer
	case "runner":
		return a.runner
	case "bus":
		return a.bus
	case "web":
		return a.web
	}
	return a.sim
}

// simStateFile is where the local simulator keeps its universe between runs.
func (o *devOptions) simStateFile() string { return filepath.Join(o.stateDir, "sim-state.json") }

const defaultMission = "Commander here. Mission for the whole swarm: mine ore at main_belt in sol, sell it at " +
	"sol_central, keep your ship fuelled, and grow your credits. Report progress in your captain's log."

func devCmd() *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local swarm: every service on this machine, a demo swarm, live progress until Ctrl-C",
		Long: `dev starts memory, composer, bus, runner and spacemolt-sim from --bin against the local Postgres
(the memory binary creates the database when it is missing, and migrates it) and the local NATS (or an embedded one,
<bin>/devnats, when none answers, or when the default one has no JetStream), creates a demo swarm, broadcasts a mission and shows each mysis's state, last action and credits until Ctrl-C (or SIGTERM, or
SIGHUP when the terminal closes), which stops everything cleanly. The services listen on 127.0.0.1 only. A service
that dies meanwhile is started again (its log continues); a fourth death within two minutes stops the swarm.

A second run continues the first: the database keeps the myses' histories and accounts, the simulator keeps its
universe in <state-dir>/sim-state.json, and the mission is not broadcast twice. --fresh starts over on purpose.
The children's process ids are recorded in <state-dir>/dev.pids; --stop stops a swarm left running (a killed
terminal, a crashed launcher). ZOEA_PROVIDER=ollama (with OLLAMA_HOST, ZOEA_OLLAMA_MODEL) or openai (with
OPENAI_API_KEY, ZOEA_OPENAI_MODEL) uses a real model.`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.stop {
				return stopStale(o.stateDir, cmd.OutOrStdout())
			}
			o.natsChosen = cmd.Flags().Changed("nats-url") || os.Getenv("ZOEA_NATS_URL") != ""
			o.providerAsked = cmd.Flags().Changed("provider") || cmd.Flags().Changed("model") || os.Getenv("ZOEA_PROVIDER") != ""
			// Output piped to a pager or `| tee` goes away with the terminal, before the SIGHUP is handled: a write
			// to that pipe must fail, not kill the launcher halfway through stopping its services.
			signal.Ignore(syscall.SIGPIPE)
			if out, ok := cmd.OutOrStdout().(*os.File); ok && !o.quiet && o.minEarners == 0 {
				if guarded, err := runGuarded(out, " The services it started may still run: 'zoea dev --stop' (./bin/zoea dev --stop) stops them."); guarded {
					return err // termguard.go: the launcher ran in a child, and the terminal is restored
				}
			}
			err := runDev(cmd.Context(), o, cmd.OutOrStdout())
			sayIfGuardLost(os.Stderr)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bin, "bin", "./bin", "directory with the service binaries (make build)")
	f.StringVar(&o.stateDir, "state-dir", ".zoea", "directory for logs, process ids, the simulator's universe and the embedded NATS store")
	f.StringVar(&o.databaseURL, "database-url", envOr("ZOEA_DATABASE_URL", defaultDatabaseURL), "Postgres database (created if missing)")
	f.StringVar(&o.natsURL, "nats-url", envOr("ZOEA_NATS_URL", "nats://127.0.0.1:4222"), "NATS server with JetStream (when the default has none or nothing answers, an embedded one starts)")
	f.StringVar(&o.provider, "provider", envOr("ZOEA_PROVIDER", memoryrules.AutopilotProvider), "LLM provider for the demo myses: autopilot, ollama or openai")
	f.StringVar(&o.model, "model", "", "model for the demo myses (default: the runner's ZOEA_OLLAMA_MODEL or ZOEA_OPENAI_MODEL)")
	f.StringVar(&o.host, "host", envOr("ZOEA_DEV_HOST", "127.0.0.1"), "address the services listen on (0.0.0.0 exposes them to the network, without a token unless ZOEA_ADMIN_TOKEN is set)")
	f.IntVar(&o.portBase, "port-base", envInt("ZOEA_DEV_PORT_BASE", 7000), "services listen on base+1…base+4 (memory, composer, runner, bus) and base+100 (spacemolt-sim); the web console on 127.0.0.1:base+200")
	f.DurationVar(&o.tick, "tick", envDuration("ZOEA_SIM_TICK", time.Second), "simulator tick (the real game's is 10s)")
	f.DurationVar(&o.turnPause, "turn-pause", envDuration("ZOEA_TURN_PAUSE", time.Second), "pause between autonomous turns")
	f.IntVar(&o.myses, "myses", 3, "size of the demo swarm")
	f.StringVar(&o.mission, "mission", defaultMission, "mission broadcast to the swarm")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	f.IntVar(&o.minEarners, "expect-earners", 0, "stop with success once this many myses earned credits; with --duration, fail if they have not by then")
	f.BoolVar(&o.quiet, "quiet", false, "print plain progress (the table on changes and every 30s) instead of opening the console")
	f.BoolVar(&o.fresh, "fresh", false, "start over: drop the database, forget the simulator's universe and the embedded NATS store")
	f.BoolVar(&o.stop, "stop", false, "stop a swarm an earlier 'zoea dev' left running (process ids in <state-dir>/dev.pids), then exit")
	return cmd
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// proc is one child service.
type proc struct {
	name, addr string
	cmd        *exec.Cmd
	done       chan error
}

func runDev(ctx context.Context, o *devOptions, out io.Writer) error {
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	if o.addrs == (devAddrs{}) {
		o.addrs = devAddrsFor(o.host, o.portBase)
	}
	for _, b := range []string{"memory", "composer", "bus", "runner", "spacemolt-sim"} {
		if _, err := os.Stat(filepath.Join(o.bin, b)); err != nil {
			return fmt.Errorf("missing binary %s in %s: run 'make build' (or 'make dev', which builds first)", b, o.bin)
		}
	}
	// Every port is checked before anything starts, so a swarm left running is reported whole, with its pids.
	if err := portsFree(o.stateDir, o.addrs); err != nil {
		return err
	}
	logDir := filepath.Join(o.stateDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	if o.fresh {
		for _, p := range []string{o.simStateFile(), filepath.Join(o.stateDir, "nats")} {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	// The memory binary creates the database when it is missing (drops it first for --fresh) and migrates it: it
	// links the Postgres driver anyway, and this CLI need not.
	if err := migrateDatabase(ctx, o.bin, o.databaseURL, o.fresh, logDir); err != nil {
		return err
	}
	if o.fresh {
		fmt.Fprintf(out, "fresh: dropped database %s, forgot %s\n", config.RedactURL(o.databaseURL), o.simStateFile())
	}
	fmt.Fprintf(out, "postgres: %s ready\n", config.RedactURL(o.databaseURL))
	fmt.Fprintln(out, "memory: schema migrated")

	natsURL, natsNote, stopNATS, err := ensureNATS(ctx, o.bin, o.natsURL, filepath.Join(o.stateDir, "nats"), logDir, o.natsChosen)
	if err != nil {
		return err
	}
	defer func() { // after the services (deferred later, so stopped first), which need it until they stop
		if err := stopNATS(); err != nil {
			fmt.Fprintf(out, "nats: %v\n", err)
		}
	}()
	fmt.Fprintln(out, natsNote)

	env := append(os.Environ(),
		"ZOEA_DATABASE_URL="+o.databaseURL,
		"ZOEA_NATS_URL="+natsURL,
		"ZOEA_MEMORY_ADDR="+o.addrs.memory,
		"ZOEA_COMPOSER_ADDR="+o.addrs.composer,
		"ZOEA_RUNNER_ADDR="+o.addrs.runner,
		"ZOEA_BUS_ADDR="+o.addrs.bus,
		"ZOEA_SPACEMOLT_URL=http://"+o.addrs.sim+simEndpointPath(),
		"ZOEA_SIM_TICK="+o.tick.String(),
		"ZOEA_SIM_STATE_FILE="+o.simStateFile(),
		"ZOEA_SIM_SAVE_INTERVAL=10s",
		"ZOEA_TURN_PAUSE="+o.turnPause.String(),
		"ZOEA_DEFAULT_PROVIDER="+o.provider,
	)
	if os.Getenv("ZOEA_SECRET_KEY") == "" {
		// A fixed development key so accounts survive restarts of the demo; never use it anywhere else.
		env = append(env, "ZOEA_SECRET_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	}

	pids := &pidFile{path: filepath.Join(o.stateDir, pidFileName), Launcher: selfProcess(), Launched: time.Now()}
	pids.Launcher.Addr = o.addrs.web
	view := devView(o, out) // devconsole.go: the console on a terminal, plain lines otherwise
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	// Each child listens on its own address; later entries of Env win over the inherited ones.
	start := func(name string, restart bool) (*proc, error) {
		return startProc(o.bin, name, o.addrs.of(name), append(slices.Clip(env), "ZOEA_LISTEN_ADDR="+o.addrs.of(name)), logDir, restart)
	}
	sup := &supervisor{restarts: map[string][]time.Time{}, pids: pids, notify: io.Discard, logDir: logDir, fail: fail,
		start:   func(name string) (*proc, error) { return start(name, true) },
		healthy: func(ctx context.Context, p *proc) error { return waitHealthy(ctx, p, p.addr) }}
	notices := make(noticeWriter, 16)
	if o.quiet {
		sup.notify = out
	} else {
		sup.notify = notices
	}
	defer func() {
		sup.stopAll(out)
		pids.remove()
	}()
	for _, name := range []string{"memory", "composer", "spacemolt-sim", "bus", "runner"} {
		p, err := start(name, false)
		if err != nil {
			return err
		}
		sup.add(p)
		if err := pids.add(name, p.addr, p.cmd.Process.Pid); err != nil {
			return fmt.Errorf("record process ids: %w", err)
		}
		if err := waitHealthy(ctx, p, p.addr); err != nil {
			return fmt.Errorf("%s did not become healthy: %w (log: %s)", name, err, filepath.Join(logDir, name+".log"))
		}
		fmt.Fprintf(out, "%s: serving on %s\n", name, p.addr)
	}
	sup.watch(ctx)

	ep := &endpoints{runner: o.addrs.runner, bus: o.addrs.bus, memory: o.addrs.memory, token: os.Getenv("ZOEA_ADMIN_TOKEN"),
		timeout: 30 * time.Second}
	c, err := ep.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	if o.addrs.web != "" {
		// The web console beside the terminal one, over the same clients; its address (and a made-up login token
		// when the swarm has none) goes to the output and to the console's status line.
		ln, err := net.Listen("tcp", o.addrs.web)
		if err != nil {
			return fmt.Errorf("web console: --port-base: %w", err)
		}
		wctx, stopWeb := context.WithCancel(ctx)
		webDone := make(chan error, 1)
		go func() {
			webDone <- serveWeb(wctx, ln, "", webSite{Addrs: ep.addrs()}, c.backend(), ep.adminToken(), ep.timeout, io.MultiWriter(out, notices), "web console")
		}()
		defer func() {
			stopWeb()
			if err := <-webDone; err != nil {
				fmt.Fprintf(out, "web console: %v\n", err)
			}
		}()
	}
	seed := demoSeed{myses: o.myses, provider: o.provider, model: o.model, mission: o.mission, switchExisting: o.providerAsked}
	if err := seedDemo(ctx, c, ep, seed, out); err != nil {
		if f := failure(ctx); f != nil {
			return f // a service died for good meanwhile: that is the reason
		}
		return err
	}
	return view(ctx, c, o, out, notices)
}

// portsFree fails when any service address is taken. When the launcher recorded in the state directory still runs,
// that is a swarm running now, and the error says so and how to watch or stop it; otherwise it names the processes
// an earlier 'zoea dev' left behind.
func portsFree(stateDir string, addrs devAddrs) error {
	known, _ := readPidFile(filepath.Join(stateDir, pidFileName))
	var taken []string
	for _, name := range []string{"memory", "composer", "spacemolt-sim", "bus", "runner", "web"} {
		addr := addrs.of(name)
		if addr == "" {
			continue
		}
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			continue
		}
		conn.Close()
		who := "a process zoea did not start (ss -ltnp shows which)"
		if known != nil {
			for _, r := range known.Services {
				if r.Addr == addr && r.alive() {
					who = fmt.Sprintf("pid %d (%s from an earlier 'zoea dev')", r.PID, r.Name)
				}
			}
		}
		taken = append(taken, fmt.Sprintf("%s: %s is taken by %s", name, addr, who))
	}
	if len(taken) == 0 {
		return nil
	}
	if known.running() {
		return runningSwarm(known)
	}
	return fmt.Errorf("%s\n  stop an earlier swarm with 'zoea dev --stop' (./bin/zoea dev --stop), "+
		"or use other ports with --port-base (ZOEA_DEV_PORT_BASE)", strings.Join(taken, "\n  "))
}

// runningSwarm is the error for a second `zoea dev` while the first one's launcher runs: not leftovers to clean up, a
// swarm to watch.
func runningSwarm(f *pidFile) error {
	launched := ""
	if !f.Launched.IsZero() {
		launched = " launched at " + f.Launched.Format("2006-01-02 15:04:05") + ","
	}
	watch := "./bin/zoea tui"
	if r, b, m := f.addr("runner"), f.addr("bus"), f.addr("memory"); r != "" && (r != "127.0.0.1:7003" || b != "127.0.0.1:7004" || m != "127.0.0.1:7001") {
		watch = fmt.Sprintf("./bin/zoea tui --runner %s --bus %s --memory %s", r, b, m)
	}
	web := ""
	if f.Launcher.Addr != "" {
		web = fmt.Sprintf(", or its web console at http://%s/", f.Launcher.Addr)
	}
	return fmt.Errorf("a swarm is running here now (%s,%s pid %d) on these ports: watch and command it with %s%s; "+
		"stop it with q or Ctrl-C in its terminal, or ./bin/zoea dev --stop; or start another swarm on other ports "+
		"with --port-base (ZOEA_DEV_PORT_BASE)", f.Launcher.Name, launched, f.Launcher.PID, watch, web)
}

// defaultDatabaseURL is libs/pgutil.DefaultURL (TestDefaultDatabaseURLIsPgutils): written out here, because importing
// pgutil would link the Postgres driver into this CLI.
const defaultDatabaseURL = "postgres://zoea:zoea@127.0.0.1:5432/zoea?sslmode=disable"

// dbSetup is the advice for a Postgres that refuses the default URL.
const dbSetup = "sudo bash .ci/services.sh"

// migrateDatabase runs `memory migrate -create-database` (with fresh, -recreate-database) from bin against dbURL,
// its log in logDir/migrate.log. When it fails, the error is the memory binary's own sentence (nothing listening,
// password refused, role or database missing, and what to run), not its exit status.
func migrateDatabase(ctx context.Context, bin, dbURL string, fresh bool, logDir string) error {
	args := []string{"migrate", "-create-database", "-setup", dbSetup}
	if fresh {
		args[1] = "-recreate-database"
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "memory"), args...)
	cmd.Env = append(os.Environ(), "ZOEA_DATABASE_URL="+dbURL)
	b, err := cmd.CombinedOutput()
	logPath := filepath.Join(logDir, "migrate.log")
	_ = os.WriteFile(logPath, b, 0o644)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if msg := migrateError(string(b)); msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("memory migrate: %v (log: %s)\n%s", exitReason(err), logPath, b)
}

// migrateError is what a failed `memory migrate` said in words: its output less the JSON log lines, without the
// "memory: " its main puts in front; "" when it said nothing else.
func migrateError(out string) string {
	var said []string
	for _, line := range strings.Split(out, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "{") {
			said = append(said, line)
		}
	}
	if len(said) == 0 {
		return ""
	}
	said[0] = strings.TrimPrefix(said[0], "memory: ")
	return strings.Join(said, "\n")
}

// startProc starts a service listening on addr, its output in logDir/<name>.log: a new log, or, when restart is
// set, the same log continued after a line that says so.
func startProc(bin, name, addr string, env []string, logDir string, restart bool) (*proc, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if restart {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(filepath.Join(logDir, name+".log"), flags, 0o644)
	if err != nil {
		return nil, err
	}
	if restart {
		fmt.Fprintf(logFile, "--- zoea dev: %s exited unexpectedly; started again at %s ---\n", name, time.Now().Format(time.RFC3339))
	}
	// Not CommandContext: on Ctrl-C the children get SIGTERM and their own shutdown deadline, not SIGKILL.
	cmd := exec.Command(filepath.Join(bin, name))
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group, so the terminal's Ctrl-C reaches only zoea, which then stops children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, addr: addr, cmd: cmd, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	return p, nil
}

func waitHealthy(ctx context.Context, p *proc, addr string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if p.name == "spacemolt-sim" {
			err = httpHealthy(ctx, "http://"+addr+"/healthz")
		} else {
			err = zserver.Healthcheck(ctx, addr)
		}
		if err == nil {
			return nil
		}
		select {
		case exitErr := <-p.done:
			p.done <- exitErr
			return fmt.Errorf("exited: %v", exitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

func httpHealthy(ctx context.Context, u string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return nil
}

// stopAll stops children in reverse start order, each within its own shutdown deadline.
func stopAll(procs []*proc, out io.Writer) {
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				fmt.Fprintf(out, "%s: stopped (%v)\n", p.name, err)
			} else {
				fmt.Fprintf(out, "%s: stopped\n", p.name)
			}
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			fmt.Fprintf(out, "%s: killed after 20s\n", p.name)
		}
	}
}

// simStats is the part of the simulator's /admin/stats the progress view shows.
type simStats struct {
	Players []struct {
		Username      string `json:"username"`
		Credits       int64  `json:"credits"`
		CreditsEarned int64  `json:"credits_earned"`
		OreMined      int64  `json:"ore_mined"`
	} `json:"players"`
	Tick int64 `json:"tick"`
}

func fetchSimStats(ctx context.Context, simAddr string) (*simStats, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+simAddr+"/admin/stats", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var s simStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

func watchProgress(ctx context.Context, c *clients, o *devOptions, out io.Writer, _ <-chan string) error {
	start := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	earners := 0
	pp := &progressPrinter{every: progressEvery}
	for {
		select {
		case <-ctx.Done():
			if err := failure(ctx); err != nil {
				return err // a service died for good
			}
			fmt.Fprintln(out, "\nstopping the swarm…")
			if o.duration > 0 && o.minEarners > 0 && earners < o.minEarners {
				return fmt.Errorf("only %d of %d myses earned credits in %s", earners, o.minEarners, o.duration)
			}
			return nil
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		list, err := c.swarm.ListMyses(cctx, &runnerv1.ListMysesRequest{PageSize: 1000})
		stats, serr := fetchSimStats(cctx, o.addrs.sim)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			fmt.Fprintf(out, "runner: %v\n", err)
			continue
		}
		earned := map[string]int64{}
		if serr == nil {
			for _, p := range stats.Players {
				earned[p.Username] = p.CreditsEarned
			}
		}
		earners = pp.print(out, o, time.Since(start), list.GetMyses(), earned)
		if o.minEarners > 0 && earners >= o.minEarners {
			fmt.Fprintf(out, "\n%d myses earned credits in %s\n", earners, time.Since(start).Round(time.Second))
			return nil
		}
	}
}

// progressEvery is how often plain progress prints the table while nothing but turns, credits and last actions moved.
const progressEvery = 30 * time.Second

// progressPrinter prints plain progress (a pipe, a log file, CI) without flooding it: the table when a mysis is new,
// gone, changed state, has a new last error or earned its first credits, and otherwise every `every`.
type progressPrinter struct {
	every   time.Duration
	printed bool
	at      time.Duration // elapsed time of the last table printed
	last    string        // what a change is judged by, as of the last table printed
}

// print prints the table if it is due and returns how many myses have earned credits.
func (p *progressPrinter) print(out io.Writer, o *devOptions, elapsed time.Duration, list []*runnerv1.MysisStatus, earned map[string]int64) int {
	sort.Slice(list, func(i, j int) bool { return list[i].GetMysis().GetName() < list[j].GetMysis().GetName() })
	var sig strings.Builder
	earners := 0
	for _, s := range list {
		m := s.GetMysis()
		e := earned[m.GetAccountUsername()] > 0
		if e {
			earners++
		}
		fmt.Fprintf(&sig, "%s\x00%d\x00%s\x00%t\n", m.GetName(), m.GetState(), s.GetLastError(), e)
	}
	if p.printed && sig.String() == p.last && elapsed-p.at < p.every {
		return earners
	}
	p.printed, p.at, p.last = true, elapsed, sig.String()
	renderProgress(out, o, elapsed, list, earned)
	return earners
}

// renderProgress prints the swarm's table, myses in the order given.
func renderProgress(out io.Writer, o *devOptions, elapsed time.Duration, list []*runnerv1.MysisStatus, earned map[string]int64) {
	fmt.Fprintf(out, "Zoea local swarm — %s elapsed — provider %s — Ctrl-C stops everything (logs in %s)\n\n",
		elapsed.Round(time.Second), o.provider, filepath.Join(o.stateDir, "logs"))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MYSIS\tSTATE\tTURNS\tCREDITS\tEARNED\tLAST ACTION\tLAST ERROR")
	for _, s := range list {
		m := s.GetMysis()
		credits := "?"
		if s.GetCredits() >= 0 {
			credits = fmt.Sprint(s.GetCredits())
		}
		e := earned[m.GetAccountUsername()]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", present.Safe(m.GetName()), stateName(m.GetState()), m.GetCurrentTurn(), credits, e,
			clip(present.OneLine(s.GetLastAction()), 40), clip(present.OneLine(s.GetLastError()), 40))
	}
	tw.Flush()
}

// simEndpointPath is the simulator endpoint the demo swarm plays: /mcp/v2 when ZOEA_SPACEMOLT_ENDPOINT=v2 or
// ZOEA_SPACEMOLT_URL ends in /mcp/v2 (the runner reads ZOEA_SPACEMOLT_ENDPOINT too), else the legacy /mcp.
func simEndpointPath() string {
	if os.Getenv("ZOEA_SPACEMOLT_ENDPOINT") == "v2" || strings.HasSuffix(strings.TrimSuffix(os.Getenv("ZOEA_SPACEMOLT_URL"), "/"), "/mcp/v2") {
		return "/mcp/v2"
	}
	return "/mcp"
}
