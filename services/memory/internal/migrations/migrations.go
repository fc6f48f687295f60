// Package migrations holds the memory service's schema as numbered SQL files compiled into the binary and applies
// them with goose. A Postgres advisory session lock serialises migrators, so any number of instances may start
// with ZOEA_MIGRATE_ON_START at once; an unknown (newer) version in the database is an error, never a reason to
// wipe anything.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed sql/*.sql
var files embed.FS

// lockID is this service's advisory lock key ("zoea-mem" in ASCII), distinct from goose's default so another
// goose-managed schema in the same database cannot block it.
const lockID int64 = 0x7a6f65612d6d656d

// Result describes one applied migration.
type Result struct {
	Version int64
	Source  string
}

// Up applies every pending migration through pool and returns what it applied (nothing when current).
func Up(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) ([]Result, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return nil, err
	}
	current, latest, err := p.GetVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	if current > latest {
		// A newer binary migrated this database. Running old code against it, or "fixing" it, could lose data.
		return nil, fmt.Errorf("database schema version %d is newer than this binary's %d: deploy the newer memory service", current, latest)
	}
	res, err := p.Up(ctx)
	if err != nil {
		var partial *goose.PartialError
		if errors.As(err, &partial) && partial.Failed != nil {
			return nil, fmt.Errorf("migration %s failed: %w", partial.Failed.Source.Path, partial.Err)
		}
		return nil, fmt.Errorf("migrate: %w", err)
	}
	out := make([]Result, 0, len(res))
	for _, r := range res {
		out = append(out, Result{Version: r.Source.Version, Source: r.Source.Path})
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration.String())
		}
	}
	return out, nil
}

// Version returns the schema version applied in the database and the newest version this binary knows.
func Version(ctx context.Context, pool *pgxpool.Pool) (current, latest int64, err error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return 0, 0, err
	}
	return p.GetVersions(ctx)
}

func provider(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		return nil, err
	}
	// Retry the lock every second for up to 5 minutes: a concurrent migrator finishes well within that.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker),
		goose.WithTableName("memory_schema_migrations"),
		goose.WithDisableGlobalRegistry(true),
	)
}
