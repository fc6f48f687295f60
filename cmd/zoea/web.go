package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/web"
)

// defaultWebListen is where `zoea web` listens unless told otherwise: this machine only.
const defaultWebListen = "127.0.0.1:7200"

func webCmd(ep *endpoints) *cobra.Command {
	var listen string
	var check bool
	cmd := &cobra.Command{
		Use:   "web",
		Short: "The commander's web console: the swarm, each mysis, the next request's anatomy and the spend, in a browser",
		Long: `web serves the web console on --listen (default ` + defaultWebListen + `, this machine only) against the
runner, bus and memory services, the ones zoea tui uses. Log in with the swarm's admin token (--token or
ZOEA_ADMIN_TOKEN); when none is set, web makes up a one-time login token and prints it here. The browser keeps a
session cookie only (HttpOnly, SameSite=Strict); every change is a form checked for its origin and CSRF token.
Listening beyond this machine (--listen 0.0.0.0:7200) is for a cluster: put TLS in front (an Ingress or proxy).
docs/CONSOLE.md describes the pages.`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if check {
				return checkWeb(cmd.Context(), listen)
			}
			c, err := ep.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			return serveWeb(cmd.Context(), ln, c.backend(), ep.adminToken(), ep.timeout, cmd.OutOrStdout(), "web console")
		},
	}
	cmd.Flags().StringVar(&listen, "listen", envOr("ZOEA_WEB_LISTEN", defaultWebListen), "address to serve the console on (host:port)")
	cmd.Flags().BoolVar(&check, "check", false, "only check that a console serves on --listen (a container's health check), and exit")
	return cmd
}

// backend is the one client layer both consoles use.
func (c *clients) backend() backend.GRPC {
	return backend.GRPC{Swarm: c.swarm, Bus: c.bus, Memory: c.memory}
}

// serveWeb serves the console on ln until ctx ends. With no admin token it makes up a login token and prints it: the
// only place it is ever shown.
func serveWeb(ctx context.Context, ln net.Listener, b backend.Backend, token string, timeout time.Duration, out io.Writer, what string) error {
	note := "log in with the swarm's admin token"
	if token == "" {
		token = oneTimeToken()
		note = "no admin token is set (ZOEA_ADMIN_TOKEN), so log in with this one made up for this run: " + token
	}
	srv := web.New(b, web.Options{Token: token, CallTimeout: timeout, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	addr := ln.Addr().(*net.TCPAddr)
	fmt.Fprintf(out, "%s: http://%s/ (%s)\n", what, ln.Addr(), note)
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(out, "%s: listening beyond this machine on %s: put TLS in front of it (an Ingress or a reverse proxy)\n", what, ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func oneTimeToken() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// checkWeb asks the console on listen for /healthz: the health check of its container, where there is no curl.
func checkWeb(ctx context.Context, listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no web console answers on %s: %w", listen, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the web console on %s answered %s", listen, resp.Status)
	}
	return nil
}
