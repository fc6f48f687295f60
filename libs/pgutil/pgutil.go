// Package pgutil opens pgx connection pools the way every Zoea store wants them: traced with OpenTelemetry,
// health-checked, and reconnecting on their own after a Postgres restart.
package pgutil

import (
	"context"
	"fmt"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open parses url and returns a pool whose connections name application (Postgres' application_name, seen in
// pg_stat_activity, so an operator or a soak can tell who holds the connections) unless url names one itself. It does
// not wait for the server: readiness checks use Ping.
func Open(ctx context.Context, url, application string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set && application != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = application
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer()
	// Dead connections are found by health checks and replaced, so a Postgres restart heals without a process one.
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return pool, nil
}

// DefaultURL is the database every local tool uses when ZOEA_DATABASE_URL is unset: the zoea role and database
// that .ci/services.sh creates on the local Postgres. The password works with Debian's default pg_hba.conf
// (scram-sha-256 on 127.0.0.1) and is ignored where the server trusts local connections.
const DefaultURL = "postgres://zoea:zoea@127.0.0.1:5432/zoea?sslmode=disable"
