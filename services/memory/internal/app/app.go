// Package app wires the memory service: configuration (libs/config), the Postgres pool and migrations, the secret
// box for account passwords, the pgstore adapter and the grpcapi transport registered on libs/server. cmd/memory
// calls Main (subcommands, logging, telemetry, then Run); tests call Run with a loopback listener.
package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/retry"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/memory/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
	"github.com/zoeaswarm/zoea/services/memory/internal/secretbox"
)

// Config is the memory service's configuration, read from the environment.
type Config struct {
	Server         server.Config
	DatabaseURL    string        `env:"ZOEA_DATABASE_URL" envDefault:"postgres://zoea:zoea@127.0.0.1:5432/zoea?sslmode=disable" secret:"true"`
	DBMaxConns     int32         `env:"ZOEA_DB_MAX_CONNS" envDefault:"16"`
	SecretKey      config.Secret `env:"ZOEA_SECRET_KEY"`
	MigrateOnStart bool          `env:"ZOEA_MIGRATE_ON_START"`
	// FTSIndexInterval > 0: tool results are full-text indexed by a background indexer running this often (they
	// become searchable within about one interval); 0: every row is indexed in its own append.
	FTSIndexInterval time.Duration `env:"ZOEA_FTS_INDEX_INTERVAL" envDefault:"500ms"`
}

// Main is the whole memory command; cmd/memory gives it a signal context and turns its error into an exit code.
//
//	memory [serve] [-migrate]   run the gRPC server (ZOEA_MIGRATE_ON_START=true also migrates first)
//	memory migrate              apply pending schema migrations and exit
//	  [-create-database]        … creating the database first when it does not exist
//	  [-recreate-database]      … dropping it and creating it anew first (zoea dev --fresh)
//	memory healthcheck          exit 0 when the local server reports SERVING (ready; --liveness: serving at all)
func Main(ctx context.Context, args []string, version string) error {
	cfg := Config{Server: server.Config{ListenAddr: ":7001"}}
	if err := config.LoadWith(&cfg); err != nil {
		return err
	}
	cmd, rest, err := server.Subcommand("memory", args, "serve", "migrate", "healthcheck", "help", "memory", "seed", "bench")
	if err != nil {
		return err
	}
	switch cmd {
	case "migrate":
		log := server.NewLogger(os.Stderr, cfg.Server.LogLevel)
		slog.SetDefault(log)
		return migrate(ctx, log, cfg, rest)
	case "seed", "bench":
		return fmt.Errorf("%q moved out of the server binary: run memorybench %s (services/memory/tools/cmd/memorybench)", cmd, cmd)
	case "healthcheck":
		// Container probes run this: distroless images have no shell or grpc_health_probe.
		return server.HealthcheckCommand(ctx, "memory", cfg.Server.ListenAddr, rest)
	case "help":
		fmt.Fprintln(os.Stderr, "usage: memory [serve [-migrate] | migrate [-create-database | -recreate-database] [-setup CMD] | healthcheck [--liveness]]")
		return nil
	}
	return serve(ctx, cfg, rest, version) // "serve", or "memory" (the binary's name as a subcommand)
}

// Options are wiring details that are not configuration: tests set them, production leaves them zero.
type Options struct {
	// Logger receives everything; slog.Default() when nil.
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on cfg.Server.ListenAddr (tests pass a loopback one).
	Listener net.Listener
}

func serve(ctx context.Context, cfg Config, args []string, version string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	migrateFlag := fs.Bool("migrate", cfg.MigrateOnStart, "apply pending migrations before serving (env ZOEA_MIGRATE_ON_START)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.MigrateOnStart = *migrateFlag
	log, stop, err := server.Start(ctx, "memory", version, cfg.Server, cfg)
	if err != nil {
		return err
	}
	defer stop()
	return Run(ctx, cfg, Options{Logger: log})
}

// Run serves the memory service with cfg until ctx ends: the secret box, the pool (migrating first when
// cfg.MigrateOnStart), the pgstore adapter and its background indexer, the domain service and the grpcapi transport
// on libs/server. It returns once the server has stopped gracefully.
func Run(ctx context.Context, cfg Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Info("database", "url", config.RedactURL(cfg.DatabaseURL))
	var box pgstore.Sealer
	if key := cfg.SecretKey.Reveal(); key != "" {
		k, err := secretbox.ParseKey(key)
		if err != nil {
			return fmt.Errorf("ZOEA_SECRET_KEY: %w", err)
		}
		b, err := secretbox.New(k)
		if err != nil {
			return fmt.Errorf("ZOEA_SECRET_KEY: %w", err)
		}
		box = b
	} else {
		log.Warn("ZOEA_SECRET_KEY is not set: account calls will fail with FailedPrecondition; everything else works")
	}
	if cfg.FTSIndexInterval < 0 {
		return fmt.Errorf("ZOEA_FTS_INDEX_INTERVAL must not be negative, got %s", cfg.FTSIndexInterval)
	}

	pool, err := pgutil.Open(ctx, cfg.DatabaseURL, "zoea-memory", cfg.DBMaxConns)
	if err != nil {
		return err
	}
	defer pool.Close()

	if cfg.MigrateOnStart {
		if err := migrateWithRetry(ctx, log, pool); err != nil {
			return err
		}
	} else {
		checkSchema(ctx, log, pool)
	}

	var storeOpts []pgstore.Option
	if cfg.FTSIndexInterval > 0 {
		storeOpts = append(storeOpts, pgstore.WithAsyncFTS())
	}
	store := pgstore.New(pool, box, storeOpts...)
	// The indexer also keeps search's term counts (pgstore/terms.go), so it runs whether or not tool results are
	// indexed asynchronously: with synchronous indexing it only counts, every 500 ms.
	every := cfg.FTSIndexInterval
	if every == 0 {
		every = 500 * time.Millisecond
	}
	defer background(ctx, every, (&pgstore.Indexer{Store: store, Log: log}).Run)()
	// Snapshots of each mysis's cost before an hour, for top-by-cost rankings over several hours (pgstore/before.go):
	// the last 168 hours' kept, others built when a ranking asks; checked and pruned every minute.
	defer background(ctx, time.Minute, (&pgstore.UsageSnapshotter{Store: store, Log: log}).Run)()
	srv := server.New(server.Options{
		Name:   "memory",
		Config: cfg.Server,
		Logger: log,
		Checks: []server.Check{{Name: "postgres", Fn: store.Ping}},
	})
	srv.Register(&memoryv1.MemoryService_ServiceDesc, grpcapi.New(memory.NewService(store)))
	if opts.Listener != nil {
		return srv.Serve(ctx, opts.Listener)
	}
	return srv.Run(ctx)
}

// migrateWithRetry waits for Postgres (a compose or k8s start may race it) and applies migrations: libs/retry's loop
// (doubling from 200ms to 5s, jittered) for at most migrateWait. A failure while Postgres answers is the migration
// itself, returned at once.
func migrateWithRetry(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) error {
	return retry.Do(ctx, retry.Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.5}, migrateWait, func() error {
		_, err := migrations.Up(ctx, pool, log)
		if err != nil && pool.Ping(ctx) == nil {
			return retry.Permanent(err)
		}
		return err
	}, func(err error, d time.Duration) {
		log.Warn("waiting for postgres to migrate", "err", err, "retry_in", d.String())
	})
}

// migrateWait bounds how long a start with ZOEA_MIGRATE_ON_START waits for Postgres.
const migrateWait = 2 * time.Minute

// checkSchema warns when the database is behind or ahead of this binary; it does not block start, because
// Postgres may not be up yet and readiness reports that.
func checkSchema(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cur, latest, err := migrations.Version(cctx, pool)
	switch {
	case err != nil:
		log.Warn("cannot read schema version (is postgres up and migrated? run `memory migrate`)", "err", err)
	case cur < latest:
		log.Warn("database schema is behind: run `memory migrate` or set ZOEA_MIGRATE_ON_START=true", "db_version", cur, "binary_version", latest)
	case cur > latest:
		log.Warn("database schema is newer than this binary", "db_version", cur, "binary_version", latest)
	}
}

func migrate(ctx context.Context, log *slog.Logger, cfg Config, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	create := fs.Bool("create-database", false, "create the database when the server has none of that name (the role needs CREATEDB)")
	recreate := fs.Bool("recreate-database", false, "drop the database first, ending its sessions, and create it anew: every mysis's history is lost (zoea dev --fresh)")
	setup := fs.String("setup", "", "the command that prepares this machine's Postgres, named in the advice when it refuses (zoea dev: sudo bash .ci/services.sh)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *create || *recreate {
		if err := prepareDatabase(ctx, log, cfg.DatabaseURL, *recreate, *setup); err != nil {
			return err
		}
	}
	log.Info("migrating", "database", config.RedactURL(cfg.DatabaseURL))
	pool, err := pgutil.Open(ctx, cfg.DatabaseURL, "zoea-memory-migrate", 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := migrations.Up(ctx, pool, log)
	if err != nil {
		return err
	}
	cur, _, err := migrations.Version(ctx, pool)
	if err != nil {
		return err
	}
	log.Info("schema up to date", "applied", len(res), "version", cur)
	return nil
}

// background runs run in a goroutine with a ticker of every, and returns the function that stops it: it cancels
// run's context, stops the ticker and waits for run to return.
func background(ctx context.Context, every time.Duration, run func(context.Context, <-chan time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	tick := time.NewTicker(every)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, tick.C)
	}()
	return func() { cancel(); tick.Stop(); <-done }
}
