package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/pgtest"
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
