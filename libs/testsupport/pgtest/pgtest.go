// Package pgtest gives tests a fresh Postgres database on the real server (ZOEA_TEST_DATABASE_URL, default the
// local one), dropped afterwards, so test packages never share or leak state.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
)

// DefaultAdminURL is used when ZOEA_TEST_DATABASE_URL is unset: role zoea (CREATEDB), which .ci/services.sh creates.
const DefaultAdminURL = "postgres://zoea:zoea@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the database used to create and drop test databases.
func AdminURL() string {
	if u := os.Getenv("ZOEA_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// Create makes a new empty database named after prefix and returns its URL and a func that drops it.
func Create(ctx context.Context, prefix string) (string, func() error, error) {
	admin := AdminURL()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "zt_" + sanitize(prefix) + "_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: %w", pgutil.ExplainConnect(err, admin, "sudo bash .ci/services.sh (or set ZOEA_TEST_DATABASE_URL)"))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return dropDatabase(ctx, c, name)
	}
	return u.String(), drop, nil
}

// Main runs a package's tests against one fresh database whose URL it stores in *dbURL, and drops it afterwards.
// Without Postgres it follows testdep's rule (testdep.MissingMain): the package is skipped locally, fails in CI.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, "memory", &dbURL)) }.
func Main(m *testing.M, prefix string, dbURL *string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	u, drop, err := Create(ctx, prefix)
	cancel()
	if err != nil {
		// The same rule as New: skipped on a developer's machine, a failure in CI.
		return testdep.MissingMain("Postgres: %v", err)
	}
	*dbURL = u
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: drop:", err)
	}
	return code
}

// New returns the URL of a fresh database for one test, dropped when the test ends. An unreachable server is a
// missing dependency (testdep.Missing: skipped locally, a failure in CI).
func New(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, drop, err := Create(ctx, tb.Name())
	if err != nil {
		testdep.Missing(tb, "Postgres: %v", err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Errorf("pgtest: drop: %v", err)
		}
	})
	return u
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 24 {
			break
		}
	}
	return b.String()
}

// dropDatabase drops a test database and ends the sessions still in it. WITH (FORCE) ends every backend in the
// database, and a role that is not a superuser may end only its own: an autovacuum worker busy in the database
// (likely right after a test wrote many rows) belongs to no role, so FORCE then fails with insufficient_privilege
// (42501) — a fresh machine's make test runs as the ordinary role zoea and met exactly that. A plain DROP DATABASE
// stops autovacuum workers itself and waits for them, so on 42501 the role ends its own sessions and drops without
// FORCE.
func dropDatabase(ctx context.Context, c *pgx.Conn, name string) error {
	drop := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
	_, err := c.Exec(ctx, drop+" WITH (FORCE)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.InsufficientPrivilege {
		return err
	}
	if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND usename = current_user AND pid <> pg_backend_pid()`, name); err != nil {
		return fmt.Errorf("end the test's own sessions in %s: %w", name, err)
	}
	_, err = c.Exec(ctx, drop)
	return err
}

// Strings runs query on the database at dbURL and returns its rows' first column as text: a test reads back what a
// service stored, straight from Postgres, without a client of its own.
func Strings(tb testing.TB, dbURL, query string, args ...any) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		tb.Fatalf("pgtest: %s: %v", query, err)
	}
	var out []string
	for rows.Next() {
		var s *string
		if err := rows.Scan(&s); err != nil {
			tb.Fatalf("pgtest: %s: %v", query, err)
		}
		if s != nil {
			out = append(out, *s)
		}
	}
	if err := rows.Err(); err != nil {
		tb.Fatalf("pgtest: %s: %v", query, err)
	}
	return out
}
