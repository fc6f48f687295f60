package app

import "github.com/zoeaswarm/zoea/services/runner/internal/llm"

// autopilotProvider returns the offline SpaceMolt policy once the autopilot adapter is available.
func autopilotProvider() llm.Provider { return nil }
