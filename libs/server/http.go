package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// HealthPath is where an HTTP service (the SpaceMolt simulator) answers its health check.
const HealthPath = "/healthz"

// ServeHTTP is Serve for a service that speaks HTTP instead of gRPC: it serves srv on lis until ctx ends, then
// shuts down the same way — in-flight requests get until cfg.ShutdownTimeout (default 10s) to finish, what is
// still open after it is closed. Functions registered with srv.RegisterOnShutdown (long-lived streams to end) run
// when the shutdown begins. A nil lis listens on cfg.ListenAddr. It logs the bound address as "http server
// listening", which svcbin.LoggedAddr reads.
func ServeHTTP(ctx context.Context, name string, cfg Config, log *slog.Logger, srv *http.Server, lis net.Listener) error {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", name)
	if lis == nil {
		l, err := net.Listen("tcp", cfg.ListenAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", cfg.ListenAddr, err)
		}
		lis = l
	}
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	log.Info("http server listening", "addr", lis.Addr().String())
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	select {
	case err := <-serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "deadline", timeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown deadline passed; closing remaining connections", "err", err)
		_ = srv.Close()
	} else {
		log.Info("stopped gracefully")
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http serve: %w", err)
	}
	return nil
}

// HTTPHealthcheck is Healthcheck for an HTTP service: it asks GET HealthPath at a listen address (":7100" is
// asked at 127.0.0.1) and wants 200. The simulator's `healthcheck` subcommand runs it for container probes.
func HTTPHealthcheck(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("ZOEA_LISTEN_ADDR: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+dialable(addr)+HealthPath, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health check %s: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check %s: %s %s", addr, HealthPath, resp.Status)
	}
	return nil
}
