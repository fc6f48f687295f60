package app

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

// adminExec runs sql on the test server's maintenance database.
func adminExec(t *testing.T, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func dbExists(t *testing.T, name string) bool {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var ok bool
	if err := admin.QueryRow(ctx, "select exists(select 1 from pg_database where datname = $1)", name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// hasTable reports whether the database at dbURL has a table of that name in its public schema.
func hasTable(t *testing.T, dbURL, table string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "select to_regclass('public.' || $1) is not null", table).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// memory migrate -create-database makes the database zoea dev needs when it is missing, -recreate-database starts it
// over (zoea dev --fresh), and a server that refuses says why and what to run, as zoea dev printed when it did this
// itself.
func TestMigrateCreatesAndRecreatesTheDatabase(t *testing.T) {
	t.Setenv("ZOEA_SECRET_KEY", "")
	ctx := context.Background()
	existing := pgtest.New(t)
	migrate := func(dbURL string, flags ...string) error {
		t.Setenv("ZOEA_DATABASE_URL", dbURL)
		return Main(ctx, append([]string{"migrate"}, flags...), "test")
	}
	if err := migrate(existing, "-create-database"); err != nil {
		t.Fatalf("an existing database is used as it is: %v", err)
	}
	fresh := strings.Replace(existing, "/zt_", "/zt_new_", 1)
	if !strings.Contains(fresh, "?") {
		t.Fatalf("the test wants a URL with a query string, as the default has: %s", fresh)
	}
	u, _ := url.Parse(fresh)
	name := strings.TrimPrefix(u.Path, "/")
	t.Cleanup(func() { adminExec(t, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)") })
	if err := migrate(fresh); err == nil {
		t.Fatal("plain migrate of a missing database succeeded: it must not create one unasked")
	}
	if err := migrate(fresh, "-create-database"); err != nil {
		t.Fatalf("create: %v", err)
	}
	if !dbExists(t, name) || !hasTable(t, fresh, "myses") {
		t.Fatalf("database %s was not created and migrated", name)
	}
	if err := migrate(fresh, "-create-database"); err != nil {
		t.Fatalf("second run: %v", err)
	}
	// A session still open on the database (a service of an earlier swarm) does not stop the drop.
	session, err := pgx.Connect(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close(ctx)
	if _, err := session.Exec(ctx, "create table zt_left_over (id int)"); err != nil {
		t.Fatal(err)
	}
	if err := migrate(fresh, "-recreate-database"); err != nil {
		t.Fatalf("recreate: %v", err)
	}
	if hasTable(t, fresh, "zt_left_over") || !hasTable(t, fresh, "myses") {
		t.Fatal("-recreate-database did not start over with a migrated, empty database")
	}

	setup := []string{"-create-database", "-setup", "sudo bash .ci/services.sh"}
	err = migrate("postgres://zoea:zoea@127.0.0.1:1/zoea?sslmode=disable", setup...)
	if err == nil || !strings.Contains(err.Error(), "nothing listens at 127.0.0.1:1") || !strings.Contains(err.Error(), "(sudo bash .ci/services.sh does it)") {
		t.Fatalf("unreachable postgres should say so and what to do, got: %v", err)
	}
	bad, _ := url.Parse(existing)
	bad.User = url.UserPassword("zt_no_such_role", "pw")
	err = migrate(bad.String(), setup...)
	if err == nil || !strings.Contains(err.Error(), `role "zt_no_such_role"`) || !strings.Contains(err.Error(), ".ci/services.sh") {
		t.Fatalf("a missing role should be named, got: %v", err)
	}
	if strings.Contains(err.Error(), "pw@") {
		t.Fatalf("the password leaked: %v", err)
	}
}
