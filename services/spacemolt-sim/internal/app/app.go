// Package app is the simulator's wiring: it reads the configuration (libs/config), opens or restores the game
// engine, mounts the MCP transport and the admin endpoints on one HTTP listener and runs until ctx ends.
// cmd/spacemolt-sim only gives it a signal context.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/admin"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/httpapi"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/statefile"
)

// Config is read from the environment. Rate limits are per account per minute; a negative value disables the limit.
type Config struct {
	// Server carries ZOEA_LISTEN_ADDR (default :7100), ZOEA_ADMIN_TOKEN (the admin endpoints' bearer token) and
	// ZOEA_SHUTDOWN_TIMEOUT, read as every service reads them (libs/server).
	Server             server.Config
	Tick               time.Duration `env:"ZOEA_SIM_TICK" envDefault:"10s"`
	Seed               int64         `env:"ZOEA_SIM_SEED" envDefault:"1"`
	RegistrationCode   config.Secret `env:"ZOEA_SIM_REGISTRATION_CODE"`
	SessionTTL         time.Duration `env:"ZOEA_SIM_SESSION_TTL" envDefault:"30m"`
	MCPSessionTTL      time.Duration `env:"ZOEA_SIM_MCP_SESSION_TTL" envDefault:"30m"`
	MutationsPerMinute int           `env:"ZOEA_SIM_MUTATIONS_PER_MIN" envDefault:"30"`
	ReadsPerMinute     int           `env:"ZOEA_SIM_READS_PER_MIN" envDefault:"300"`
	ChatPerMinute      int           `env:"ZOEA_SIM_CHAT_PER_MIN" envDefault:"20"`
	// Session caps over both MCP endpoints (issue 26: an initialize flood must not hold memory): beyond them an
	// initialize is HTTP 503 (total) or 429 (per client address) with Retry-After. A session that makes no request
	// within ZOEA_SIM_UNINIT_SESSION_TTL of its initialize is closed.
	MaxSessions          int           `env:"ZOEA_SIM_MAX_SESSIONS" envDefault:"2000"`
	MaxSessionsPerClient int           `env:"ZOEA_SIM_MAX_SESSIONS_PER_CLIENT" envDefault:"500"`
	UninitSessionTTL     time.Duration `env:"ZOEA_SIM_UNINIT_SESSION_TTL" envDefault:"30s"`
	// AuthPerMinute is the live server's shared limit on session creation, login and register per client address,
	// with escalating lock-outs (2 to 30 minutes). Negative disables it (load tests with hundreds of myses on one
	// address).
	AuthPerMinute int `env:"ZOEA_SIM_AUTH_PER_MIN" envDefault:"30"`
	// StateFile keeps the universe between runs: loaded at start when it exists, saved every SaveInterval and at
	// shutdown. Empty: every start is a fresh universe.
	StateFile    string        `env:"ZOEA_SIM_STATE_FILE"`
	SaveInterval time.Duration `env:"ZOEA_SIM_SAVE_INTERVAL" envDefault:"30s"`
	// GOGC defaults to 400 here: the MCP SDK allocates a 32 KiB decode buffer
	// per JSON message, so with Go's default of 100 garbage collection costs
	// about a third of the CPU of every call, while the live heap stays small.
	GOGC string `env:"GOGC" envDefault:"400"`
}

// LoadConfig reads and validates the configuration from the environment.
func LoadConfig() (Config, error) {
	cfg := Config{Server: server.Config{ListenAddr: ":7100"}}
	if err := config.LoadWith(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.validate(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

func (c Config) validate() error {
	switch {
	case c.Tick <= 0:
		return errors.New("ZOEA_SIM_TICK must be positive")
	case c.SessionTTL <= 0:
		return errors.New("ZOEA_SIM_SESSION_TTL must be positive")
	case c.StateFile != "" && c.SaveInterval <= 0:
		return errors.New("ZOEA_SIM_SAVE_INTERVAL must be positive")
	case c.MCPSessionTTL < 0:
		return errors.New("ZOEA_SIM_MCP_SESSION_TTL must not be negative")
	case c.MaxSessions <= 0 || c.MaxSessionsPerClient <= 0:
		return errors.New("ZOEA_SIM_MAX_SESSIONS and ZOEA_SIM_MAX_SESSIONS_PER_CLIENT must be positive")
	case c.UninitSessionTTL <= 0:
		return errors.New("ZOEA_SIM_UNINIT_SESSION_TTL must be positive")
	case c.AuthPerMinute == 0:
		return errors.New("ZOEA_SIM_AUTH_PER_MIN must be positive (or negative to disable)")
	case c.MutationsPerMinute == 0 || c.ReadsPerMinute == 0 || c.ChatPerMinute == 0:
		return errors.New("rate limits must be positive (or negative to disable)")
	}
	if _, err := gcPercent(c.GOGC); err != nil {
		return err
	}
	return nil
}

// gcPercent parses GOGC the way the runtime does ("off" disables the collector).
func gcPercent(v string) (int, error) {
	if v == "off" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("GOGC must be an integer or off, got %q", v)
	}
	return n, nil
}

// Main is the whole command: `spacemolt-sim` serves, `spacemolt-sim healthcheck` asks a running one for /healthz
// (container probes run it: distroless images have no shell or curl).
func Main(ctx context.Context, args []string, version string) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	cmd, _, err := server.Subcommand("spacemolt-sim", args, "serve", "healthcheck")
	if err != nil {
		return err
	}
	if cmd == "healthcheck" {
		return server.HTTPHealthcheck(ctx, cfg.Server.ListenAddr)
	}
	log, stop, err := server.Start(ctx, "spacemolt-sim", version, cfg.Server, cfg)
	if err != nil {
		return err
	}
	defer stop()
	return Run(ctx, cfg, Options{Logger: log})
}

// Options are wiring details that are not configuration: tests set them, production leaves them zero.
type Options struct {
	// Logger receives everything; slog.Default() when nil.
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on cfg.Server.ListenAddr (tests pass a loopback one).
	Listener net.Listener
}

// Run serves the simulator with cfg until ctx ends, then shuts the HTTP server down the way every service does
// (libs/server: in-flight calls get ZOEA_SHUTDOWN_TIMEOUT) and saves the state file (when there is one).
func Run(ctx context.Context, cfg Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	gc, err := gcPercent(cfg.GOGC)
	if err != nil {
		return err
	}
	debug.SetGCPercent(gc)
	engine, err := openEngine(cfg, log)
	if err != nil {
		return err
	}
	// The SDK logs every session at info level; a swarm would drown the log.
	sdkLog := server.NewLogger(os.Stderr, max(slog.LevelWarn, cfg.Server.LogLevel))
	mcpSrv := mcpserver.New(engine, mcpserver.Options{SessionTimeout: cfg.MCPSessionTTL, Logger: sdkLog})
	mcpV2 := mcpserver.NewV2(engine, mcpserver.Options{SessionTimeout: cfg.MCPSessionTTL, Logger: sdkLog})
	guard := mcpserver.NewGuard(engine, mcpserver.GuardOptions{
		MaxSessions: cfg.MaxSessions, MaxSessionsPerClient: cfg.MaxSessionsPerClient,
		UninitializedTTL: cfg.UninitSessionTTL, AuthPerMinute: cfg.AuthPerMinute,
	}, mcpSrv, mcpV2)
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard.Wrap(mcpSrv.Handler()))
	mux.Handle("/mcp/v2", guard.Wrap(mcpV2.Handler()))
	// The HTTP API v2 beside MCP, over the same engine and /mcp/v2's action table (internal/httpapi).
	api := httpapi.New(engine, mcpV2, httpapi.Options{Guard: guard, Logger: log})
	mux.Handle(httpapi.Prefix, api.Handler())
	mux.Handle(httpapi.Prefix+"/", api.Handler())
	admin.Register(mux, engine, admin.Options{Token: cfg.Server.AdminToken.Reveal(), Logger: log, Restarter: guard})
	// No write timeout: travel and jump calls block for many ticks.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// Open MCP sessions (streams) end as the shutdown begins, so the graceful stop does not wait for them.
	srv.RegisterOnShutdown(func() { mcpSrv.Close(); mcpV2.Close() })

	// The engine outlives the HTTP server so calls waiting on a tick can finish during shutdown.
	engineCtx, stopEngine := context.WithCancel(context.Background())
	defer stopEngine()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return engine.Run(engineCtx) })
	g.Go(func() error { return guard.Run(engineCtx) })
	if cfg.StateFile != "" {
		g.Go(func() error { return saveEvery(engineCtx, engine, cfg, log) })
	}
	g.Go(func() error {
		defer stopEngine()
		return server.ServeHTTP(gctx, "spacemolt-sim", cfg.Server, log, srv, opts.Listener)
	})
	err = g.Wait()
	if cfg.StateFile != "" {
		// The engine has stopped ticking: this save holds everything the last calls did.
		if serr := save(engine, cfg.StateFile); serr != nil {
			return errors.Join(err, fmt.Errorf("save state at shutdown: %w", serr))
		}
		log.Info("state saved", "file", cfg.StateFile)
	}
	return err
}

// openEngine continues the universe in cfg.StateFile when there is one, else starts a fresh one from the seed.
func openEngine(cfg Config, log *slog.Logger) (*game.Engine, error) {
	gcfg := game.Config{
		Seed: cfg.Seed, Tick: cfg.Tick, RegistrationCode: cfg.RegistrationCode.Reveal(), SessionTTL: cfg.SessionTTL,
		MutationsPerMinute: cfg.MutationsPerMinute, ReadsPerMinute: cfg.ReadsPerMinute, ChatPerMinute: cfg.ChatPerMinute,
	}
	if cfg.StateFile == "" {
		return game.New(gcfg), nil
	}
	st, found, err := statefile.Load(cfg.StateFile)
	if err != nil {
		return nil, fmt.Errorf("ZOEA_SIM_STATE_FILE: %w", err)
	}
	if !found {
		log.Info("no state file yet: a fresh universe", "file", cfg.StateFile)
		return game.New(gcfg), nil
	}
	engine, err := game.Restore(gcfg, st)
	if err != nil {
		return nil, fmt.Errorf("ZOEA_SIM_STATE_FILE %s: %w", cfg.StateFile, err)
	}
	log.Info("universe restored", "file", cfg.StateFile, "players", len(st.Players), "tick", st.Tick)
	return engine, nil
}

func save(engine *game.Engine, path string) error {
	st, err := engine.Snapshot()
	if err != nil {
		return err
	}
	return statefile.Save(path, st)
}

// saveEvery saves the universe every cfg.SaveInterval until ctx ends; a failed save is logged and retried at the
// next interval rather than stopping the game.
func saveEvery(ctx context.Context, engine *game.Engine, cfg Config, log *slog.Logger) error {
	t := time.NewTicker(cfg.SaveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := save(engine, cfg.StateFile); err != nil {
			log.Error("saving state failed", "file", cfg.StateFile, "err", err)
		}
	}
}
