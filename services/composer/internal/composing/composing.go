// Package composing is the composer's ComposeContext use case: the steps between a request and the pure algorithm
// (package compose). Where the request starts from (the caller's previous compaction, else the one remembered for
// the mysis), the window read through the Windows port, the cache model priced compaction weighs a rewrite by, the
// composition itself, the boundary remembered for the next request, and what a failed composition means to the
// caller. It is domain: no transport, wire type or driver. grpcapi converts a ComposeContextRequest into a Request
// and the Result back; the window package implements Windows over the memory service and its caches.
package composing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Windows reads a mysis's compose window (window.Reader's per-request Relaying implements it). Errors are libs/errs
// errors.
type Windows interface {
	// Read reads the window under p; recentFrom is the mysis's previous compaction boundary (0: unknown). Mysis is
	// what the read learnt of the mysis's record.
	Read(ctx context.Context, id string, p compose.Policy, recentFrom int64) (compose.Input, Mysis, error)
}

// Mysis is what the use case needs of the mysis's record read with its window: who serves it, whose prompt cache
// priced compaction prices.
type Mysis struct {
	Known           bool // false: the window came without the record (an older memory service)
	Provider, Model string
}

// Request is one ComposeContext, converted and with its policy already the server's defaults plus the request's
// validated overrides (package policy's rules).
type Request struct {
	MysisID   string
	Policy    compose.Policy
	Tools     []compose.Tool
	BeginTurn bool // the request begins an autonomous turn (the nudge is due)
	// Previous is the caller's previous compaction (any replica then composes what the one before it would have);
	// nil: the one this composer remembers for the mysis, if any.
	Previous *Mark
}

// Options configure a Service.
type Options struct {
	// Counter counts tokens for every call and must be safe for concurrent use (a tokcache.Cache). Nil gives each
	// call a fresh counter, which is correct but counts every memory every time.
	Counter compose.Counter
	// Logger receives each compaction at debug level. Nil means slog.Default().
	Logger *slog.Logger
	// Stateless remembers no boundary: every request without Previous starts from one chosen afresh, and
	// ComposeContext is a pure function of the request and the window (tests comparing composers use it).
	Stateless bool
}

// Service runs ComposeContext. It is safe for concurrent use.
type Service struct {
	counter compose.Counter
	log     *slog.Logger
	bounds  *Boundaries // nil: stateless
}

// New returns the use case.
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Service{counter: opts.Counter, log: opts.Logger}
	if !opts.Stateless {
		s.bounds = NewBoundaries(MaxBoundaries)
	}
	return s
}

// Compose composes the mysis's next request from the window w reads. It returns the result and the policy it was
// composed under (the request's, with the mysis's cache model when the server names none).
func (s *Service) Compose(ctx context.Context, w Windows, r Request) (compose.Result, compose.Policy, error) {
	p := r.Policy
	prev, err := s.previous(r)
	if err != nil {
		return compose.Result{}, p, err
	}
	in, m, err := w.Read(ctx, r.MysisID, p, prev.Boundary)
	if err != nil {
		if ctx.Err() != nil {
			// The caller's own cancellation or deadline stays what it is.
			return compose.Result{}, p, ctx.Err()
		}
		return compose.Result{}, p, err
	}
	p = WithCacheModel(p, m)
	in.Tools, in.BeginTurn = r.Tools, r.BeginTurn
	in.PrevBoundary, in.PrevCompactSeq = prev.Boundary, prev.CompactSeq
	var res compose.Result
	if s.counter != nil {
		res, err = compose.ComposeWith(in, p, s.counter)
	} else {
		res, err = compose.Compose(in, p)
	}
	if err != nil {
		return res, p, composeError(r.MysisID, err)
	}
	if n := res.Manifest.Compaction; n != nil {
		s.log.Debug("compaction", "mysis_id", r.MysisID, "why", n.Why, "cache", n.Cache, "history_before", n.Before,
			"history_after", n.After, "expected_saving", n.ExpectedSaving, "rewrite_cost", n.RewriteCost,
			"boundary_seq", res.Manifest.Boundary)
	}
	if s.bounds != nil && res.Manifest.Boundary > 0 {
		s.bounds.Put(r.MysisID, Mark{Boundary: res.Manifest.Boundary, CompactSeq: res.Manifest.CompactSeq})
	}
	return res, p, nil
}

// Fills is how full the use case's cache is (the boundaries remembered; none when stateless).
func (s *Service) Fills() []Fill {
	if s.bounds == nil {
		return nil
	}
	return []Fill{s.bounds.Fill()}
}

// previous checks the request and says where it starts from: the caller's previous compaction when it sends one,
// else the compaction remembered for the mysis (none: chosen afresh).
func (s *Service) previous(r Request) (Mark, error) {
	switch {
	case strings.TrimSpace(r.MysisID) == "":
		return Mark{}, errs.InvalidField("mysis_id", "required")
	case r.Previous != nil && r.Previous.Boundary < 0:
		return Mark{}, errs.InvalidField("previous_compaction.boundary_seq", "must not be negative, got %d", r.Previous.Boundary)
	case r.Previous != nil && r.Previous.CompactSeq < 0:
		return Mark{}, errs.InvalidField("previous_compaction.compaction_seq", "must not be negative, got %d", r.Previous.CompactSeq)
	case r.Previous != nil:
		return *r.Previous, nil
	case s.bounds != nil:
		return s.bounds.Get(r.MysisID), nil
	}
	return Mark{}, nil
}

// composeError classifies a failed composition. Both kinds are the stored state's doing, not the request's.
func composeError(id string, err error) error {
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

// WithCacheModel is p with the mysis's cache model (compose.CacheModelFor its provider and model) unless the
// server's policy names one: priced compaction weighs a rewrite by what the mysis's provider charges for it.
func WithCacheModel(p compose.Policy, m Mysis) compose.Policy {
	if p.Cache.Name == "" && m.Known {
		p.Cache = compose.CacheModelFor(m.Provider, m.Model)
	}
	return p
}

// Fill is how full one of the composer's bounded caches is: Size of Bound, in Unit (the soak reads it through the
// debug listener, libs/server.PublishCaches).
type Fill struct {
	Name, Unit  string
	Size, Bound int64
}
