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
	go func() { _ = srv.Serve(ctx, lis) }()
	deadline := time.Now().Add(10 * time.Second)
	for healthcheck(addr) != nil {
		if time.Now().After(deadline) {
			t.Fatal("healthcheck never succeeded against a SERVING server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	time.Sleep(200 * time.Millisecond)
	if err := healthcheck(addr); err == nil {
		t.Fatal("healthcheck succeeded against a stopped server")
	}
	if err := exec.Command(bin, "frobnicate").Run(); err == nil {
		t.Fatal("an unknown subcommand exited 0")
	}
}
