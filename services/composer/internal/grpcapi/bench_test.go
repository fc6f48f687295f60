package grpcapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/benchcpu"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/replay"
)

// BenchmarkComposeContext is one ComposeContext over loopback gRPC against the fake memory service (default policy,
// 50-memory window), replaying a long session request by request so each call sees the memories added since the
// previous one, through the server's warm token cache. ns/op is wall time per call on this machine; p50/p99 are of
// single calls; cpu-ns/op is the whole process (client, composer and fake memory server, including the untimed storing
// of each call's new memories through AppendMemories).
func BenchmarkComposeContext(b *testing.B) {
	benchComposeContext(b, true)
}

// BenchmarkComposeContextNoCache is the same without the token cache: every call counts its whole window.
func BenchmarkComposeContextNoCache(b *testing.B) {
	benchComposeContext(b, false)
}

func benchComposeContext(b *testing.B, cached bool) {
	mem := startMemory(b)
	s := replay.Generate(2000, 3)
	mysisID := mem.createMysis(b, "bench", replay.SystemPrompt, 0)
	opts := grpcapi.Options{Logger: discardLogger()}
	if cached {
		opts.Counter = cache(b)
	}
	c := startComposer(b, mem.addr, opts)
	window := compose.DefaultPolicy().ScanWindow
	reqs := s.Requests
	for len(reqs) > 0 && reqs[0] < window {
		reqs = reqs[1:]
	}
	ctx := context.Background()
	stored := 0
	call := func(i int) time.Duration {
		// The memories added since the previous call are stored before it (a replay past the end starts over on a
		// fresh mysis); storing them is not timed.
		b.StopTimer()
		n := reqs[i%len(reqs)]
		if n < stored {
			mysisID, stored = mem.createMysis(b, fmt.Sprintf("bench-%d", i), replay.SystemPrompt, 0), 0
		}
		mem.appendRows(b, mysisID, s.Rows[stored:n])
		stored = n
		b.StartTimer()
		start := time.Now()
		if _, err := c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: mysisID}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	call(0) // the previous compose of this mysis
	if b.N > len(reqs)-1 {
		b.Logf("b.N %d > %d requests: later calls repeat windows already cached", b.N, len(reqs)-1)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := benchcpu.Start()
	for i := range b.N {
		lat = append(lat, call(i+1))
	}
	b.StopTimer()
	cpu.Report(b, b.N)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
