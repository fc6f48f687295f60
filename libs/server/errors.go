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
	// A domain error is mapped before a status is passed through: status.FromError also finds a status wrapped
	// inside a domain error (one relayed from another service) and would return the whole chain's text.
	var e *errs.Error
	if !errors.As(err, &e) {
		if _, ok := status.FromError(err); ok {
			return err
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded) && e == nil:
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	if e == nil {
		log.ErrorContext(ctx, "internal error", "method", methodOf(ctx), "err", err)
		return status.Error(codes.Internal, "internal error")
	}
	// Only Public text leaves: the cause (SQL constraint names, driver errors, a peer's status) is logged.
	switch e.Kind {
	case errs.Invalid:
		st := status.New(codes.InvalidArgument, e.Public())
		if e.Field != "" {
			if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.Field, Description: e.Msg}}}); derr == nil {
				st = d
			}
		}
		return st.Err()
	case errs.NotFound:
		return status.Error(codes.NotFound, e.Public())
	case errs.Exists:
		return status.Error(codes.AlreadyExists, e.Public())
	case errs.Conflict:
		return status.Error(codes.FailedPrecondition, e.Public())
	case errs.Unavailable:
		log.WarnContext(ctx, "dependency unavailable", "method", methodOf(ctx), "err", err)
		return status.Error(codes.Unavailable, e.Public())
	case errs.Timeout:
		return status.Error(codes.DeadlineExceeded, e.Public())
	case errs.Unauthenticated:
		return status.Error(codes.Unauthenticated, e.Public())
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
	// The field travels in the BadRequest detail; the message then starts with "field: ", which is cut so that
	// Public() gives the same text back, once.
	e := &errs.Error{Kind: k, Msg: st.Message(), Err: err}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			v := br.GetFieldViolations()[0]
			e.Field, e.Msg = v.GetField(), v.GetDescription()
			break
		}
	}
	return e
}
