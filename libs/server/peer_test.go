package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zoeaswarm/zoea/libs/server"
)

// A peer's readiness follows the peer's own health: NOT_SERVING and an unknown service fail, SERVING passes, and
// AwaitServing returns on the change itself.
func TestPeerCheckFollowsThePeersHealth(t *testing.T) {
	peer := server.New(server.Options{Name: "peer", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CheckInterval: time.Hour, Checks: []server.Check{{Name: "gate", Fn: func(ctx context.Context) error { return context.DeadlineExceeded }}}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- peer.Serve(ctx, lis) }()
	defer func() { cancel(); <-done }()
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	check := server.PeerCheck("peer", conn, "")
	if check.Name != "peer" {
		t.Fatalf("check named %q", check.Name)
	}
	// The readiness gate never passes: the peer stays NOT_SERVING.
	if err := check.Fn(ctx); err == nil {
		t.Fatal("a NOT_SERVING peer passed the check")
	}
	if err := server.PeerCheck("peer", conn, "zoea.nothing.v1.Nothing").Fn(ctx); err == nil {
		t.Fatal("an unknown health service passed the check")
	}
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	if err := server.AwaitServing(wctx, conn, ""); err == nil {
		t.Fatal("AwaitServing returned nil for a peer that never served")
	}
	// A liveness-style health service that is SERVING from the start passes at once.
	if err := server.PeerCheck("peer", conn, server.LivenessService).Fn(ctx); err != nil {
		t.Fatalf("liveness: %v", err)
	}
	if err := server.AwaitServing(ctx, conn, server.LivenessService); err != nil {
		t.Fatalf("AwaitServing(liveness): %v", err)
	}
}

// AwaitServing wakes on the transition NOT_SERVING → SERVING.
func TestAwaitServingReturnsOnTheTransition(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, hs)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	watching := make(chan error, 1)
	go func() { watching <- server.AwaitServing(ctx, conn, "") }()
	// The watch sees NOT_SERVING first; only the flip below may end it.
	h := healthpb.NewHealthClient(conn)
	if err := server.PeerServing(ctx, h, ""); err == nil {
		t.Fatal("PeerServing passed while NOT_SERVING")
	}
	select {
	case err := <-watching:
		t.Fatalf("AwaitServing returned before SERVING: %v", err)
	default:
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := <-watching; err != nil {
		t.Fatalf("AwaitServing: %v", err)
	}
	if err := server.PeerServing(ctx, h, ""); err != nil {
		t.Fatalf("PeerServing after the flip: %v", err)
	}
}
