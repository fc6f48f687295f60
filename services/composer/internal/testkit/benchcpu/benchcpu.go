// Package benchcpu reports a benchmark's process CPU time per operation next to ns/op. On a loaded machine ns/op is
// wall-clock time and includes waiting for a core; CPU time is what the work costs (garbage collection included).
package benchcpu

import (
	"testing"
	"time"
)

// Process returns the CPU time (user and system) this process has used so far, 0 where it is not available.
func Process() time.Duration { return processCPU() }

// Meter measures process CPU time from Start.
type Meter struct{ start, excluded time.Duration }

// Start begins measuring.
func Start() *Meter { return &Meter{start: processCPU()} }

// Exclude leaves out the CPU time spent since other started (setup between timed stretches).
func (m *Meter) Exclude(other *Meter) { m.excluded += processCPU() - other.start }

// Report adds the metric cpu-ns/op for ops operations (nothing where process CPU time is not available).
func (m *Meter) Report(b *testing.B, ops int) {
	now := processCPU()
	if ops > 0 && now > 0 {
		b.ReportMetric(float64(now-m.start-m.excluded)/float64(ops), "cpu-ns/op")
	}
}
