package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/server"
)

func TestServeHTTPHealthAndGracefulShutdown(t *testing.T) {
	var healthy atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+server.HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	srv := &http.Server{Handler: mux}
	shutdownHooks := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(shutdownHooks) })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- server.ServeHTTP(ctx, "sim", server.Config{ShutdownTimeout: 20 * time.Second}, log, srv, lis)
	}()

	if err := server.HTTPHealthcheck(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("healthcheck of an unhealthy server: %v, want the 503 named", err)
	}
	healthy.Store(true)
	_, port, _ := net.SplitHostPort(addr)
	if err := server.HTTPHealthcheck(context.Background(), ":"+port); err != nil {
		t.Fatalf("healthcheck of a healthy server on a wildcard listen address: %v", err)
	}
	if err := server.HTTPHealthcheck(context.Background(), "127.0.0.1:1"); err == nil {
		t.Fatal("healthcheck of a closed port passed")
	}
	if err := server.HTTPHealthcheck(context.Background(), "no-port"); err == nil || !strings.Contains(err.Error(), "ZOEA_LISTEN_ADDR") {
		t.Fatalf("a listen address without a port: %v", err)
	}

	// A request in flight when ctx ends finishes: the shutdown hooks run, the listener closes, the call completes.
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	<-entered
	cancel()
	<-shutdownHooks
	select {
	case err := <-done:
		t.Fatalf("ServeHTTP returned with a request in flight: %v", err)
	default:
	}
	close(release)
	if got := <-body; got != "done" {
		t.Fatalf("in-flight request got %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
}

// Past the deadline, what is still open is closed and ServeHTTP returns.
func TestServeHTTPShutdownDeadline(t *testing.T) {
	entered := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done() // a call that never finishes by itself
	})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.ServeHTTP(ctx, "sim", server.Config{ShutdownTimeout: 50 * time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)), srv, lis)
	}()
	cut := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + lis.Addr().String() + "/stuck")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		cut <- err
	}()
	<-entered
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServeHTTP after its deadline: %v", err)
	}
	if err := <-cut; err == nil {
		t.Fatal("the stuck request was not cut at the deadline")
	}
}
