package app

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zoeaswarm/zoea/libs/pgtest"
	"github.com/zoeaswarm/zoea/libs/server"
)

func TestRunMigrateThenServe(t *testing.T) {
	t.Setenv("ZOEA_DATABASE_URL", pgtest.New(t))
	t.Setenv("ZOEA_LISTEN_ADDR", "127.0.0.1:0")
	t.Setenv("ZOEA_SECRET_KEY", "")
	ctx := context.Background()
	if err := Main(ctx, []string{"migrate"}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := Main(ctx, []string{"migrate"}, "test"); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if err := Main(sctx, []string{"serve", "-migrate"}, "test"); err != nil {
		t.Fatalf("serve: %v", err)
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
	t.Setenv("ZOEA_DATABASE_URL", pgtest.New(t))
	t.Setenv("ZOEA_SECRET_KEY", "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("ZOEA_LISTEN_ADDR", addr)
	if err := Main(context.Background(), []string{"healthcheck"}, "test"); err == nil {
		t.Fatal("healthcheck passed with no server running")
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Main(sctx, []string{"serve", "-migrate"}, "test") }()
	defer func() { cancel(); <-done }()
	// Wait for the server's own event: a health Watch (waiting for the listener to accept, then streaming every
	// status change) until it reports SERVING. The deadline only bounds a broken run.
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	w, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := w.Recv()
		if err != nil {
			t.Fatalf("memory never reported SERVING: %v", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	if err := Main(context.Background(), []string{"healthcheck"}, "test"); err != nil {
		t.Fatalf("healthcheck failed against a serving memory: %v", err)
	}
}

// The server binary links no benchmark tooling (seeding and measuring live in cmd/memorybench) and no testing
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
		if strings.Contains(p, "/internal/bench") || p == "testing" || strings.HasPrefix(p, "testing/") {
			t.Errorf("the memory server links %s", p)
		}
	}
}
