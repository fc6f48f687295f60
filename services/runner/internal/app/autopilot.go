package app

import (
	"context"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/autopilot"
)

// autopilotProvider is the offline SpaceMolt policy (no network, no model).
func autopilotProvider(maxIterations int) llm.Provider {
	p, err := autopilot.New(autopilot.Config{MaxToolIterations: min(6, max(1, maxIterations-1))})
	if err != nil {
		return nil
	}
	return p
}

// slowProvider answers after a fixed delay: a model's latency simulated for the offline policy (scale runs).
type slowProvider struct {
	llm.Provider
	delay time.Duration
}

// withLatency delays p's replies by d (d <= 0: p itself).
func withLatency(p llm.Provider, d time.Duration) llm.Provider {
	if d <= 0 {
		return p
	}
	return slowProvider{Provider: p, delay: d}
}

// Chat waits the delay (or until ctx ends), then asks the provider.
func (s slowProvider) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	case <-t.C:
	}
	return s.Provider.Chat(ctx, req)
}
