package swarmbus_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// The cost of JetStream's sync_interval: always (deploy/nats/nats.conf) on Zoea's durable publish path: broadcasts
// published and acknowledged into the file-backed message stream of an in-process server whose store is on the
// test's temp dir (a real disk, not tmpfs, for the numbers to mean anything), once with the server's default
// (fsync every 2 minutes) and once fsyncing every write before its acknowledgement. "serial" waits for each
// acknowledgement before the next publish (one commander); "parallel" runs 16 publishers per GOMAXPROCS, which
// lets the server fold several writes into one fsync. docs/benchmarks/2026-11-26-nats-sync-interval.md has the numbers.
func BenchmarkPublishSync(b *testing.B) {
	for _, mode := range []struct {
		name   string
		always bool
	}{{"default", false}, {"always", true}} {
		for _, parallel := range []bool{false, true} {
			name := mode.name + "/serial"
			if parallel {
				name = mode.name + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				srv := natstest.StartWith(b, natstest.Options{SyncAlways: mode.always})
				ctx := context.Background()
				bus, err := swarmbus.Connect(ctx, srv.ClientURL(), swarmbus.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				defer bus.Close()
				content := strings.Repeat("x", 256)
				var n atomic.Int64
				publish := func() {
					id := fmt.Sprintf("b%d", n.Add(1))
					if _, err := bus.PublishBroadcast(ctx, swarmbus.Broadcast{ID: id, Content: content}); err != nil {
						b.Error(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				if parallel {
					b.SetParallelism(16)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							publish()
						}
					})
				} else {
					for b.Loop() {
						publish()
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// The lease bucket is file-backed too, so sync_interval: always applies to lease renewals: one RenewAll of 1,000
// held leases (what a runner with 1,000 myses does every TTL/3, 5 s by default), 64 renewals in flight.
func BenchmarkRenewAllSync(b *testing.B) {
	for _, mode := range []struct {
		name   string
		always bool
	}{{"default", false}, {"always", true}} {
		b.Run(mode.name, func(b *testing.B) {
			srv := natstest.StartWith(b, natstest.Options{SyncAlways: mode.always})
			ctx := context.Background()
			bus, err := swarmbus.Connect(ctx, srv.ClientURL(), swarmbus.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer bus.Close()
			leases, err := bus.Leases("r1")
			if err != nil {
				b.Fatal(err)
			}
			for i := range 1000 {
				if ok, err := leases.Acquire(ctx, fmt.Sprintf("m%d", i)); err != nil || !ok {
					b.Fatalf("acquire m%d: %v %v", i, ok, err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if lost, err := leases.RenewAll(ctx); err != nil || len(lost) > 0 {
					b.Fatalf("RenewAll: lost %v, %v", lost, err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1000, "ms/RenewAll")
		})
	}
}
