package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/pgutil"
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

// zoea dev's database step runs in the memory binary (`memory migrate -create-database`, -recreate-database for
// --fresh), so this CLI does not link the Postgres driver; what the user reads stays the sentence it printed when it
// did the step itself.
func TestDevDatabaseStepRunsInTheMemoryBinary(t *testing.T) {
	bin := t.TempDir()
	buildBinary(t, bin, "memory", "./services/memory/cmd/memory")
	ctx := context.Background()
	logs := t.TempDir()
	existing := pgtest.New(t) // an existing database: used as it is
	if err := migrateDatabase(ctx, bin, existing, false, logs); err != nil {
		t.Fatalf("existing database: %v", err)
	}
	fresh := strings.Replace(existing, "/zt_", "/zt_dev_", 1)
	if !strings.Contains(fresh, "?") {
		t.Fatalf("the test wants a URL with a query string, as the default has: %s", fresh)
	}
	dropAfter(t, fresh)
	if err := migrateDatabase(ctx, bin, fresh, true, logs); err != nil {
		t.Fatalf("--fresh of a database that does not exist yet: %v", err)
	}
	if !dbExists(t, dbName(t, fresh)) {
		t.Fatalf("database %s was not created", dbName(t, fresh))
	}
	if err := migrateDatabase(ctx, bin, fresh, false, logs); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if log, err := os.ReadFile(filepath.Join(logs, "migrate.log")); err != nil || !strings.Contains(string(log), "schema up to date") {
		t.Errorf("migrate.log: %v\n%s", err, log)
	}

	err := migrateDatabase(ctx, bin, "postgres://zoea:zoea@127.0.0.1:1/zoea?sslmode=disable", false, logs)
	want := "nothing listens at 127.0.0.1:1: start Postgres (sudo bash .ci/services.sh does it), or point ZOEA_DATABASE_URL at a running server"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), `"level"`) {
		t.Fatalf("unreachable postgres should say so and what to do, and nothing else, got: %v", err)
	}
	u, _ := url.Parse(existing)
	u.User = url.UserPassword("zt_no_such_role", "pw")
	err = migrateDatabase(ctx, bin, u.String(), false, logs)
	if err == nil || !strings.Contains(err.Error(), `role "zt_no_such_role"`) {
		t.Fatalf("a missing role should be named, got: %v", err)
	}
}

func TestMigrateErrorIsTheSentence(t *testing.T) {
	out := `{"time":"…","level":"INFO","msg":"migrating"}` + "\nmemory: nothing listens at h:1: start Postgres\n  (dial tcp: refused)\n"
	if got, want := migrateError(out), "nothing listens at h:1: start Postgres\n  (dial tcp: refused)"; got != want {
		t.Errorf("migrateError = %q, want %q", got, want)
	}
	if got := migrateError(`{"level":"ERROR"}` + "\n"); got != "" {
		t.Errorf("only log lines: %q, want none", got)
	}
}

// The CLI writes the default database URL out rather than import libs/pgutil (which links the driver): the two agree.
func TestDefaultDatabaseURLIsPgutils(t *testing.T) {
	if defaultDatabaseURL != pgutil.DefaultURL {
		t.Fatalf("cmd/zoea's default database URL %q differs from pgutil.DefaultURL %q", defaultDatabaseURL, pgutil.DefaultURL)
	}
}

// buildBinary builds the package pkg (a path from the repository root) into dir/name.
func buildBinary(t *testing.T, dir, name, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
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
	if strings.Contains(err.Error(), "running here now") {
		t.Fatalf("a dead launcher's leftovers are not a running swarm: %v", err)
	}
}

// A second make dev beside a running one is told that a swarm runs now, since when, and how to watch or stop it:
// not that "an earlier 'zoea dev'" left something to clean up.
func TestPortsFreeSaysASwarmIsRunning(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	addrs := freeAddrs(t)
	addrs.runner = l.Addr().String()
	// The launcher is alive: a process that is not this one (portsFree runs in the launcher it reports on), started
	// here and waited for, so its pid stays this test's child until the test ends.
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	launched := time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local)
	pf := &pidFile{path: filepath.Join(dir, pidFileName), Launched: launched,
		Launcher: procRecord{Name: "zoea dev", PID: sleeper.Process.Pid, Started: startTime(sleeper.Process.Pid), Addr: addrs.web}}
	for _, name := range []string{"memory", "bus", "runner"} {
		if err := pf.add(name, addrs.of(name), os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	err = portsFree(dir, addrs)
	if err == nil {
		t.Fatal("a taken port passed")
	}
	for _, want := range []string{
		"a swarm is running here now (zoea dev, launched at 2026-03-04 05:06:07, pid " + strconv.Itoa(sleeper.Process.Pid) + ")",
		"./bin/zoea tui --runner " + addrs.runner + " --bus " + addrs.bus + " --memory " + addrs.memory,
		"its web console at http://" + addrs.web + "/",
		"./bin/zoea dev --stop",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "earlier") {
		t.Errorf("a running swarm is not an earlier one: %v", err)
	}
	// On the default ports the console needs no flags.
	def := &pidFile{Launcher: procRecord{Name: "zoea dev", PID: 42}}
	for name, addr := range map[string]string{"memory": "127.0.0.1:7001", "runner": "127.0.0.1:7003", "bus": "127.0.0.1:7004"} {
		def.Services = append(def.Services, procRecord{Name: name, Addr: addr})
	}
	if msg := runningSwarm(def).Error(); !strings.Contains(msg, "with ./bin/zoea tui; stop it") {
		t.Errorf("default ports: %s", msg)
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
