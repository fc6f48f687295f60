package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/server"
)

// readyServer is a gRPC server whose readiness follows ready (checked every 10 ms).
func readyServer(t *testing.T, ready *atomic.Bool) string {
	t.Helper()
	srv := server.New(server.Options{Name: "peer", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CheckInterval: 10 * time.Millisecond,
		Checks: []server.Check{{Name: "dependency", Fn: func(context.Context) error {
			if !ready.Load() {
				return errors.New("down")
			}
			return nil
		}}}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Serve(ctx, lis) }()
	return lis.Addr().String()
}

// seed-demo waits for the runner's and the bus's readiness (compose starts it once their processes are live): it
// goes on once both are ready, and a runner that never gets ready is a sentence naming it.
func TestSeedDemoAwaitsReadiness(t *testing.T) {
	var runnerReady, busReady atomic.Bool
	busReady.Store(true)
	runner, bus := readyServer(t, &runnerReady), readyServer(t, &busReady)
	ep := &endpoints{runner: runner, bus: bus, memory: bus}
	c, err := ep.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = awaitReady(context.Background(), c, ep, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "the runner at "+runner+" is not ready after 300ms") {
		t.Fatalf("awaitReady with the runner not ready = %v, want a sentence naming the runner", err)
	}
	done := make(chan error, 1)
	go func() { done <- awaitReady(context.Background(), c, ep, time.Minute) }()
	runnerReady.Store(true)
	if err := <-done; err != nil {
		t.Fatalf("awaitReady once both are ready: %v", err)
	}
}
