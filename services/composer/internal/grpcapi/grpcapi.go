// Package grpcapi serves zoea.composer.v1.ComposerService, a thin transport: it converts the request (policy
// overrides, tools) into compose values, reads the window through the window package (its Windows port, which
// memoryclient implements over the memory service, and its caches), runs the pure compose package and converts the
// result back. Errors are libs/errs errors that
// libs/server maps to gRPC codes, in one place.
//
// The service holds no state of its own but caches: a token-count cache (an injected compose.Counter: consecutive
// composes of one mysis share almost their whole window, so a steady-state compose counts only the memories it has
// not seen before) and the window package's boundary and carry caches.
package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/policy"
	"github.com/zoeaswarm/zoea/services/composer/internal/window"
)

// Options configure a Service.
type Options struct {
	// Policy is the server's default policy; requests override single fields. Zero means compose.DefaultPolicy().
	Policy *compose.Policy
	// Counter counts tokens for every call and must be safe for concurrent use (a tokcache.Cache). Nil gives each
	// call a fresh counter, which is correct but counts every memory every time.
	Counter compose.Counter
	// Logger receives composition failures that are the server's fault.
	Logger *slog.Logger
	// Stateless composes every request with the boundary chosen afresh instead of starting from the mysis's
	// previous one: ComposeContext becomes a pure function of the request and the window, at the price of the
	// providers' prompt caches (tests comparing composers use it). It holds no carried rows either.
	Stateless bool
	// CarryCacheBytes bounds the windows held, over all myses (carries.go); 0 means DefaultCarryCacheBytes, a
	// negative value holds none (every window is read whole).
	CarryCacheBytes int64
}

// Service implements composerv1.ComposerServiceServer.
type Service struct {
	composerv1.UnimplementedComposerServiceServer
	defaults compose.Policy
	counter  compose.Counter
	log      *slog.Logger
	bounds   *window.Boundaries // nil: stateless
	windows  *window.Reader
}

// New returns the service; it fails when the default policy is invalid, naming the offending field.
func New(memory window.Windows, opts Options) (*Service, error) {
	p := compose.DefaultPolicy()
	if opts.Policy != nil {
		p = *opts.Policy
	}
	if err := policy.Validate(p); err != nil {
		return nil, fmt.Errorf("default policy: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	svc := &Service{defaults: p, counter: opts.Counter, log: opts.Logger}
	carryBytes := int64(0)
	if !opts.Stateless {
		svc.bounds = window.NewBoundaries(window.MaxBoundaries)
		switch {
		case opts.CarryCacheBytes == 0:
			carryBytes = window.DefaultCarryCacheBytes
		case opts.CarryCacheBytes > 0:
			carryBytes = opts.CarryCacheBytes
		}
	}
	svc.windows = window.NewReader(memory, carryBytes)
	return svc, nil
}

// CacheFills is how full the service's caches are (the boundaries and the carried windows; none when stateless).
func (s *Service) CacheFills() []window.Fill {
	fills := s.windows.Fill()
	if s.bounds != nil {
		fills = append(fills, s.bounds.Fill())
	}
	return fills
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
	prev, err := s.previousCompaction(id, req.GetPreviousCompaction())
	if err != nil {
		return nil, err
	}
	in, relayed, err := s.windows.Read(ctx, id, p, prev.Boundary, window.Relay{Append: req.GetAppend(), SpendAt: req.GetSpendAt()})
	if err != nil {
		if ctx.Err() != nil {
			// The caller's own cancellation or deadline stays what it is.
			return nil, ctx.Err()
		}
		return nil, err
	}
	p = withCacheModel(p, relayed.Mysis)
	in.Tools, in.BeginTurn = tools, req.GetBeginAutonomousTurn()
	in.PrevBoundary, in.PrevCompactSeq = prev.Boundary, prev.CompactSeq
	var res compose.Result
	if s.counter != nil {
		res, err = compose.ComposeWith(in, p, s.counter)
	} else {
		res, err = compose.Compose(in, p)
	}
	if err != nil {
		return nil, fromComposeError(id, err)
	}
	if n := res.Manifest.Compaction; n != nil {
		s.log.Debug("compaction", "mysis_id", id, "why", n.Why, "cache", n.Cache, "history_before", n.Before, "history_after", n.After,
			"expected_saving", n.ExpectedSaving, "rewrite_cost", n.RewriteCost, "boundary_seq", res.Manifest.Boundary)
	}
	if s.bounds != nil && res.Manifest.Boundary > 0 {
		s.bounds.Put(id, window.Mark{Boundary: res.Manifest.Boundary, CompactSeq: res.Manifest.CompactSeq})
	}
	resp := toProtoResponse(res, p)
	resp.Mysis, resp.Spend, resp.Appended = relayed.Mysis, relayed.Spend, relayed.Appended
	return resp, nil
}

// previousCompaction is where the request starts from: the caller's previous_compaction when it sends one (any
// replica then composes what the one before it would have), else the compaction this composer remembers for the
// mysis (none: chosen afresh).
func (s *Service) previousCompaction(id string, pc *composerv1.Compaction) (window.Mark, error) {
	switch {
	case pc.GetBoundarySeq() < 0:
		return window.Mark{}, errs.InvalidField("previous_compaction.boundary_seq", "must not be negative, got %d", pc.GetBoundarySeq())
	case pc.GetCompactionSeq() < 0:
		return window.Mark{}, errs.InvalidField("previous_compaction.compaction_seq", "must not be negative, got %d", pc.GetCompactionSeq())
	case pc != nil:
		return window.Mark{Boundary: pc.GetBoundarySeq(), CompactSeq: pc.GetCompactionSeq()}, nil
	case s.bounds != nil:
		return s.bounds.Get(id), nil
	}
	return window.Mark{}, nil
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

// withCacheModel is p with the mysis's cache model (compose.CacheModelFor its provider and model) unless the
// server's policy names one: priced compaction weighs a rewrite by what the mysis's provider charges for it.
func withCacheModel(p compose.Policy, m *memoryv1.Mysis) compose.Policy {
	if p.Cache.Name == "" && m != nil {
		p.Cache = compose.CacheModelFor(m.GetProvider(), m.GetModel())
	}
	return p
}
