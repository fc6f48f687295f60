// Package grpcapi serves zoea.composer.v1.ComposerService, a thin transport: it converts the request (policy
// overrides checked by package policy's rules, tools, the previous compaction) into a composing.Request, runs the
// composing use case over a window.Reader (its Windows port, which memoryclient implements over the memory service,
// and its carry cache) and converts the result back. Errors are libs/errs errors that libs/server maps to gRPC
// codes, in one place.
//
// The service holds no state of its own but caches: a token-count cache (an injected compose.Counter: consecutive
// composes of one mysis share almost their whole window, so a steady-state compose counts only the memories it has
// not seen before), the window package's carry cache and the use case's boundaries.
package grpcapi

import (
	"context"
	"fmt"
	"log/slog"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/composing"
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
	compose  *composing.Service
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
	carryBytes := int64(0)
	if !opts.Stateless {
		switch {
		case opts.CarryCacheBytes == 0:
			carryBytes = window.DefaultCarryCacheBytes
		case opts.CarryCacheBytes > 0:
			carryBytes = opts.CarryCacheBytes
		}
	}
	return &Service{
		defaults: p,
		compose:  composing.New(composing.Options{Counter: opts.Counter, Logger: opts.Logger, Stateless: opts.Stateless}),
		windows:  window.NewReader(memory, carryBytes),
	}, nil
}

// CacheFills is how full the service's caches are (the carried windows and the boundaries; none when stateless).
func (s *Service) CacheFills() []composing.Fill {
	return append(s.windows.Fill(), s.compose.Fills()...)
}

// DefaultPolicy returns the policy in force for a request without overrides.
func (s *Service) DefaultPolicy() compose.Policy { return s.defaults }

// ComposeContext composes the next LLM request for a mysis.
func (s *Service) ComposeContext(ctx context.Context, req *composerv1.ComposeContextRequest) (*composerv1.ComposeContextResponse, error) {
	p, err := fromProtoPolicy(req.GetPolicy(), s.defaults)
	if err != nil {
		return nil, err
	}
	tools, err := fromProtoTools(req.GetTools())
	if err != nil {
		return nil, err
	}
	r := composing.Request{MysisID: req.GetMysisId(), Policy: p, Tools: tools, BeginTurn: req.GetBeginAutonomousTurn()}
	if pc := req.GetPreviousCompaction(); pc != nil {
		r.Previous = &composing.Mark{Boundary: pc.GetBoundarySeq(), CompactSeq: pc.GetCompactionSeq()}
	}
	w := s.windows.Relaying(window.Relay{Append: req.GetAppend(), SpendAt: req.GetSpendAt()})
	res, p, err := s.compose.Compose(ctx, w, r)
	if err != nil {
		return nil, err
	}
	resp := toProtoResponse(res, p)
	resp.Mysis, resp.Spend, resp.Appended = w.Relayed.Mysis, w.Relayed.Spend, w.Relayed.Appended
	return resp, nil
}
