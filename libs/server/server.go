// Package server is the gRPC bootstrap every Zoea service shares: health that stays NOT_SERVING until the
// service's readiness checks pass, reflection, OpenTelemetry, panic recovery, request logging, optional bearer-token
// auth, one place that maps domain errors to status codes, and graceful shutdown with a deadline.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/config"
)

// LivenessService is the health service name that reports SERVING for as long as the process serves at all,
// whatever its dependencies; probes that decide on restarts (Kubernetes liveness) ask for it.
const LivenessService = "liveness"

// Config is the part of every service's configuration that the bootstrap reads.
type Config struct {
	ListenAddr      string        `env:"ZOEA_LISTEN_ADDR"`
	AdminToken      config.Secret `env:"ZOEA_ADMIN_TOKEN"`
	ShutdownTimeout time.Duration `env:"ZOEA_SHUTDOWN_TIMEOUT" envDefault:"10s"`
	// LogLevel is the least severe level logged (NewLogger): debug, info, warn or error.
	LogLevel slog.Level `env:"ZOEA_LOG_LEVEL" envDefault:"info"`
	// DebugAddr is the loopback address of the debug listener (net/http/pprof, ServeDebug) that Start opens; empty,
	// the default, opens none. A non-loopback address is refused (CheckDebugAddr).
	DebugAddr string `env:"ZOEA_DEBUG_ADDR"`
}

// Check is one readiness condition, e.g. "postgres answers a ping".
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Options configure a Server.
type Options struct {
	// Name is the service's short name for logs ("memory").
	Name string
	// Config carries the listen address, admin token and shutdown deadline.
	Config Config
	// Logger receives request and lifecycle logs.
	Logger *slog.Logger
	// Checks must all pass before health reports SERVING; they are re-run every CheckInterval and a failure flips
	// health back to NOT_SERVING.
	Checks []Check
	// CheckInterval defaults to 2s.
	CheckInterval time.Duration
	// IsAdmin reports whether a full method name requires the admin token. Nil means every method except health
	// and reflection. Ignored when no admin token is configured.
	IsAdmin func(fullMethod string) bool
	// ExtraUnary and ExtraStream interceptors run after the built-in ones.
	ExtraUnary  []grpc.UnaryServerInterceptor
	ExtraStream []grpc.StreamServerInterceptor
}

// Server is a gRPC server with Zoea's standard behaviour.
type Server struct {
	opts   Options
	grpc   *grpc.Server
	health *health.Server
	log    *slog.Logger
	// decodeFailures carries requests the codec could not decode to the handler that asked for them (decode.go).
	decodeFailures *decodeFailures

	mu       sync.Mutex
	services []string
	ready    bool
	lis      net.Listener
	started  chan struct{}
}

// New builds a server. Register services on Registrar() before Run.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = 2 * time.Second
	}
	if opts.Config.ShutdownTimeout <= 0 {
		opts.Config.ShutdownTimeout = 10 * time.Second
	}
	log := opts.Logger.With("service", opts.Name)
	s := &Server{opts: opts, health: health.NewServer(), log: log, started: make(chan struct{})}
	failures := &decodeFailures{}
	s.decodeFailures = failures
	unary, stream := interceptors(log, opts, failures)
	s.grpc = grpc.NewServer(
		// Undecodable requests are InvalidArgument, not grpc-go's Internal (decode.go).
		grpc.ForceServerCodecV2(newDecodeCodec(failures)),
		// gRPC's default 4 MiB would refuse a request below the documented field limits with a message naming no
		// field; requests up to chat.MaxMessageBytes reach validation, which names the field that is too long.
		grpc.MaxRecvMsgSize(chat.MaxMessageBytes),
		grpc.StatsHandler(otelgrpc.NewServerHandler()),
		grpc.ChainUnaryInterceptor(append(unary, opts.ExtraUnary...)...),
		grpc.ChainStreamInterceptor(append(stream, opts.ExtraStream...)...),
	)
	s.grpc.RegisterService(withDecodeErrors(&healthpb.Health_ServiceDesc, failures, log), s.health)
	reflection.Register(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	// Liveness is separate from readiness: a process whose database is briefly down is alive and must not be
	// restarted; it only stops taking traffic.
	s.health.SetServingStatus(LivenessService, healthpb.HealthCheckResponse_SERVING)
	return s
}

// Register adds a service implementation; name is its full service name (used as a health service key).
func (s *Server) Register(desc *grpc.ServiceDesc, impl any) {
	s.grpc.RegisterService(withDecodeErrors(desc, s.decodeFailures, s.log), impl)
	s.mu.Lock()
	s.services = append(s.services, desc.ServiceName)
	s.mu.Unlock()
	s.health.SetServingStatus(desc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
}

// Addr returns the bound address once Run has started listening (useful with ":0" in tests).
func (s *Server) Addr(ctx context.Context) (net.Addr, error) {
	select {
	case <-s.started:
		return s.lis.Addr(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Ready reports whether the readiness checks last passed.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// Run listens and serves until ctx is cancelled, then stops gracefully within the shutdown deadline.
func (s *Server) Run(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.opts.Config.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.opts.Config.ListenAddr, err)
	}
	return s.Serve(ctx, lis)
}

// Serve is Run on an existing listener.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	s.lis = lis
	close(s.started)
	s.log.Info("grpc server listening", "addr", lis.Addr().String())

	checkCtx, stopChecks := context.WithCancel(ctx)
	defer stopChecks()
	checksDone := make(chan struct{})
	go func() {
		defer close(checksDone)
		s.checkLoop(checkCtx)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- s.grpc.Serve(lis) }()

	select {
	case err := <-serveErr:
		stopChecks()
		<-checksDone
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("grpc serve: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	stopChecks()
	<-checksDone
	s.shutdown()
	<-serveErr
	return nil
}

func (s *Server) shutdown() {
	s.log.Info("shutting down", "deadline", s.opts.Config.ShutdownTimeout.String())
	// Tell load balancers and probes first, so no new work arrives while in-flight calls finish.
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		s.log.Info("stopped gracefully")
	case <-time.After(s.opts.Config.ShutdownTimeout):
		s.log.Warn("shutdown deadline passed; closing remaining connections")
		s.grpc.Stop()
		<-done
	}
}

func (s *Server) checkLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.runChecks(ctx)
		s.setReady(err == nil, err)
		interval := s.opts.CheckInterval
		if err != nil {
			// Poll fast until ready so dependants do not wait a full interval.
			interval = min(200*time.Millisecond, interval)
		}
		t.Reset(interval)
	}
}

func (s *Server) runChecks(ctx context.Context) error {
	for _, c := range s.opts.Checks {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.Fn(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

func (s *Server) setReady(ok bool, err error) {
	s.mu.Lock()
	changed := s.ready != ok
	s.ready = ok
	services := append([]string{""}, s.services...)
	s.mu.Unlock()
	status := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		status = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range services {
		s.health.SetServingStatus(name, status)
	}
	if changed {
		if ok {
			s.log.Info("ready: health SERVING")
		} else {
			s.log.Warn("not ready: health NOT_SERVING", "reason", err)
		}
	}
}
