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
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/web"
)

// defaultWebListen is where `zoea web` listens unless told otherwise: this machine only.
const defaultWebListen = "127.0.0.1:7200"

func webCmd(ep *endpoints) *cobra.Command {
	var listen, reach string
	var check bool
	var site webSite
	cmd := &cobra.Command{
		Use:   "web",
		Short: "The commander's web console: the swarm, each mysis, the next request's anatomy and the spend, in a browser",
		Long: `web serves the web console on --listen (default ` + defaultWebListen + `, this machine only) against the
runner, bus and memory services, the ones zoea tui uses. Log in with the swarm's admin token (--token or
ZOEA_ADMIN_TOKEN); when none is set, web makes up a one-time login token and prints it here. The browser keeps a
session cookie only (HttpOnly, SameSite=Strict); every change is a form checked for its origin and CSRF token.
Listening beyond this machine (--listen 0.0.0.0:7200) is for a cluster: put TLS in front (an Ingress or proxy).
When browsers reach the console at another address than --listen (a container's port published on the host, an
Ingress), give it as --url: web prints that address instead. docs/CONSOLE.md describes the pages.`,
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
			ln, err := listenWeb(cmd.Context(), listen, devStateDir)
			if err != nil {
				return err
			}
			if reach != "" {
				if err := checkWebURL(reach); err != nil {
					return err
				}
			}
			site.Addrs = ep.addrs()
			return serveWeb(cmd.Context(), ln, reach, site, c.backend(), ep.adminToken(), ep.timeout, cmd.OutOrStdout(), "web console")
		},
	}
	cmd.Flags().StringVar(&listen, "listen", envOr("ZOEA_WEB_LISTEN", defaultWebListen), "address to serve the console on (host:port)")
	cmd.Flags().StringVar(&reach, "url", envOr("ZOEA_WEB_URL", ""), "address browsers reach the console at, when it is not --listen (e.g. http://127.0.0.1:7200/ for a published container port)")
	cmd.Flags().StringSliceVar(&site.Hosts, "host", splitList(envOr("ZOEA_WEB_HOSTS", "")), "host names browsers reach the console by besides localhost, IP addresses and --url's (comma-separated); any other Host is refused, so DNS rebinding fails")
	cmd.Flags().BoolVar(&site.TrustForwardedProto, "trust-forwarded-proto", envOr("ZOEA_WEB_TRUST_FORWARDED_PROTO", "") == "true", "take X-Forwarded-Proto: https from the proxy in front as TLS (Secure cookies, HSTS); only when nothing but that proxy reaches the console")
	cmd.Flags().BoolVar(&check, "check", false, "only check that a console serves on --listen (a container's health check), and exit")
	return cmd
}

// devStateDir is where `zoea dev` keeps its process ids by default (its --state-dir), read by `zoea web` to tell the
// running swarm's console from anything else on the address.
const devStateDir = ".zoea"

// listenWeb listens on listen. When the address is taken it says by what, as far as it can tell: the web console of
// the swarm `zoea dev` runs (it records its console's address in <stateDir>/dev.pids), another web console (it
// answers /healthz), or some other program.
func listenWeb(ctx context.Context, listen, stateDir string) (net.Listener, error) {
	ln, err := net.Listen("tcp", listen)
	if err == nil {
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--listen %s: %w", listen, err)
	}
	open := "http://" + listen + "/"
	if f, _ := readPidFile(filepath.Join(stateDir, pidFileName)); f.running() && sameAddr(f.Launcher.Addr, listen) {
		return nil, fmt.Errorf("the web console of the running swarm ('zoea dev', pid %d) already listens on %s: open %s "+
			"and log in with the token its \"web console:\" line printed (or ZOEA_ADMIN_TOKEN); or --listen another address",
			f.Launcher.PID, listen, open)
	}
	if checkWeb(ctx, listen) == nil {
		return nil, fmt.Errorf("a web console already listens on %s: open %s; or --listen another address", listen, open)
	}
	return nil, fmt.Errorf("--listen %s: another program listens there (ss -ltnp shows which): --listen another address", listen)
}

// sameAddr: two host:port addresses that name the same listener ("localhost" and 127.0.0.1 alike).
func sameAddr(a, b string) bool {
	norm := func(s string) string {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return s
		}
		if h == "localhost" || h == "" {
			h = "127.0.0.1"
		}
		return net.JoinHostPort(h, p)
	}
	return a != "" && norm(a) == norm(b)
}

// backend is the one client layer both consoles use.
func (c *clients) backend() backend.GRPC {
	return backend.GRPC{Swarm: c.swarm, Bus: c.bus, Memory: c.memory}
}

// webSite is how browsers reach the console: the host names it answers to and whether a TLS proxy is in front.
type webSite struct {
	Hosts               []string
	TrustForwardedProto bool
	// Addrs are the swarm's service addresses, for the sentences of failed calls.
	Addrs map[string]string
}

// splitList is a comma-separated list without empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// serveWeb serves the console on ln until ctx ends, announcing it at reach (the address browsers use) when that is set.
// With no admin token it makes up a login token and prints it: the only place it is ever shown.
func serveWeb(ctx context.Context, ln net.Listener, reach string, site webSite, b backend.Backend, token string, timeout time.Duration, out io.Writer, what string) error {
	note := "log in with the swarm's admin token"
	if token == "" {
		token = oneTimeToken()
		note = "no admin token is set (ZOEA_ADMIN_TOKEN), so log in with this one made up for this run: " + token
	}
	hosts := slices.Clone(site.Hosts)
	if u, err := url.Parse(reach); reach != "" && err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	srv := web.New(b, web.Options{Token: token, CallTimeout: timeout, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Hosts: hosts, TrustForwardedProto: site.TrustForwardedProto, Addrs: site.Addrs})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	for _, line := range webBanner(what, ln.Addr().(*net.TCPAddr), reach, note) {
		fmt.Fprintln(out, line)
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

// webBanner is what the console says when it starts: where to open it, and a warning when it is reachable beyond this
// machine without TLS in front. A reach address on loopback (a container's port published on the host's loopback)
// or over https (an Ingress with TLS) needs no warning, whatever the listener inside the container is bound to.
func webBanner(what string, addr *net.TCPAddr, reach, note string) []string {
	if reach == "" {
		lines := []string{fmt.Sprintf("%s: http://%s/ (%s)", what, addr, note)}
		if !addr.IP.IsLoopback() {
			lines = append(lines, fmt.Sprintf("%s: listening beyond this machine on %s: put TLS in front of it (an Ingress or a reverse proxy)", what, addr))
		}
		return lines
	}
	lines := []string{fmt.Sprintf("%s: %s (listening on %s; %s)", what, reach, addr, note)}
	u, err := url.Parse(reach)
	if addr.IP.IsLoopback() || (err == nil && (u.Scheme == "https" || isLoopbackHost(u.Hostname()))) {
		return lines
	}
	return append(lines, fmt.Sprintf("%s: reachable beyond this machine at %s without TLS: put TLS in front of it (an Ingress or a reverse proxy)", what, reach))
}

// isLoopbackHost: localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkWebURL refuses a --url a browser could not open, naming the flag.
func checkWebURL(reach string) error {
	u, err := url.Parse(reach)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: give the address browsers open, such as http://127.0.0.1:7200/", reach)
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
