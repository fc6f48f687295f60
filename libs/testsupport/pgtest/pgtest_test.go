package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

func TestFreshDatabaseIsDropped(t *testing.T) {
	ctx := context.Background()
	url, drop, err := pgtest.Create(ctx, "harness")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := conn.QueryRow(ctx, "select current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, "select count(*) from pg_database where datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after drop", name)
	}
}

// Without Postgres, Main follows testdep's rule instead of always exiting 1: 0 locally (skipped), 1 in CI; the
// package's tests do not run either way.
func TestMainWithoutPostgresFollowsTestdep(t *testing.T) {
	t.Setenv("ZOEA_TEST_DATABASE_URL", "postgres://nobody@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	var url string
	t.Setenv("CI", "")
	if code := pgtest.Main(nil, "nopg", &url); code != 0 || url != "" {
		t.Fatalf("locally: exit %d, url %q; want 0 and no database", code, url)
	}
	t.Setenv("CI", "true")
	if code := pgtest.Main(nil, "nopg", &url); code != 1 || url != "" {
		t.Fatalf("in CI: exit %d, url %q; want 1 and no database", code, url)
	}
}
