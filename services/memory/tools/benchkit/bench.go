// Package benchkit seeds a database with synthetic SpaceMolt-like history (`memorybench seed`) and measures the
// memory store against it (`memorybench bench`): compose-window latency by history length, append throughput,
// search latency, broadcast fan-out and on-disk size per memory. It is linked into tools/cmd/memorybench only, never
// into the memory server.
package benchkit

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/memory/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// BenchMain runs `memorybench bench` against a database filled by `memorybench seed` and prints a Markdown report.
func BenchMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	db := fs.String("db", dbURL, "database URL of a seeded database (default ZOEA_DATABASE_URL)")
	longs := fs.String("long", "1000,10000,100000,1000000", "history sizes of the long myses to measure (as seeded)")
	composeN := fs.Int("compose", 3000, "compose-window calls over random typical myses")
	composeLongN := fs.Int("compose-long", 1000, "compose-window calls per long mysis")
	window := fs.Int("window", 20, "compose window size")
	searchN := fs.Int("search", 1000, "searches over random typical myses")
	searchLongN := fs.Int("search-long", 100, "searches per long mysis")
	appendRows := fs.Int("append-rows", 100_000, "memories to append in the throughput test")
	appendBatch := fs.Int("append-batch", 1000, "memories per AppendMemories call in the throughput test")
	appenders := fs.Int("appenders", 4, "concurrent appenders (each on its own mysis)")
	bcastN := fs.Int("broadcasts", 20, "1,000-target broadcasts to record")
	singleN := fs.Int("single", 1000, "single 2-row appends to time")
	out := fs.String("out", "", "also write the report to this file")
	carry := fs.Int("carry", 64, "v2 compose window: carry_limit")
	replies := fs.Int("replies", 5, "v2 compose window: reply_limit")
	snapshot := fs.String("snapshot", "get_status,get_ship,get_cargo,get_system,get_poi", "v2 compose window: snapshot_tools")
	pinned := fs.String("pinned", "login,register", "v2 compose window: pinned_tools")
	composeOnly := fs.Bool("compose-only", false, "measure the compose window only (no searches, appends, broadcasts)")
	writesOnly := fs.Bool("writes-only", false, "measure writes only (appends, broadcasts, size)")
	clients := fs.Int("clients", 16, "concurrent clients of the 1–2-row append test")
	smallCalls := fs.Int("small-calls", 300, "1–2-row appends per client")
	bcast10k := fs.Int("broadcasts-10k", 5, "10,000-target broadcasts to record (needs 10,000 seeded myses)")
	ftsInterval := fs.Duration("fts-index-interval", 500*time.Millisecond, "as ZOEA_FTS_INDEX_INTERVAL: > 0 indexes tool results in a background indexer running this often, 0 in their appends")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pgutil.Open(ctx, *db, "zoea-benchkit", 16)
	if err != nil {
		return err
	}
	defer pool.Close()
	var opts []pgstore.Option
	if *ftsInterval > 0 {
		opts = append(opts, pgstore.WithAsyncFTS())
	}
	store := pgstore.New(pool, nil, opts...)
	svc := memory.NewService(store)
	b := &bencher{ctx: ctx, log: log, store: store, svc: svc, r: rand.New(rand.NewPCG(42, 42)), async: *ftsInterval > 0}
	if b.async {
		// The indexer runs beside the benchmark, as it does beside a serving memory, competing for the same cores.
		ictx, stop := context.WithCancel(ctx)
		tick := time.NewTicker(*ftsInterval)
		done := make(chan struct{})
		go func() { defer close(done); (&pgstore.Indexer{Store: store, Log: log}).Run(ictx, tick.C) }()
		defer func() { stop(); tick.Stop(); <-done }()
	}

	sizes, err := store.Sizes(ctx)
	if err != nil {
		return err
	}
	if sizes.Rows == 0 {
		return fmt.Errorf("the database has no memories: run `memorybench seed -db …` first")
	}
	b.report("## Memory service benchmark\n\nDatabase: %d memories, %d myses, %d broadcasts.\n", sizes.Rows, sizes.Myses, sizes.Broadcasts)
	if err := b.loadMyses(*longs); err != nil {
		return err
	}

	w := writeRun{appendRows: *appendRows, appendBatch: *appendBatch, appenders: *appenders, single: *singleN,
		clients: *clients, smallCalls: *smallCalls, bcast1k: *bcastN, bcast10k: *bcast10k}
	if *writesOnly {
		return b.finish(w, *out)
	}
	// Warm the caches the way a running swarm keeps them warm.
	v1 := memory.WindowQuery{Window: *window, GlobalFallback: true}
	v2 := memory.WindowQuery{Window: *window, GlobalFallback: true, CarryLimit: *carry, ReplyLimit: *replies,
		SnapshotTools: strings.Split(*snapshot, ","), PinnedTools: strings.Split(*pinned, ",")}
	b.warmup = min(200, *composeN)
	if _, err := b.time(b.warmup, func(int) error { _, err := svc.GetComposeWindow(ctx, v1.For(b.typical())); return err }); err != nil {
		return err
	}
	// v1 and v2 requests alternate on the same mysis, so both see the same cache state and the same load from
	// whatever else runs on the box.
	storeCall := func(q memory.WindowQuery) error { _, err := svc.GetComposeWindow(ctx, q); return err }
	b.report("\n### GetComposeWindow, v1 and v2 interleaved (window %d, global fallback on)\n\n"+
		"v2: carry_limit %d, reply_limit %d, snapshot_tools %s, pinned_tools %s, max_turn_rows default.\n\n"+
		"| history | request | calls | p50 | p95 | p99 | max | rows returned (mean) |\n|---|---|---|---|---|---|---|---|\n",
		*window, *carry, *replies, *snapshot, *pinned)
	if err := b.composePair(fmt.Sprintf("typical (~%d rows), store", sizes.Rows/max(sizes.Myses, 1)), *composeN, b.typical, v1, v2, storeCall); err != nil {
		return err
	}
	for _, l := range b.longs {
		if err := b.composePair(fmt.Sprintf("%d rows (%s), store", l.LastSeq, l.Name), *composeLongN, func() string { return l.ID }, v1, v2, storeCall); err != nil {
			return err
		}
	}
	if err := b.composeOverGRPC(*composeN, v1, v2); err != nil {
		return err
	}
	if *composeOnly {
		fmt.Print(b.buf.String())
		if *out != "" {
			return os.WriteFile(*out, []byte(b.buf.String()), 0o644)
		}
		return nil
	}

	if err := b.searches(*searchN, *searchLongN); err != nil {
		return err
	}
	return b.finish(w, *out)
}

// writeRun holds the write benchmarks' flags.
type writeRun struct {
	appendRows, appendBatch, appenders, single int
	clients, smallCalls                        int
	bcast1k, bcast10k                          int
}

// finish runs the write benchmarks, reports the table's size and prints (and writes to out) the report.
func (b *bencher) finish(w writeRun, out string) error {
	b.report("\nFull-text indexing of tool results: %s.\n", map[bool]string{true: "asynchronous (background indexer)", false: "in the append"}[b.async])
	if err := b.appends(w.appendRows, w.appendBatch, w.appenders, w.single); err != nil {
		return err
	}
	if err := b.smallAppends(w.clients, w.smallCalls); err != nil {
		return err
	}
	if err := b.fanout(1000, w.bcast1k); err != nil {
		return err
	}
	if err := b.fanout(10000, w.bcast10k); err != nil {
		return err
	}
	if err := b.sizes(); err != nil {
		return err
	}
	fmt.Print(b.buf.String())
	if out != "" {
		return os.WriteFile(out, []byte(b.buf.String()), 0o644)
	}
	return nil
}

// sizes reports the on-disk size of the memories table.
func (b *bencher) sizes() error {
	sizes, err := b.store.Sizes(b.ctx)
	if err != nil {
		return err
	}
	b.report("\n### On-disk size (memories table, after the benchmark's own writes)\n\n| part | bytes | per memory |\n|---|---|---|\n")
	per := func(n int64) string { return fmt.Sprintf("%d B", n/max(sizes.Rows, 1)) }
	b.report("| rows | %d | |\n", sizes.Rows)
	b.report("| total (heap + TOAST + indexes) | %s | **%s** |\n", human(sizes.Total), per(sizes.Total))
	b.report("| heap | %s | %s |\n| TOAST | %s | %s |\n", human(sizes.Heap), per(sizes.Heap), human(sizes.Toast), per(sizes.Toast))
	names := make([]string, 0, len(sizes.Indexes))
	for n := range sizes.Indexes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b.report("| index %s | %s | %s |\n", n, human(sizes.Indexes[n]), per(sizes.Indexes[n]))
	}
	return nil
}

type bencher struct {
	ctx     context.Context
	log     *slog.Logger
	store   *pgstore.Store
	svc     *memory.Service // the operations, validated and normalised as the server runs them
	r       *rand.Rand
	mu      sync.Mutex
	buf     strings.Builder
	longs   []memory.Mysis
	typical func() string
	typIDs  []string
	warmup  int
	async   bool // tool results are indexed by a background indexer
}

// drained reports how long after a write run the background indexer took to index everything pending, which
// is how far search lagged the writes at that point.
func (b *bencher) drained(what string) error {
	if !b.async {
		return nil
	}
	start := time.Now()
	n0, oldest, err := b.store.PendingIndex(b.ctx)
	if err != nil {
		return err
	}
	for n := n0; n > 0; {
		select {
		case <-b.ctx.Done():
			return b.ctx.Err()
		case <-time.After(50 * time.Millisecond): // a poll in a benchmark tool, not a test
		}
		if n, _, err = b.store.PendingIndex(b.ctx); err != nil {
			return err
		}
	}
	b.report("\nAsynchronous indexing after %s: %d tool results pending at the end (oldest %s old), all searchable %.2f s later.\n",
		what, n0, oldest.Round(time.Millisecond), time.Since(start).Seconds())
	return nil
}

func (b *bencher) report(format string, args ...any) {
	fmt.Fprintf(&b.buf, format, args...)
	b.log.Info("bench", "line", strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// loadMyses finds the long myses by name and samples typical ones (seed-NNNNNN) to pick from.
func (b *bencher) loadMyses(longs string) error {
	for _, f := range strings.Split(longs, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		m, err := b.svc.GetMysisByName(b.ctx, LongPrefix+f)
		if err != nil {
			b.log.Warn("long mysis not found; skipped", "name", LongPrefix+f, "err", err)
			continue
		}
		b.longs = append(b.longs, m)
	}
	after := ""
	for len(b.typIDs) < 10000 {
		page, more, err := b.svc.ListMyses(b.ctx, memory.ListFilter{PageSize: 1000, AfterName: after})
		if err != nil {
			return err
		}
		for _, m := range page {
			if strings.HasPrefix(m.Name, "seed-") {
				b.typIDs = append(b.typIDs, m.ID)
			}
		}
		if !more {
			break
		}
		after = page[len(page)-1].Name
	}
	if len(b.typIDs) == 0 {
		return fmt.Errorf("no seeded myses (seed-NNNNNN) found")
	}
	b.typical = func() string {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.typIDs[b.r.IntN(len(b.typIDs))]
	}
	return nil
}

// composePair times n v1 and n v2 compose-window calls, alternating which goes first, each pair on one mysis, and
// reports a row for each with the mean number of memories returned.
func (b *bencher) composePair(label string, n int, mysis func() string, v1, v2 memory.WindowQuery, call func(memory.WindowQuery) error) error {
	d1, d2 := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	var rows1, rows2 int
	for i := range n {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		id := mysis()
		for k := range 2 {
			q, d, rows := v1.For(id), &d1, &rows1
			if (i+k)%2 == 1 {
				q, d, rows = v2.For(id), &d2, &rows2
			}
			start := time.Now()
			if err := call(q); err != nil {
				return err
			}
			*d = append(*d, time.Since(start))
			if i < 50 { // the row count, measured apart from the timing
				w, err := b.svc.GetComposeWindow(b.ctx, q)
				if err != nil {
					return err
				}
				*rows += len(w.Memories)
			}
		}
	}
	slices.Sort(d1)
	slices.Sort(d2)
	sample := max(min(n, 50), 1)
	for _, r := range []struct {
		name string
		d    []time.Duration
		rows int
	}{{"v1", d1, rows1}, {"v2", d2, rows2}} {
		b.report("| %s | %s | %d | %s | %s | %s | %s | %.1f |\n", label, r.name, len(r.d), ms(pct(r.d, 50)), ms(pct(r.d, 95)),
			ms(pct(r.d, 99)), ms(r.d[len(r.d)-1]), float64(r.rows)/float64(sample))
	}
	return nil
}

// time runs f n times sequentially and returns the sorted latencies.
func (b *bencher) time(n int, f func(i int) error) ([]time.Duration, error) {
	d := make([]time.Duration, 0, n)
	for i := range n {
		if err := b.ctx.Err(); err != nil {
			return nil, err
		}
		t := time.Now()
		if err := f(i); err != nil {
			return nil, err
		}
		d = append(d, time.Since(t))
	}
	slices.Sort(d)
	return d, nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d kB", n>>10)
}

// composeOverGRPC measures the same call through the real server on loopback (proto encoding, HTTP/2, interceptors).
func (b *bencher) composeOverGRPC(n int, v1, v2 memory.WindowQuery) error {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	srv := server.New(server.Options{Name: "memory-bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: server.Config{ListenAddr: "127.0.0.1:0"}})
	srv.Register(&memoryv1.MemoryService_ServiceDesc, grpcapi.New(b.svc))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		return err
	}
	defer conn.Close()
	c := memoryv1.NewMemoryServiceClient(conn)
	call := func(q memory.WindowQuery) error {
		_, err := c.GetComposeWindow(ctx, windowRequest(q))
		return err
	}
	if _, err := b.time(b.warmup, func(int) error { return call(v1.For(b.typical())) }); err != nil {
		return err
	}
	if err := b.composePair("typical, over gRPC (loopback)", n, b.typical, v1, v2, call); err != nil {
		return err
	}
	if len(b.longs) > 0 {
		l := b.longs[len(b.longs)-1]
		if err := b.composePair(fmt.Sprintf("%d rows, over gRPC (loopback)", l.LastSeq), n/3, func() string { return l.ID }, v1, v2, call); err != nil {
			return err
		}
	}
	cancel()
	return <-done
}

// windowRequest is q as the API carries it.
func windowRequest(q memory.WindowQuery) *memoryv1.GetComposeWindowRequest {
	return &memoryv1.GetComposeWindowRequest{
		MysisId: q.MysisID, Window: int32(q.Window), GlobalMissionFallback: q.GlobalFallback,
		CarryLimit: int32(q.CarryLimit), SnapshotTools: q.SnapshotTools, PinnedTools: q.PinnedTools,
		ReplyLimit: int32(q.ReplyLimit), MaxTurnRows: int32(q.MaxTurnRows),
	}
}

var searchQueries = []string{
	"iron_ore", "iron ore", `"travel cooldown"`, "sell OR buy", "titanium -copper", "docked", "action_pending",
	"pirates nearby", "haven_station", "refuel", "mining laser", "credits",
}

func (b *bencher) searches(n, nLong int) error {
	// A real hex session id from the data, so identifier search is measured on a hit.
	hex := ""
	if len(b.longs) > 0 {
		res, err := b.svc.SearchMessages(b.ctx, memory.SearchQuery{MysisID: b.longs[0].ID, Text: "session_id", Limit: 1})
		if hs := res.Hits; err == nil && len(hs) > 0 {
			if i := strings.Index(hs[0].Memory.Content, `"session_id":"`); i >= 0 {
				rest := hs[0].Memory.Content[i+len(`"session_id":"`):]
				if j := strings.IndexByte(rest, '"'); j > 0 {
					hex = rest[:j]
				}
			}
		}
	}
	qs := slices.Clone(searchQueries)
	if hex != "" {
		qs = append(qs, hex)
	}
	b.report("\n### Search (limit 20, snippets on)\n\nQueries, round-robin: %s.\n\n| search | history | calls | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n",
		"`"+strings.Join(qs, "`, `")+"`")
	hits := 0
	run := func(label, hist string, n int, f func(q string) (int, error)) error {
		d, err := b.time(n, func(i int) error {
			k, err := f(qs[i%len(qs)])
			hits += k
			return err
		})
		if err != nil {
			return err
		}
		b.report("| %s | %s | %d | %s | %s | %s | %s |\n", label, hist, len(d), ms(pct(d, 50)), ms(pct(d, 95)), ms(pct(d, 99)), ms(d[len(d)-1]))
		return nil
	}
	msgs := func(id string) func(string) (int, error) {
		return func(q string) (int, error) {
			res, err := b.svc.SearchMessages(b.ctx, memory.SearchQuery{MysisID: id, Text: q})
			return len(res.Hits), err
		}
	}
	if err := run("messages", "typical", n, func(q string) (int, error) { return msgs(b.typical())(q) }); err != nil {
		return err
	}
	if err := run("reasoning", "typical", n/2, func(q string) (int, error) {
		hs, err := b.svc.SearchReasoning(b.ctx, memory.SearchQuery{MysisID: b.typical(), Text: q})
		return len(hs.Hits), err
	}); err != nil {
		return err
	}
	for _, l := range b.longs {
		if err := run("messages", fmt.Sprintf("%d rows", l.LastSeq), nLong, msgs(l.ID)); err != nil {
			return err
		}
	}
	if err := run("broadcasts", "swarm-wide", n/5, func(q string) (int, error) {
		hs, err := b.svc.SearchBroadcasts(b.ctx, memory.SearchQuery{Text: q})
		return len(hs), err
	}); err != nil {
		return err
	}
	b.log.Info("search hits returned", "total", hits)
	return nil
}

// appends measures batched append throughput into fresh myses (deleted afterwards), and single-row append latency.
func (b *bencher) appends(rows, batch, appenders, singleN int) error {
	stamp := time.Now().Format("150405")
	var ids []string
	for i := range appenders {
		m, err := b.svc.CreateMysis(b.ctx, memory.NewMysis{SystemPrompt: "You are a mysis.", Name: fmt.Sprintf("bench-append-%s-%d", stamp, i), Provider: memoryrules.AutopilotProvider})
		if err != nil {
			return err
		}
		ids = append(ids, m.ID)
	}
	defer func() {
		for _, id := range ids {
			if err := b.svc.DeleteMysis(context.WithoutCancel(b.ctx), id); err != nil {
				b.log.Warn("cleanup", "err", err)
			}
		}
	}()
	gen := func(seed uint64, n int) [][]memory.NewMemory {
		h := newHistory(seed, time.Now(), nil)
		var out [][]memory.NewMemory
		for total := 0; total < n; {
			rs := h.next(batch)
			k := min(batch, n-total, len(rs))
			nb := make([]memory.NewMemory, k)
			for i, r := range rs[:k] {
				nb[i] = memory.NewMemory{Role: r.Role, Source: r.Source, SenderID: r.SenderID, Content: r.Content, Reasoning: r.Reasoning,
					ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID, ToolName: r.ToolName, IdempotencyKey: fmt.Sprintf("b%d-%d", seed, total+i)}
			}
			out = append(out, nb)
			total += k
		}
		return out
	}
	b.report("\n### AppendMemories throughput (SpaceMolt-like rows, every row with an idempotency key)\n\n| appenders | batch | memories | seconds | memories/s | p50 per call | p99 per call |\n|---|---|---|---|---|---|---|\n")
	for _, par := range []int{1, appenders} {
		per := rows / par
		batches := make([][][]memory.NewMemory, par)
		for w := range par {
			batches[w] = gen(uint64(1000*par+w), per)
		}
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		errc := make(chan error, par)
		start := time.Now()
		for w := range par {
			wg.Go(func() {
				for _, nb := range batches[w] {
					t := time.Now()
					if _, err := b.svc.AppendMemories(b.ctx, ids[w], nb); err != nil {
						errc <- err
						return
					}
					mu.Lock()
					lat = append(lat, time.Since(t))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		close(errc)
		if err := <-errc; err != nil {
			return err
		}
		slices.Sort(lat)
		b.report("| %d | %d | %d | %.2f | **%d** | %s | %s |\n", par, batch, per*par, took.Seconds(), int(float64(per*par)/took.Seconds()), ms(pct(lat, 50)), ms(pct(lat, 99)))
	}
	// Before the deferred cleanup deletes the rows the indexer still has to do.
	if err := b.drained("the batched appends"); err != nil {
		return err
	}
	// The runner's usual write: one or two rows per step.
	single := gen(7, 2*singleN)
	var flat []memory.NewMemory
	for _, nb := range single {
		flat = append(flat, nb...)
	}
	d, err := b.time(singleN, func(i int) error {
		_, err := b.svc.AppendMemories(b.ctx, ids[0], flat[2*i:2*i+2])
		return err
	})
	if err != nil {
		return err
	}
	b.report("\nSingle call of 2 rows (the runner's usual step): p50 %s, p95 %s, p99 %s over %d calls.\n", ms(pct(d, 50)), ms(pct(d, 95)), ms(pct(d, 99)), len(d))
	return nil
}
