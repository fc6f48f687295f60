package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"

	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

func TestMigrateSubcommandIsIdempotent(t *testing.T) {
	t.Setenv("ZOEA_DATABASE_URL", pgtest.New(t))
	t.Setenv("ZOEA_SECRET_KEY", "")
	ctx := context.Background()
	if err := Main(ctx, []string{"migrate"}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := Main(ctx, []string{"migrate"}, "test"); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
}

// startRun is the service as production wires it: Run on a loopback listener the test holds, so no other process
// can take the port between choosing it and serving on it. It returns the address once health reports SERVING.
func startRun(t *testing.T, cfg Config) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Listener: lis})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	})
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// The deadline only bounds a broken run: AwaitServing returns on the health change itself.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := server.AwaitServing(wctx, conn, memoryv1.MemoryService_ServiceDesc.ServiceName); err != nil {
		t.Fatalf("memory: %v", err)
	}
	return lis.Addr().String()
}

func testConfig(t *testing.T) Config {
	return Config{DatabaseURL: pgtest.New(t), DBMaxConns: 4, MigrateOnStart: true, FTSIndexInterval: 10 * time.Millisecond}
}

// Run on a fresh database migrates it (MigrateOnStart), serves the MemoryService and stops cleanly with ctx.
func TestRunMigratesAndServes(t *testing.T) {
	addr := startRun(t, testConfig(t))
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mem := memoryv1.NewMemoryServiceClient(conn)
	ctx := context.Background()
	created, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: "run-test", Provider: "autopilot", SystemPrompt: "play"})
	if err != nil {
		t.Fatalf("CreateMysis on the served memory: %v", err)
	}
	got, err := mem.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: created.GetMysis().GetId()})
	if err != nil || got.GetMysis().GetName() != "run-test" {
		t.Fatalf("GetMysis = %v, %v", got, err)
	}
	// Accounts need ZOEA_SECRET_KEY: without one the call says so instead of storing a password in clear.
	_, err = mem.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot-one", Password: "hunter22", Empire: "solarian"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("CreateAccount without a secret key: %v, want FailedPrecondition", err)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	t.Setenv("ZOEA_SECRET_KEY", "")
	if err := Main(context.Background(), []string{"frobnicate"}, "test"); err == nil {
		t.Fatal("unknown command accepted")
	}
	t.Setenv("ZOEA_SECRET_KEY", "too-short")
	t.Setenv("ZOEA_DATABASE_URL", "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	if err := Main(context.Background(), []string{"serve"}, "test"); err == nil {
		t.Fatal("malformed ZOEA_SECRET_KEY accepted")
	}
	t.Setenv("ZOEA_DB_MAX_CONNS", "many")
	if err := Main(context.Background(), nil, "test"); err == nil {
		t.Fatal("unparseable ZOEA_DB_MAX_CONNS accepted")
	}
}

func TestHealthcheckSubcommand(t *testing.T) {
	t.Setenv("ZOEA_SECRET_KEY", "")
	// Port 1 (tcpmux) is privileged and unserved here: the probe must fail.
	t.Setenv("ZOEA_LISTEN_ADDR", "127.0.0.1:1")
	if err := Main(context.Background(), []string{"healthcheck"}, "test"); err == nil {
		t.Fatal("healthcheck passed with no server running")
	}
	addr := startRun(t, testConfig(t))
	t.Setenv("ZOEA_LISTEN_ADDR", addr)
	if err := Main(context.Background(), []string{"healthcheck"}, "test"); err != nil {
		t.Fatalf("healthcheck failed against a serving memory: %v", err)
	}
}

// The server binary links no benchmark tooling (seeding and measuring live in tools/cmd/memorybench) and no testing
// package.
func TestServerLinksNoBenchTooling(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages", len(deps))
	}
	for _, p := range deps {
		if strings.Contains(p, "/benchkit") || strings.Contains(p, "/services/memory/tools/") || p == "testing" || strings.HasPrefix(p, "testing/") {
			t.Errorf("the memory server links %s", p)
		}
	}
}
