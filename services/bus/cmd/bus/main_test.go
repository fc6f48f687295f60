package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zoeaswarm/zoea/libs/server"
)

// The healthcheck subcommand is what container health checks run: exit 0 only when the server reports SERVING.
func TestHealthcheckSubcommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "bus")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	healthcheck := func(addr string) error {
		cmd := exec.Command(bin, "healthcheck")
		cmd.Env = append(os.Environ(), "ZOEA_LISTEN_ADDR="+addr)
		return cmd.Run()
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	srv := server.New(server.Options{Name: "bus", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CheckInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	// Wait for SERVING on a health watch (pushed, no polling), then the subcommand must agree.
	conn, err := server.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	w, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := w.Recv()
		if err != nil {
			t.Fatalf("server never reported SERVING: %v", err)
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	wcancel()
	if err := healthcheck(addr); err != nil {
		t.Fatalf("healthcheck failed against a SERVING server: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if err := healthcheck(addr); err == nil {
		t.Fatal("healthcheck succeeded against a stopped server")
	}
	if err := exec.Command(bin, "frobnicate").Run(); err == nil {
		t.Fatal("an unknown subcommand exited 0")
	}
}
