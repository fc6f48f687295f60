package server

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/libs/errs"
)

// ToStatus is the one place where a domain error becomes a gRPC status. Errors that already carry a status pass
// through; internal errors are logged in full and returned generic so no SQL or stack detail leaks to callers.
func ToStatus(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		log.ErrorContext(ctx, "internal error", "method", methodOf(ctx), "err", err)
		return status.Error(codes.Internal, "internal error")
	}
	switch e.Kind {
	case errs.Invalid:
		st := status.New(codes.InvalidArgument, e.Error())
		if e.Field != "" {
			if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.Field, Description: e.Msg}}}); derr == nil {
				st = d
			}
		}
		return st.Err()
	case errs.NotFound:
		return status.Error(codes.NotFound, e.Error())
	case errs.Exists:
		return status.Error(codes.AlreadyExists, e.Error())
	case errs.Conflict:
		return status.Error(codes.FailedPrecondition, e.Error())
	case errs.Unavailable:
		log.WarnContext(ctx, "dependency unavailable", "method", methodOf(ctx), "err", err)
		return status.Error(codes.Unavailable, e.Msg)
	case errs.Timeout:
		return status.Error(codes.DeadlineExceeded, e.Error())
	case errs.Unauthenticated:
		return status.Error(codes.Unauthenticated, e.Error())
	default:
		log.ErrorContext(ctx, "internal error", "method", methodOf(ctx), "err", err)
		return status.Error(codes.Internal, "internal error")
	}
}

// FromStatus turns a gRPC error received by a client back into a domain error, so adapters can return errs kinds.
func FromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	var k errs.Kind
	switch st.Code() {
	case codes.InvalidArgument:
		k = errs.Invalid
	case codes.NotFound:
		k = errs.NotFound
	case codes.AlreadyExists:
		k = errs.Exists
	case codes.FailedPrecondition, codes.Aborted:
		k = errs.Conflict
	case codes.Unavailable:
		k = errs.Unavailable
	case codes.DeadlineExceeded:
		k = errs.Timeout
	case codes.Unauthenticated:
		k = errs.Unauthenticated
	default:
		k = errs.Internal
	}
	return &errs.Error{Kind: k, Msg: st.Message(), Err: err}
}
