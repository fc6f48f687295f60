package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zoeaswarm/zoea/libs/pgutil"
)

// prepareDatabase is `memory migrate -create-database` (and -recreate-database): it creates the database dbURL names
// when the server has none of that name, connecting to the server's maintenance database "postgres" with the same
// role (which needs CREATEDB), and explains any other reason it cannot connect (nothing listening, password refused,
// role missing), naming setup, the command that prepares this machine's Postgres, when one is given. recreate drops
// the database first, ending its sessions: `zoea dev --fresh` starts over that way. It lives here, not in the zoea CLI,
// because this binary links the Postgres driver anyway and the CLI need not.
func prepareDatabase(ctx context.Context, log *slog.Logger, dbURL string, recreate bool, setup string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("ZOEA_DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return errors.New("ZOEA_DATABASE_URL names no database (postgres://user:password@host:port/DATABASE)")
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if recreate {
		admin, err := adminConn(cctx, u, setup)
		if err != nil {
			return err
		}
		_, err = admin.Exec(cctx, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)")
		admin.Close(ctx)
		if err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		log.Info("dropped database", "database", name)
	}
	conn, err := pgx.Connect(cctx, dbURL)
	if err == nil {
		return conn.Close(ctx)
	}
	if pgutil.Diagnose(err) != pgutil.ProblemDatabaseMissing {
		return pgutil.ExplainConnect(err, dbURL, setup)
	}
	admin, err := adminConn(cctx, u, setup)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(cctx, "create database "+pgx.Identifier{name}.Sanitize()); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == pgerrcode.DuplicateDatabase {
			return nil // created meanwhile by someone else
		}
		advice := "give the role CREATEDB, or create the database yourself"
		if setup != "" {
			advice = setup + " creates it"
		}
		return fmt.Errorf("create database %s as role %s: %w (%s)", name, u.User.Username(), err, advice)
	}
	log.Info("created database", "database", name)
	return nil
}

// adminConn connects to the server's maintenance database with the credentials of u.
func adminConn(ctx context.Context, u *url.URL, setup string) (*pgx.Conn, error) {
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return nil, pgutil.ExplainConnect(err, admin.String(), setup)
	}
	return conn, nil
}
