package server

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// PeerServing asks the gRPC health service behind h, once, whether service ("" for the server as a whole) is
// SERVING. It is the one "is the peer serving" question: readiness checks on other services (PeerCheck), the
// healthcheck subcommand (Healthcheck) and waits (AwaitServing) all ask it.
func PeerServing(ctx context.Context, h healthpb.HealthClient, service string) error {
	resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return err
	}
	if st := resp.GetStatus(); st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health %s", st)
	}
	return nil
}

// PeerCheck is the readiness check "the service this one depends on is SERVING": name labels it in logs
// ("memory"), service is the health key asked ("" for the peer as a whole).
func PeerCheck(name string, conn grpc.ClientConnInterface, service string) Check {
	h := healthpb.NewHealthClient(conn)
	return Check{Name: name, Fn: func(ctx context.Context) error { return PeerServing(ctx, h, service) }}
}

// AwaitServing blocks until the health service behind conn reports service ("" for the whole server) SERVING, or
// ctx ends. It watches the health stream (waiting for the listener to accept, then receiving every status change),
// so it returns on the event itself rather than on a poll.
func AwaitServing(ctx context.Context, conn grpc.ClientConnInterface, service string) error {
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("health watch: %w", err)
	}
	for {
		r, err := w.Recv()
		if err != nil {
			return fmt.Errorf("never SERVING: %w", err)
		}
		if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
	}
}
