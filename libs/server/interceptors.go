package server

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"strings"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func interceptors(log *slog.Logger, opts Options, failures *decodeFailures) ([]grpc.UnaryServerInterceptor, []grpc.StreamServerInterceptor) {
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	logOpts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		// Health probes arrive every few seconds; logging them would drown everything else.
		logging.WithLevels(func(c codes.Code) logging.Level {
			switch c {
			case codes.OK, codes.NotFound, codes.Canceled, codes.AlreadyExists, codes.InvalidArgument, codes.FailedPrecondition:
				return logging.LevelDebug
			case codes.Unavailable, codes.DeadlineExceeded, codes.Unauthenticated, codes.PermissionDenied:
				return logging.LevelWarn
			default:
				return logging.LevelError
			}
		}),
	}
	recover := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in handler", "panic", p, "method", methodOf(ctx))
		return status.Error(codes.Internal, "internal error")
	})
	authFn := authFunc(opts)
	unary := []grpc.UnaryServerInterceptor{
		logging.UnaryServerInterceptor(logger, logOpts...),
		recovery.UnaryServerInterceptor(recover),
		auth.UnaryServerInterceptor(authFn),
		errorUnary(log),
	}
	stream := []grpc.StreamServerInterceptor{
		logging.StreamServerInterceptor(logger, logOpts...),
		recovery.StreamServerInterceptor(recover),
		auth.StreamServerInterceptor(authFn),
		errorStream(log, failures),
	}
	return unary, stream
}

func methodOf(ctx context.Context) string {
	m, _ := grpc.Method(ctx)
	return m
}

func isInfra(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.") || strings.HasPrefix(method, "/grpc.reflection.")
}

func authFunc(opts Options) auth.AuthFunc {
	token := opts.Config.AdminToken.Reveal()
	return func(ctx context.Context) (context.Context, error) {
		if token == "" {
			return ctx, nil
		}
		method := methodOf(ctx)
		if isInfra(method) {
			return ctx, nil
		}
		if opts.IsAdmin != nil && !opts.IsAdmin(method) {
			return ctx, nil
		}
		got, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, "this call needs the admin token: send metadata 'authorization: Bearer <ZOEA_ADMIN_TOKEN>'")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, status.Error(codes.Unauthenticated, "invalid admin token")
		}
		return ctx, nil
	}
}

func errorUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err != nil {
			return nil, ToStatus(ctx, log, err)
		}
		return resp, nil
	}
}

// errorStream maps a stream's errors like errorUnary, and gives the handler a stream whose RecvMsg refuses an
// undecodable message with InvalidArgument (decodeStream).
func errorStream(log *slog.Logger, failures *decodeFailures) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := handler(srv, decodeStream{ServerStream: ss, failures: failures, log: log}); err != nil {
			return ToStatus(ss.Context(), log, err)
		}
		return nil
	}
}
