package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
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
	tick        time.Duration
	turnPause   time.Duration
	myses       int
	mission     string
	duration    time.Duration
	minEarners  int
	quiet       bool
}

const defaultMission = "Commander here. Mission for the whole swarm: mine ore at main_belt in sol, sell it at " +
	"sol_central, keep your ship fuelled, and grow your credits. Report progress in your captain's log."

func devCmd() *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local swarm: every service on this machine, a demo swarm, live progress until Ctrl-C",
		Long: `dev starts memory, composer, bus, runner and spacemolt-sim from --bin against the local Postgres
(creating and migrating the database) and the local NATS (or an embedded one when none answers), creates a demo
swarm, broadcasts a mission and shows each mysis's state, last action and credits until Ctrl-C, which stops
everything cleanly. ZOEA_PROVIDER=ollama (with OLLAMA_HOST) or openai (with OPENAI_API_KEY) uses a real model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(cmd.Context(), o, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.bin, "bin", "./bin", "directory with the service binaries (make build)")
	f.StringVar(&o.stateDir, "state-dir", ".zoea", "directory for logs and the embedded NATS store")
	f.StringVar(&o.databaseURL, "database-url", envOr("ZOEA_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/zoea?sslmode=disable"), "Postgres database (created if missing)")
	f.StringVar(&o.natsURL, "nats-url", envOr("ZOEA_NATS_URL", "nats://127.0.0.1:4222"), "NATS server (an embedded one starts when none answers)")
	f.StringVar(&o.provider, "provider", envOr("ZOEA_PROVIDER", "autopilot"), "LLM provider for the demo myses: autopilot, ollama or openai")
	f.StringVar(&o.model, "model", os.Getenv("ZOEA_MODEL"), "model for the demo myses (default: the provider's)")
	f.DurationVar(&o.tick, "tick", envDuration("ZOEA_SIM_TICK", time.Second), "simulator tick (the real game's is 10s)")
	f.DurationVar(&o.turnPause, "turn-pause", envDuration("ZOEA_TURN_PAUSE", time.Second), "pause between autonomous turns")
	f.IntVar(&o.myses, "myses", 3, "size of the demo swarm")
	f.StringVar(&o.mission, "mission", defaultMission, "mission broadcast to the swarm")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	f.IntVar(&o.minEarners, "expect-earners", 0, "stop with success once this many myses earned credits; with --duration, fail if they have not by then")
	f.BoolVar(&o.quiet, "quiet", false, "print progress as plain lines instead of redrawing the screen")
	return cmd
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// proc is one child service.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func runDev(ctx context.Context, o *devOptions, out io.Writer) error {
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	for _, b := range []string{"memory", "composer", "bus", "runner", "spacemolt-sim"} {
		if _, err := os.Stat(filepath.Join(o.bin, b)); err != nil {
			return fmt.Errorf("missing binary %s in %s: run 'make build' (or 'make dev', which builds first)", b, o.bin)
		}
	}
	logDir := filepath.Join(o.stateDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	if err := ensureDatabase(ctx, o.databaseURL); err != nil {
		return err
	}
	fmt.Fprintf(out, "postgres: %s ready\n", redactURL(o.databaseURL))

	natsURL, stopNATS, err := ensureNATS(o.natsURL, filepath.Join(o.stateDir, "nats"))
	if err != nil {
		return err
	}
	defer stopNATS()
	if natsURL != o.natsURL {
		fmt.Fprintf(out, "nats: nothing answered at %s; started an embedded JetStream server at %s\n", o.natsURL, natsURL)
	} else {
		fmt.Fprintf(out, "nats: using %s\n", natsURL)
	}

	env := append(os.Environ(),
		"ZOEA_DATABASE_URL="+o.databaseURL,
		"ZOEA_NATS_URL="+natsURL,
		"ZOEA_MEMORY_ADDR=127.0.0.1:7001",
		"ZOEA_COMPOSER_ADDR=127.0.0.1:7002",
		"ZOEA_RUNNER_ADDR=127.0.0.1:7003",
		"ZOEA_BUS_ADDR=127.0.0.1:7004",
		"ZOEA_SPACEMOLT_URL=http://127.0.0.1:7100/mcp",
		"ZOEA_SIM_TICK="+o.tick.String(),
		"ZOEA_TURN_PAUSE="+o.turnPause.String(),
		"ZOEA_DEFAULT_PROVIDER="+o.provider,
	)
	if os.Getenv("ZOEA_SECRET_KEY") == "" {
		// A fixed development key so accounts survive restarts of the demo; never use it anywhere else.
		env = append(env, "ZOEA_SECRET_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	}

	migrate := exec.CommandContext(ctx, filepath.Join(o.bin, "memory"), "migrate")
	migrate.Env = env
	if b, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("memory migrate: %w\n%s", err, b)
	}
	fmt.Fprintln(out, "memory: schema migrated")

	var procs []*proc
	defer func() { stopAll(procs, out) }()
	for _, svc := range []struct{ name, addr string }{
		{"memory", "127.0.0.1:7001"},
		{"composer", "127.0.0.1:7002"},
		{"spacemolt-sim", "127.0.0.1:7100"},
		{"bus", "127.0.0.1:7004"},
		{"runner", "127.0.0.1:7003"},
	} {
		if conn, err := net.DialTimeout("tcp", svc.addr, 200*time.Millisecond); err == nil {
			conn.Close()
			return fmt.Errorf("%s: something already listens on %s (an earlier 'zoea dev'?); stop it first", svc.name, svc.addr)
		}
		p, err := startProc(o.bin, svc.name, env, logDir)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		if err := waitHealthy(ctx, p, svc.addr); err != nil {
			return fmt.Errorf("%s did not become healthy: %w (log: %s)", svc.name, err, filepath.Join(logDir, svc.name+".log"))
		}
		fmt.Fprintf(out, "%s: serving on %s\n", svc.name, svc.addr)
	}

	c, err := (&endpoints{runner: "127.0.0.1:7003", bus: "127.0.0.1:7004", memory: "127.0.0.1:7001",
		token: os.Getenv("ZOEA_ADMIN_TOKEN"), timeout: 30 * time.Second}).dial()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := createDemoSwarm(ctx, c, o, out); err != nil {
		return err
	}
	return devView(o, out)(ctx, c, o, procs, out) // devconsole.go: the console on a terminal, plain lines otherwise
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable database url)"
	}
	return u.Redacted()
}

// ensureDatabase creates the database named in dbURL on its server when it does not exist yet.
func ensureDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("ZOEA_DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin := *u
	admin.Path = "/postgres"
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, admin.String())
	if err != nil {
		return fmt.Errorf("postgres is not answering at %s: %v\n"+
			"  start it (Debian: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start, or bash .ci/services.sh),\n"+
			"  or point ZOEA_DATABASE_URL at a server you can reach", u.Host, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(cctx, "select exists(select 1 from pg_database where datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := conn.Exec(cctx, "create database "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return nil
}

// ensureNATS returns a NATS URL that answers: the configured one, or an embedded JetStream server.
func ensureNATS(natsURL, storeDir string) (string, func(), error) {
	nc, err := nats.Connect(natsURL, nats.Timeout(time.Second), nats.MaxReconnects(0))
	if err == nil {
		nc.Close()
		return natsURL, func() {}, nil
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: storeDir, NoLog: true, NoSigs: true})
	if err != nil {
		return "", nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return "", nil, errors.New("embedded nats did not start")
	}
	return srv.ClientURL(), func() { srv.Shutdown(); srv.WaitForShutdown() }, nil
}

func startProc(bin, name string, env []string, logDir string) (*proc, error) {
	logFile, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
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
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
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

func createDemoSwarm(ctx context.Context, c *clients, o *devOptions, out io.Writer) error {
	names := make([]string, o.myses)
	for i := range names {
		names[i] = fmt.Sprintf("mysis-%d", i+1)
		_, err := c.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: names[i], Provider: o.provider, Model: o.model})
		switch {
		case err == nil:
			fmt.Fprintf(out, "swarm: created %s (%s)\n", names[i], o.provider)
		case status.Code(err) == codes.AlreadyExists:
			fmt.Fprintf(out, "swarm: %s exists (history kept)\n", names[i])
		default:
			return fmt.Errorf("create %s: %w", names[i], err)
		}
	}
	// The mission goes out before anyone starts, so the first turn answers it instead of nudging an idle crew.
	resp, err := c.bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: o.mission})
	if err != nil {
		return fmt.Errorf("broadcast: %w", err)
	}
	fmt.Fprintf(out, "swarm: mission broadcast %s to %d myses\n", resp.GetBroadcastId(), resp.GetTargetCount())
	// A broadcast wakes idle myses by itself; starting explicitly also resumes myses a previous run left stopped.
	for _, name := range names {
		if _, err := c.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: name}); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
	}
	return nil
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

func fetchSimStats(ctx context.Context) (*simStats, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:7100/admin/stats", nil)
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

func watchProgress(ctx context.Context, c *clients, o *devOptions, procs []*proc, out io.Writer) error {
	start := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	earners := 0
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "\nstopping the swarm…")
			if o.duration > 0 && o.minEarners > 0 && earners < o.minEarners {
				return fmt.Errorf("only %d of %d myses earned credits in %s", earners, o.minEarners, o.duration)
			}
			return nil
		case <-t.C:
		}
		for _, p := range procs {
			select {
			case err := <-p.done:
				p.done <- err
				return fmt.Errorf("%s exited unexpectedly (%v); see %s", p.name, err, filepath.Join(o.stateDir, "logs", p.name+".log"))
			default:
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		list, err := c.swarm.ListMyses(cctx, &runnerv1.ListMysesRequest{PageSize: 1000})
		stats, serr := fetchSimStats(cctx)
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
		earners = renderProgress(out, o, time.Since(start), list.GetMyses(), earned)
		if o.minEarners > 0 && earners >= o.minEarners {
			fmt.Fprintf(out, "\n%d myses earned credits in %s\n", earners, time.Since(start).Round(time.Second))
			return nil
		}
	}
}

func renderProgress(out io.Writer, o *devOptions, elapsed time.Duration, list []*runnerv1.MysisStatus, earned map[string]int64) int {
	sort.Slice(list, func(i, j int) bool { return list[i].GetMysis().GetName() < list[j].GetMysis().GetName() })
	if !o.quiet {
		fmt.Fprint(out, "\033[H\033[2J")
	}
	fmt.Fprintf(out, "Zoea local swarm — %s elapsed — provider %s — Ctrl-C stops everything (logs in %s)\n\n",
		elapsed.Round(time.Second), o.provider, filepath.Join(o.stateDir, "logs"))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MYSIS\tSTATE\tTURNS\tCREDITS\tEARNED\tLAST ACTION\tLAST ERROR")
	earners := 0
	for _, s := range list {
		m := s.GetMysis()
		credits := "?"
		if s.GetCredits() >= 0 {
			credits = fmt.Sprint(s.GetCredits())
		}
		e := earned[m.GetAccountUsername()]
		if e > 0 {
			earners++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", m.GetName(), stateName(m.GetState()), s.GetTurns(), credits, e,
			clip(s.GetLastAction(), 40), clip(s.GetLastError(), 40))
	}
	tw.Flush()
	return earners
}
