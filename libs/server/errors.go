package server

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/redact"
)

// ErrorDomain names Zoea in the ErrorInfo detail of every error status, so clients know which reasons to expect.
const ErrorDomain = "zoea.dev"

// kindCodes is the one table between domain kinds and gRPC codes, read both ways.
var kindCodes = map[errs.Kind]codes.Code{
	errs.Invalid:          codes.InvalidArgument,
	errs.NotFound:         codes.NotFound,
	errs.Exists:           codes.AlreadyExists,
	errs.Conflict:         codes.FailedPrecondition,
	errs.Unavailable:      codes.Unavailable,
	errs.Timeout:          codes.DeadlineExceeded,
	errs.Unauthenticated:  codes.Unauthenticated,
	errs.Aborted:          codes.Aborted,
	errs.PermissionDenied: codes.PermissionDenied,
}

// causeLevel is how loudly a classified error's cause is logged. A client's expected outcome (a name that exists
// when an idempotent seed creates it again, a mysis that is not found, a refused input) is routine and logged at
// debug, like the call itself (interceptors.go); a dependency that failed is a warning an operator should see.
func causeLevel(k errs.Kind) slog.Level {
	switch k {
	case errs.Invalid, errs.NotFound, errs.Exists, errs.Conflict:
		return slog.LevelDebug
	default:
		return slog.LevelWarn
	}
}

// ToStatus is the one place where a domain error becomes a gRPC status. Errors that already carry a status pass
// through; internal errors are logged in full and returned generic so no SQL or stack detail leaks to callers.
// Every classified error carries an ErrorInfo whose reason clients can switch on, and Invalid errors a BadRequest
// naming the field.
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
	code, known := codes.Internal, false
	if e != nil {
		code, known = kindCodes[e.Kind]
	}
	if !known {
		log.ErrorContext(ctx, "internal error", "method", methodOf(ctx), "err", err)
		return status.Error(codes.Internal, "internal error")
	}
	// Only the public sentence leaves; the cause (SQL constraint names, driver errors, a peer's status) is logged.
	// The sentence may quote what a provider or peer said, so it leaves redacted, by the secrets the logger knows
	// (libs/redact) or, with a plain logger, by their shapes.
	red := redact.Of(log.Handler())
	msg := clip(red.String(e.Public()))
	if e.Err != nil {
		log.Log(ctx, causeLevel(e.Kind), "classified failure", "method", methodOf(ctx), "kind", errs.ReasonOf(e), "err", err)
	}
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: errs.ReasonOf(e), Domain: ErrorDomain}}
	// The field a client can fix travels as a BadRequest violation: for bad input, and for an idempotency key that
	// names different content (AlreadyExists).
	if (e.Kind == errs.Invalid || e.Kind == errs.Exists) && e.Field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: clip(e.Field), Description: clip(red.String(e.Msg))}}})
	}
	st := status.New(code, msg)
	if d, derr := st.WithDetails(details...); derr == nil {
		st = d
	}
	return st.Err()
}

// FromStatus turns a gRPC error received by a client back into a domain error, so adapters can return errs kinds.
// The kind, the offending field and the reason survive the round trip. A status no Zoea service sent (no ErrorInfo
// in Zoea's domain: gRPC's own, e.g. a connection refused) keeps its text as the cause only; relayed, it reads
// unreachableMsg, never gRPC's transport text.
func FromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	out := &errs.Error{Kind: errs.Internal, Msg: st.Message(), Err: err}
	for k, c := range kindCodes {
		if c == st.Code() {
			out.Kind = k
		}
	}
	zoea := false
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			zoea = zoea || d.GetDomain() == ErrorDomain
			if d.GetDomain() == ErrorDomain && d.GetReason() != out.Kind.Reason() {
				out.Reason = d.GetReason()
			}
		case *errdetails.BadRequest:
			if v := d.GetFieldViolations(); len(v) > 0 {
				out.Field, out.Msg = v[0].GetField(), v[0].GetDescription()
			}
		}
	}
	if !zoea && out.Kind == errs.Unavailable {
		out.Msg = unreachableMsg
	}
	return out
}

// unreachableMsg is what a service says when a service it calls could not be reached.
const unreachableMsg = "a service this one calls is unreachable (its log says which)"
