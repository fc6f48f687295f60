package benchkit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// smallAppends measures the runner's usual write: clients concurrent appenders, each on its own fresh mysis
// (deleted afterwards), each making calls AppendMemories calls of one or two SpaceMolt-like rows (alternating).
func (b *bencher) smallAppends(clients, calls int) error {
	if clients < 1 || calls < 1 {
		return nil
	}
	stamp := time.Now().Format("150405.000")
	ids := make([]string, clients)
	for i := range ids {
		m, err := b.svc.CreateMysis(b.ctx, memory.NewMysis{SystemPrompt: "You are a mysis.",
			Name: fmt.Sprintf("bench-small-%s-%d", stamp, i), Provider: memoryrules.AutopilotProvider})
		if err != nil {
			return err
		}
		ids[i] = m.ID
	}
	defer func() {
		for _, id := range ids {
			if err := b.svc.DeleteMysis(context.WithoutCancel(b.ctx), id); err != nil {
				b.log.Warn("cleanup", "err", err)
			}
		}
	}()
	// Every client's calls are generated before the clock starts.
	work := make([][][]memory.NewMemory, clients)
	for c := range clients {
		h := newHistory(uint64(5000+c), time.Now(), nil)
		var rows []memory.Memory
		for len(rows) < 2*calls {
			rows = append(rows, h.next(512)...)
		}
		k := 0
		for i := range calls {
			n := 1 + i%2
			nb := make([]memory.NewMemory, n)
			for j := range n {
				r := rows[k]
				nb[j] = memory.NewMemory{Role: r.Role, Source: r.Source, SenderID: r.SenderID, Content: r.Content,
					Reasoning: r.Reasoning, ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID, ToolName: r.ToolName,
					IdempotencyKey: fmt.Sprintf("s%d-%d", c, k)}
				k++
			}
			work[c] = append(work[c], nb)
		}
	}
	var mu sync.Mutex
	lat := make([]time.Duration, 0, clients*calls)
	var rowsWritten int
	errc := make(chan error, clients)
	var wg sync.WaitGroup
	tx0, calls0 := b.store.AppendTransactions()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			local := make([]time.Duration, 0, calls)
			n := 0
			for _, nb := range work[c] {
				t := time.Now()
				if _, err := b.svc.AppendMemories(b.ctx, ids[c], nb); err != nil {
					errc <- err
					return
				}
				local = append(local, time.Since(t))
				n += len(nb)
			}
			mu.Lock()
			lat = append(lat, local...)
			rowsWritten += n
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	tx1, calls1 := b.store.AppendTransactions()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if err := b.drained("the small appends"); err != nil {
		return err
	}
	slices.Sort(lat)
	b.report("\n### AppendMemories, 1–2 rows per call from %d concurrent clients (own mysis each)\n\n"+
		"| clients | calls | rows | seconds | rows/s | p50 per call | p99 per call |\n|---|---|---|---|---|---|---|\n"+
		"| %d | %d | %d | %.2f | **%d** | %s | %s |\n",
		clients, clients, len(lat), rowsWritten, took.Seconds(), int(float64(rowsWritten)/took.Seconds()),
		ms(pct(lat, 50)), ms(pct(lat, 99)))
	b.report("\n%d calls in %d transactions (group commit: %.1f calls per transaction).\n",
		calls1-calls0, tx1-tx0, float64(calls1-calls0)/float64(max(tx1-tx0, 1)))
	return nil
}

// fanout measures RecordBroadcast to targets random seeded myses, reps times, and checks every delivery.
func (b *bencher) fanout(targets, reps int) error {
	if reps < 1 {
		return nil
	}
	if len(b.typIDs) < targets {
		b.report("\n(broadcast fan-out to %d skipped: only %d seeded myses)\n", targets, len(b.typIDs))
		return nil
	}
	d, err := b.time(reps, func(i int) error {
		ids := slices.Clone(b.typIDs)
		b.r.Shuffle(len(ids), func(a, c int) { ids[a], ids[c] = ids[c], ids[a] })
		res, err := b.svc.RecordBroadcast(b.ctx, memory.Broadcast{Content: fmt.Sprintf("Bench order %d to %d: regroup at haven_station", i, targets)}, ids[:targets])
		if err == nil && res.Delivered != targets {
			err = fmt.Errorf("delivered %d of %d", res.Delivered, targets)
		}
		return err
	})
	if err != nil {
		return err
	}
	b.report("\n### RecordBroadcast to %d myses (one transaction, committed: every delivery durable)\n\n| calls | p50 | p95 | p99 | max |\n|---|---|---|---|---|\n| %d | %s | %s | %s | %s |\n",
		targets, len(d), ms(pct(d, 50)), ms(pct(d, 95)), ms(pct(d, 99)), ms(d[len(d)-1]))
	return nil
}
