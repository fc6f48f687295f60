package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Healthcheck asks the gRPC health service at addr whether it is SERVING. Every service binary exposes it as a
// `healthcheck` subcommand, so container health checks work in distroless images that have no shell.
func Healthcheck(ctx context.Context, addr string) error {
	conn, err := Dial(dialable(addr), "")
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := PeerServing(ctx, healthpb.NewHealthClient(conn), ""); err != nil {
		return fmt.Errorf("health check %s: %w", addr, err)
	}
	return nil
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
