// Package grpcapi serves zoea.composer.v1.ComposerService: one GetComposeWindow round trip to the memory service,
// then the pure compose package, then named converters to the API's messages.
//
// The service holds no state of its own except a token-count cache (an injected compose.Counter): consecutive
// composes of one mysis share almost their whole window, so the cache makes a steady-state compose count only the
// memories it has not seen before.
package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// WindowSource is the one memory-service call the composer makes; the generated MemoryServiceClient implements it.
type WindowSource interface {
	GetComposeWindow(ctx context.Context, in *memoryv1.GetComposeWindowRequest, opts ...grpc.CallOption) (*memoryv1.GetComposeWindowResponse, error)
}

// Options configure a Service.
type Options struct {
	// Policy is the server's default policy; requests override single fields. Zero means compose.DefaultPolicy().
	Policy *compose.Policy
	// Counter counts tokens for every call and must be safe for concurrent use (a tokcache.Cache). Nil gives each
	// call a fresh counter, which is correct but counts every memory every time.
	Counter compose.Counter
	// Logger receives composition failures that are the server's fault.
	Logger *slog.Logger
}

// Service implements composerv1.ComposerServiceServer.
type Service struct {
	composerv1.UnimplementedComposerServiceServer
	memory   WindowSource
	defaults compose.Policy
	counter  compose.Counter
	log      *slog.Logger
	bounds   *boundaries
}

// New returns the service; it fails when the default policy is invalid, naming the offending field.
func New(memory WindowSource, opts Options) (*Service, error) {
	p := compose.DefaultPolicy()
	if opts.Policy != nil {
		p = *opts.Policy
	}
	if err := validatePolicy(p); err != nil {
		return nil, fmt.Errorf("default policy: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{memory: memory, defaults: p, counter: opts.Counter, log: opts.Logger, bounds: newBoundaries(maxBoundaries)}, nil
}

// DefaultPolicy returns the policy in force for a request without overrides.
func (s *Service) DefaultPolicy() compose.Policy { return s.defaults }

// ComposeContext composes the next LLM request for a mysis.
func (s *Service) ComposeContext(ctx context.Context, req *composerv1.ComposeContextRequest) (*composerv1.ComposeContextResponse, error) {
	id := req.GetMysisId()
	if strings.TrimSpace(id) == "" {
		return nil, errs.InvalidField("mysis_id", "required")
	}
	p, err := fromProtoPolicy(req.GetPolicy(), s.defaults)
	if err != nil {
		return nil, err
	}
	tools, err := fromProtoTools(req.GetTools())
	if err != nil {
		return nil, err
	}
	prev := s.bounds.get(id)
	wreq := toProtoWindowRequest(id, p)
	wreq.RecentFromSeq = prev.boundary
	w, err := s.memory.GetComposeWindow(ctx, wreq)
	if err != nil {
		return nil, fromMemoryError(ctx, id, err)
	}
	in := fromProtoWindow(w, req.GetBeginAutonomousTurn(), tools)
	in.PrevBoundary, in.PrevCompactSeq = prev.boundary, prev.compactSeq
	var res compose.Result
	if s.counter != nil {
		res, err = compose.ComposeWith(in, p, s.counter)
	} else {
		res, err = compose.Compose(in, p)
	}
	if err != nil {
		return nil, fromComposeError(id, err)
	}
	if res.Manifest.Boundary > 0 {
		s.bounds.put(id, mark{res.Manifest.Boundary, res.Manifest.CompactSeq})
	}
	return toProtoResponse(res, p), nil
}

// fromMemoryError classifies a failed GetComposeWindow: the caller's own cancellation or deadline stays what it is;
// an unknown mysis is NotFound; anything that says the memory service cannot answer now is Unavailable.
func fromMemoryError(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	derr := server.FromStatus(err)
	var e *errs.Error
	msg := err.Error()
	if errors.As(derr, &e) && e.Msg != "" {
		msg = e.Msg
	}
	switch errs.KindOf(derr) {
	case errs.NotFound:
		return &errs.Error{Kind: errs.NotFound, Msg: msg}
	case errs.Invalid:
		// The composer validated everything but the id, so the memory service is rejecting the id.
		return &errs.Error{Kind: errs.Invalid, Field: "mysis_id", Msg: msg}
	case errs.Unavailable, errs.Timeout:
		return errs.Unavailablef(err, "memory service unavailable: %s", msg)
	}
	return fmt.Errorf("memory GetComposeWindow for mysis %s: %w", id, err)
}

// fromComposeError classifies a failed composition. Both kinds are the stored state's doing, not the request's.
func fromComposeError(id string, err error) error {
	var be *compose.BudgetError
	switch {
	case errors.As(err, &be):
		return &errs.Error{Kind: errs.Conflict, Msg: fmt.Sprintf("mysis %s: the smallest valid request needs %d tokens, over the budget of %d (raise policy.token_budget)", id, be.Need, be.Budget)}
	case errors.Is(err, compose.ErrNoSystemPrompt):
		return &errs.Error{Kind: errs.Conflict, Msg: fmt.Sprintf("mysis %s has an empty system prompt", id)}
	case errors.Is(err, compose.ErrInvalidPolicy):
		return &errs.Error{Kind: errs.Invalid, Field: "policy", Msg: err.Error()}
	}
	return err
}

// MemoryReady is the composer's readiness check: it can answer nothing while the memory service's health is not
// SERVING.
func MemoryReady(h healthpb.HealthClient) server.Check {
	return server.Check{Name: "memory", Fn: func(ctx context.Context) error {
		resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: memoryv1.MemoryService_ServiceDesc.ServiceName})
		if err != nil {
			return fmt.Errorf("memory health: %w", err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("memory health: %s", resp.GetStatus())
		}
		return nil
	}}
}
