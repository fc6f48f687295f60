package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

// dbName is the database a URL names, without the query string.
func dbName(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// dropAfter drops the database of raw when the test ends.
func dropAfter(t *testing.T, raw string) {
	t.Helper()
	name := dbName(t, raw)
	t.Cleanup(func() {
		ctx := context.Background()
		admin, err := pgx.Connect(ctx, pgtest.AdminURL())
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)"); err != nil {
			t.Errorf("cleanup: drop %s: %v", name, err)
		}
	})
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

func TestEnsureDatabaseCreatesOnceAndExplainsUnreachable(t *testing.T) {
	ctx := context.Background()
	existing := pgtest.New(t) // an existing database: ensureDatabase must accept it as is
	if err := ensureDatabase(ctx, existing); err != nil {
		t.Fatalf("existing database: %v", err)
	}
	fresh := strings.Replace(existing, "/zt_", "/zt_dev_", 1)
	if !strings.Contains(fresh, "?") {
		t.Fatalf("the test wants a URL with a query string, as the default has: %s", fresh)
	}
	dropAfter(t, fresh)
	if err := ensureDatabase(ctx, fresh); err != nil {
		t.Fatalf("create: %v", err)
	}
	if !dbExists(t, dbName(t, fresh)) {
		t.Fatalf("database %s was not created", dbName(t, fresh))
	}
	if err := ensureDatabase(ctx, fresh); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if err := dropDatabase(ctx, fresh); err != nil {
		t.Fatalf("--fresh drop: %v", err)
	}
	if dbExists(t, dbName(t, fresh)) {
		t.Fatal("--fresh left the database")
	}
	if err := dropDatabase(ctx, fresh); err != nil {
		t.Fatalf("dropping a missing database must be fine: %v", err)
	}

	err := ensureDatabase(ctx, "postgres://zoea:zoea@127.0.0.1:1/zoea?sslmode=disable")
	if err == nil || !strings.Contains(err.Error(), "nothing listens at 127.0.0.1:1") || !strings.Contains(err.Error(), ".ci/services.sh") {
		t.Fatalf("unreachable postgres should say so and what to do, got: %v", err)
	}
	u, _ := url.Parse(existing)
	u.User = url.UserPassword("zt_no_such_role", "pw")
	err = ensureDatabase(ctx, u.String())
	if err == nil || !strings.Contains(err.Error(), `role "zt_no_such_role"`) {
		t.Fatalf("a missing role should be named, got: %v", err)
	}
}

// The cleanup above must really drop what it created: the name comes from the path, not the query string.
func TestDBNameIgnoresTheQuery(t *testing.T) {
	if got := dbName(t, "postgres://zoea:zoea@127.0.0.1:5432/zt_dev_abc?sslmode=disable"); got != "zt_dev_abc" {
		t.Fatalf("dbName = %q", got)
	}
}

func TestDevAddrsDefaultToLoopback(t *testing.T) {
	if a := devAddrsFor("0.0.0.0", 7000); a.web != "127.0.0.1:7200" {
		t.Fatalf("with --host 0.0.0.0 the web console listens on %s, want loopback", a.web)
	}
	a := devAddrsFor("127.0.0.1", 7000)
	if a != (devAddrs{memory: "127.0.0.1:7001", composer: "127.0.0.1:7002", runner: "127.0.0.1:7003", bus: "127.0.0.1:7004", sim: "127.0.0.1:7100", web: "127.0.0.1:7200"}) {
		t.Fatalf("default addresses = %+v", a)
	}
	cmd := devCmd()
	if h := cmd.Flags().Lookup("host").DefValue; h != "127.0.0.1" && os.Getenv("ZOEA_DEV_HOST") == "" {
		t.Fatalf("zoea dev must listen on 127.0.0.1 by default, --host defaults to %q", h)
	}
}

func TestPortsFreeNamesTheHolder(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	addrs := freeAddrs(t)
	addrs.runner = l.Addr().String()
	err = portsFree(dir, addrs)
	if err == nil || !strings.Contains(err.Error(), "runner: "+addrs.runner+" is taken by a process zoea did not start") ||
		!strings.Contains(err.Error(), "zoea dev --stop") {
		t.Fatalf("unknown holder: %v", err)
	}
	// Recorded by an earlier run: the pid is named (this test process stands in for the runner).
	pf := &pidFile{path: filepath.Join(dir, pidFileName), Launcher: procRecord{Name: "zoea dev", PID: 1 << 22}}
	if err := pf.add("runner", addrs.runner, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	err = portsFree(dir, addrs)
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())+" (runner from an earlier 'zoea dev')") {
		t.Fatalf("recorded holder: %v", err)
	}
}

// freeAddrs takes six free loopback ports (closed again, so the services can bind them).
func freeAddrs(t *testing.T) devAddrs {
	t.Helper()
	var got []string
	var ls []net.Listener
	for range 6 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		got = append(got, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return devAddrs{memory: got[0], composer: got[1], runner: got[2], bus: got[3], sim: got[4], web: got[5]}
}
