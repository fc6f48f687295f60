package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/pgtest"
)

func TestEnsureDatabaseCreatesOnceAndExplainsUnreachable(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t) // an existing database: ensureDatabase must accept it as is
	if err := ensureDatabase(ctx, url); err != nil {
		t.Fatalf("existing database: %v", err)
	}
	fresh := strings.Replace(url, "/zt_", "/zt_dev_", 1)
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, pgtest.AdminURL())
		if err == nil {
			_, _ = admin.Exec(ctx, "drop database if exists "+pgx.Identifier{strings.TrimPrefix(fresh[strings.LastIndex(fresh, "/"):], "/")}.Sanitize()+" with (force)")
			admin.Close(ctx)
		}
	})
	if err := ensureDatabase(ctx, fresh); err != nil {
		t.Fatalf("create: %v", err)
	}
	conn, err := pgx.Connect(ctx, fresh)
	if err != nil {
		t.Fatalf("database was not created: %v", err)
	}
	conn.Close(ctx)
	if err := ensureDatabase(ctx, fresh); err != nil {
		t.Fatalf("second run: %v", err)
	}

	err = ensureDatabase(ctx, "postgres://postgres@127.0.0.1:1/zoea?sslmode=disable")
	if err == nil || !strings.Contains(err.Error(), "postgres is not answering at 127.0.0.1:1") || !strings.Contains(err.Error(), "ZOEA_DATABASE_URL") {
		t.Fatalf("unreachable postgres should explain what to do, got: %v", err)
	}
}

func TestRedactURLHidesPassword(t *testing.T) {
	got := redactURL("postgres://zoea:hunter2@db:5432/zoea")
	if strings.Contains(got, "hunter2") {
		t.Fatalf("password leaked: %s", got)
	}
}
