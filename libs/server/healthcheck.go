package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Healthcheck asks the gRPC health service at addr whether the server is SERVING: its readiness (every readiness
// check passed, so its dependencies answer too).
func Healthcheck(ctx context.Context, addr string) error {
	return HealthcheckService(ctx, addr, "")
}

// HealthcheckService asks the gRPC health service at addr whether service ("" for the server's readiness,
// LivenessService for "the process serves, whatever its dependencies") is SERVING.
func HealthcheckService(ctx context.Context, addr, service string) error {
	conn, err := Dial(dialable(addr), "")
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := PeerServing(ctx, healthpb.NewHealthClient(conn), service); err != nil {
		what := "health check"
		if service != "" {
			what += " (" + service + ")"
		}
		return fmt.Errorf("%s %s: %w", what, addr, err)
	}
	return nil
}

// HealthcheckCommand is every gRPC service binary's `healthcheck` subcommand, so container health checks work in
// distroless images that have no shell:
//
//	<binary> healthcheck              exit 0 when the server on addr is ready (health "" SERVING)
//	<binary> healthcheck --liveness   exit 0 when its process serves at all (health "liveness"), whatever its
//	                                  dependencies: what docker compose's health check asks, so that a dependency
//	                                  down does not make this container unhealthy and `depends_on: service_healthy`
//	                                  refuse to start what waits for it
func HealthcheckCommand(ctx context.Context, service, addr string, args []string) error {
	fs := flag.NewFlagSet(service+" healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	liveness := fs.Bool("liveness", false, "ask the process's liveness instead of its readiness")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s healthcheck: %w (usage: %s healthcheck [--liveness])", service, err, service)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s healthcheck: unexpected argument %q (usage: %s healthcheck [--liveness])", service, fs.Arg(0), service)
	}
	if *liveness {
		return HealthcheckService(ctx, addr, LivenessService)
	}
	return Healthcheck(ctx, addr)
}

// dialable turns a listen address such as ":7001" into one a client can dial.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" || strings.HasPrefix(host, "[::]") {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
