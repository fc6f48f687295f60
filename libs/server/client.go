package server

import (
	"context"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// Dial opens a client connection to another Zoea service with tracing and, when token is set, the admin bearer
// token on every call. Connections are lazy: Dial does not wait for the peer.
func Dial(addr, token string, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingPolicy":"round_robin"}`),
		// Servers accept and may answer up to chat.MaxMessageBytes (see New); so do clients.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(chat.MaxMessageBytes), grpc.MaxCallSendMsgSize(chat.MaxMessageBytes)),
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	conn, err := grpc.NewClient(addr, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: inside a cluster or on a laptop the token guards admin calls over plaintext.
func (bearer) RequireTransportSecurity() bool { return false }
