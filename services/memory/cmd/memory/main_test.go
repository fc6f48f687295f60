package main

import (
	"context"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/pgtest"
)

func TestRunMigrateThenServe(t *testing.T) {
	t.Setenv("ZOEA_DATABASE_URL", pgtest.New(t))
	t.Setenv("ZOEA_LISTEN_ADDR", "127.0.0.1:0")
	t.Setenv("ZOEA_SECRET_KEY", "")
	ctx := context.Background()
	if err := run(ctx, []string{"migrate"}); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"migrate"}); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := run(sctx, []string{"serve", "-migrate"}); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	t.Setenv("ZOEA_SECRET_KEY", "")
	if err := run(context.Background(), []string{"frobnicate"}); err == nil {
		t.Fatal("unknown command accepted")
	}
	t.Setenv("ZOEA_SECRET_KEY", "too-short")
	t.Setenv("ZOEA_DATABASE_URL", "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	if err := run(context.Background(), []string{"serve"}); err == nil {
		t.Fatal("malformed ZOEA_SECRET_KEY accepted")
	}
	t.Setenv("ZOEA_DB_MAX_CONNS", "many")
	if err := run(context.Background(), nil); err == nil {
		t.Fatal("unparseable ZOEA_DB_MAX_CONNS accepted")
	}
}
