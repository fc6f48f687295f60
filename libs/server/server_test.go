package server_test

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

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
)

// testService is a hand-built service whose methods fail in the ways the bootstrap must handle.
var testService = grpc.ServiceDesc{
	ServiceName: "zoea.test.v1.TestService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		method("Ok", func() error { return nil }),
		method("Panic", func() error { panic("boom") }),
		method("Invalid", func() error { return errs.InvalidField("memories[2].content", "contains a NUL byte") }),
		method("Missing", func() error { return errs.NotFoundf("mysis %q not found", "x") }),
		method("Leak", func() error { return errors.New("pq: secret table details") }),
		{MethodName: "Slow", Handler: slowHandler},
	},
}

// slowCall is how a test holds a Slow call in flight: the handler sends its release channel on slowEntered and
// returns when that channel is closed or its context ends (a cut call).
var slowEntered = make(chan chan struct{}, 1)

func slowHandler(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	if err := dec(new(emptypb.Empty)); err != nil {
		return nil, err
	}
	release := make(chan struct{})
	slowEntered <- release
	select {
	case <-release:
		return &emptypb.Empty{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func method(name string, fn func() error) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(emptypb.Empty)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) { return &emptypb.Empty{}, fn() }
		if interceptor == nil {
			return h(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/zoea.test.v1.TestService/" + name}, h)
	}}
}

type harness struct {
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan error
	ready  *atomic.Bool
	checks chan struct{} // one value per readiness check run (dropped when nobody reads)
}

func start(t *testing.T, token string, shutdown time.Duration) *harness {
	t.Helper()
	ready := &atomic.Bool{}
	checks := make(chan struct{}, 1)
	srv := server.New(server.Options{
		Name:          "test",
		Config:        server.Config{AdminToken: config.Secret(token), ShutdownTimeout: shutdown},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		CheckInterval: 20 * time.Millisecond,
		Checks: []server.Check{{Name: "dependency", Fn: func(context.Context) error {
			select {
			case checks <- struct{}{}:
			default:
			}
			if !ready.Load() {
				return errors.New("not yet")
			}
			return nil
		}}},
	})
	srv.Register(&testService, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := server.Dial(lis.Addr().String(), token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		conn.Close()
	})
	return &harness{conn: conn, cancel: cancel, done: done, ready: ready, checks: checks}
}

func (h *harness) call(ctx context.Context, name string) error {
	return h.conn.Invoke(ctx, "/zoea.test.v1.TestService/"+name, &emptypb.Empty{}, &emptypb.Empty{})
}

func healthStatus(t *testing.T, conn *grpc.ClientConn, svc string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
	if err != nil {
		t.Fatalf("health check: %v", err)
	}
	return resp.Status
}

func TestHealthServingOnlyAfterReadiness(t *testing.T) {
	h := start(t, "", time.Second)
	// Let the check loop run several times: it must stay NOT_SERVING while the dependency fails.
	for range 4 {
		<-h.checks
	}
	for _, svc := range []string{"", testService.ServiceName} {
		if got := healthStatus(t, h.conn, svc); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("service %q: got %v before readiness, want NOT_SERVING", svc, got)
		}
	}
	watch, err := healthpb.NewHealthClient(h.conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || first.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch first = %v, %v", first, err)
	}
	h.ready.Store(true)
	next, err := watch.Recv()
	if err != nil || next.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch after readiness = %v, %v", next, err)
	}
	// Liveness stays SERVING whatever the dependencies say.
	if got := healthStatus(t, h.conn, server.LivenessService); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("liveness = %v, want SERVING", got)
	}
	// A dependency failing later flips health back.
	h.ready.Store(false)
	back, err := watch.Recv()
	if err != nil || back.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch after dependency loss = %v, %v", back, err)
	}
	if got := healthStatus(t, h.conn, server.LivenessService); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("liveness during a dependency outage = %v, want SERVING", got)
	}
}

func TestReflectionListsServices(t *testing.T) {
	h := start(t, "tok", time.Second)
	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range resp.GetListServicesResponse().GetService() {
		got[s.Name] = true
	}
	for _, want := range []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", testService.ServiceName} {
		if !got[want] {
			t.Errorf("reflection does not list %s (got %v)", want, got)
		}
	}
}

func TestErrorMappingAndRecovery(t *testing.T) {
	h := start(t, "", time.Second)
	ctx := context.Background()
	cases := []struct {
		method string
		code   codes.Code
	}{
		{"Ok", codes.OK},
		{"Panic", codes.Internal},
		{"Invalid", codes.InvalidArgument},
		{"Missing", codes.NotFound},
		{"Leak", codes.Internal},
	}
	for _, c := range cases {
		err := h.call(ctx, c.method)
		if got := status.Code(err); got != c.code {
			t.Errorf("%s: code %v, want %v (%v)", c.method, got, c.code, err)
		}
	}
	err := h.call(ctx, "Leak")
	if st, _ := status.FromError(err); st.Message() != "internal error" {
		t.Errorf("internal error leaked detail: %q", st.Message())
	}
	st, _ := status.FromError(h.call(ctx, "Invalid"))
	var field string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
			field = br.FieldViolations[0].Field
		}
	}
	if field != "memories[2].content" {
		t.Errorf("field violation = %q, want memories[2].content (status %v)", field, st)
	}
	// The server survived the panic.
	if err := h.call(ctx, "Ok"); err != nil {
		t.Fatalf("after panic: %v", err)
	}
}

func TestAdminToken(t *testing.T) {
	h := start(t, "s3cret", time.Second)
	if err := h.call(context.Background(), "Ok"); err != nil {
		t.Fatalf("with token: %v", err)
	}
	bare, err := server.Dial(h.conn.Target(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	err = bare.Invoke(context.Background(), "/zoea.test.v1.TestService/Ok", &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without token: %v, want Unauthenticated", err)
	}
	wrong, _ := server.Dial(h.conn.Target(), "nope")
	defer wrong.Close()
	err = wrong.Invoke(context.Background(), "/zoea.test.v1.TestService/Ok", &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong token: %v, want Unauthenticated", err)
	}
	// Probes never need the token.
	if _, err := healthpb.NewHealthClient(bare).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health without token: %v", err)
	}
}

func TestGracefulShutdownWaitsForInflightCalls(t *testing.T) {
	h := start(t, "", time.Minute)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	live, err := healthpb.NewHealthClient(h.conn).Watch(watchCtx, &healthpb.HealthCheckRequest{Service: server.LivenessService})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := live.Recv(); err != nil || first.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("liveness before shutdown = %v, %v", first, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- h.call(context.Background(), "Slow") }()
	release := <-slowEntered
	h.cancel()
	// Shutdown has begun once probes are told NOT_SERVING; only then may the in-flight call finish.
	if next, err := live.Recv(); err != nil || next.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("liveness during shutdown = %v, %v", next, err)
	}
	stopWatch() // an open watch is an in-flight call too
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("in-flight call was cut: %v", err)
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("server did not stop within its deadline")
	}
}

func TestShutdownDeadlineCutsStuckCalls(t *testing.T) {
	h := start(t, "", 50*time.Millisecond)
	cut := make(chan error, 1)
	go func() { cut <- h.call(context.Background(), "Slow") }()
	<-slowEntered // never released: the call is stuck until the deadline closes its connection
	began := time.Now()
	h.cancel()
	select {
	case <-h.done:
		if d := time.Since(began); d > time.Second {
			t.Fatalf("stop took %v with a 50ms deadline", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("server ignored its shutdown deadline")
	}
	if err := <-cut; status.Code(err) != codes.Unavailable && status.Code(err) != codes.Canceled {
		t.Fatalf("the stuck call ended with %v, want it cut (Unavailable or Canceled)", err)
	}
}

func TestHealthcheckCommand(t *testing.T) {
	srv := server.New(server.Options{Name: "hc", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CheckInterval: 20 * time.Millisecond})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Serve(ctx, lis) }()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := watch.Recv()
		if err != nil {
			t.Fatalf("health watch: %v", err)
		}
		if st.Status == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	if err := server.Healthcheck(context.Background(), ":"+port); err != nil {
		t.Fatalf("healthcheck of a serving server: %v", err)
	}
	if err := server.Healthcheck(context.Background(), "127.0.0.1:1"); err == nil {
		t.Fatal("healthcheck of a closed port succeeded")
	}
}

// The `healthcheck` subcommand's two questions: readiness by default, liveness with --liveness (what compose's
// health checks ask, so a dependency's outage does not make the container unhealthy). Bad arguments are refused.
func TestHealthcheckCommandLiveness(t *testing.T) {
	h := start(t, "", time.Second)
	<-h.checks // the readiness check has run and failed: the dependency is down
	addr := h.conn.Target()
	ctx := context.Background()
	if err := server.HealthcheckCommand(ctx, "test", addr, nil); err == nil || !strings.Contains(err.Error(), "NOT_SERVING") {
		t.Fatalf("readiness with the dependency down = %v, want NOT_SERVING", err)
	}
	if err := server.HealthcheckCommand(ctx, "test", addr, []string{"--liveness"}); err != nil {
		t.Fatalf("liveness with the dependency down: %v", err)
	}
	for _, args := range [][]string{{"--live"}, {"extra"}} {
		err := server.HealthcheckCommand(ctx, "test", addr, args)
		if err == nil || !strings.Contains(err.Error(), "usage: test healthcheck [--liveness]") {
			t.Errorf("healthcheck %v = %v, want a usage error", args, err)
		}
	}
	if err := server.HealthcheckCommand(ctx, "test", "127.0.0.1:1", []string{"--liveness"}); err == nil {
		t.Error("liveness of a closed port succeeded")
	}
}
