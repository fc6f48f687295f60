package mcpserver_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// BenchmarkReadToolOverMCP measures get_status round trips over real MCP
// Streamable HTTP on loopback, one client session per parallel goroutine
// (GOMAXPROCS × -cpu parallelism; see b.SetParallelism).
func BenchmarkReadToolOverMCP(b *testing.B) {
	s := newSim(b, simOptions{cfg: game.Config{Tick: time.Second, ReadsPerMinute: -1}})
	b.SetParallelism(16)
	next := make(chan *player, 1024)
	for i := range 256 {
		p := s.connect(b)
		r := p.ok("register", map[string]any{"username": "bench" + itoa3(i), "empire": "solarian"})
		p.sid = r["session_id"].(string)
		next <- p
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		p := <-next
		for pb.Next() {
			if _, isErr, err := p.raw("get_status", nil); err != nil || isErr {
				b.Errorf("get_status: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	// Wall-clock rates swing with whatever else runs on the machine; CPU per
	// call (client and server together, both in this process) does not.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func itoa3(i int) string {
	return string(rune('a'+i/676%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26))
}
