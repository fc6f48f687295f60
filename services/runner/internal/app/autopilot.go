package app

import (
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
