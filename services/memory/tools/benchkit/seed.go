package benchkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// LongPrefix names the myses with a fixed, long history ("long-1000000"); bench finds them by it.
const LongPrefix = "long-"

const systemPrompt = `You are a mysis, one autonomous pilot in a swarm playing SpaceMolt, an MMO for AI agents.
Your commander sends orders by direct message or broadcast; the latest one is your mission until a new one arrives.

## Critical rules
- Use the SpaceMolt tools for every action; never invent results. One state-changing action per tick.
- Context is limited: use zoea_search_messages, zoea_search_reasoning and zoea_search_broadcasts for older information.
- Keep your captain's log up to date with what you learn (prices, routes, dangers).
- When an action returns action_pending or in_transit, wait for the next tick instead of retrying at once.
- Never share your password. Your login is handled for you.

## Loop
Check get_status, decide the next step towards the mission, act, and report briefly what you did and why.`

// seedConfig holds `seed`'s flags.
type seedConfig struct {
	db         string
	myses      int
	memories   int64
	longSizes  []int64
	broadcasts int
	workers    int
	seed       uint64
	rebuild    bool
	workMem    string
}

// seedJob is one mysis to create and the number of memories to load into its history.
type seedJob struct {
	mysis memory.Mysis
	rows  int64
}

// SeedMain runs `memorybench seed`: it fills an empty database with synthetic SpaceMolt-like myses, broadcasts
// and memories using COPY, so benchmarks can run at realistic scale.
func SeedMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	cfg, err := parseSeedFlags(dbURL, args)
	if err != nil {
		return err
	}
	pool, err := pgutil.Open(ctx, cfg.db, "zoea-benchkit", int32(cfg.workers+2))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrateEmpty(ctx, pool, log); err != nil {
		return err
	}
	store := pgstore.New(pool, nil)
	started := time.Now()
	r := rand.New(rand.NewPCG(cfg.seed, 7))

	// The seeded period ends now and spans 60 days; broadcasts are spread over it.
	end := time.Now().Add(-time.Hour)
	begin := end.Add(-60 * 24 * time.Hour)
	bcasts, refs := makeBroadcasts(r, cfg.broadcasts, begin, end)
	if err := store.CopyBroadcasts(ctx, bcasts); err != nil {
		return err
	}
	jobs := planMyses(cfg, begin)
	ms := make([]memory.Mysis, len(jobs))
	for i, j := range jobs {
		ms[i] = j.mysis
	}
	if err := store.CopyMyses(ctx, ms); err != nil {
		return err
	}
	log.Info("seeding", "myses", len(jobs), "memories", cfg.memories, "long", cfg.longSizes, "broadcasts", len(bcasts), "workers", cfg.workers)

	var defs []pgstore.IndexDef
	if cfg.rebuild {
		if defs, err = store.DropSecondaryIndexes(ctx); err != nil {
			return err
		}
		log.Info("dropped secondary indexes for the load; they are rebuilt at the end", "indexes", len(defs))
		defer func() {
			// Never leave the schema without its indexes, even when the load fails or is interrupted.
			if defs != nil {
				if err := store.RecreateIndexes(context.WithoutCancel(ctx), defs, cfg.workMem, 1); err != nil {
					log.Error("restoring indexes failed; recreate them by hand", "err", err, "defs", defs)
				}
			}
		}()
	}

	l := &loader{store: store, jobs: jobs, refs: refs, seed: cfg.seed, begin: begin, end: end,
		lastSeq: make([]int64, len(jobs)), lastTurn: make([]int64, len(jobs))}
	stopProgress := l.reportProgress(log, cfg.memories, started)
	err = l.run(ctx, cfg.workers)
	stopProgress()
	if err != nil {
		return err
	}
	if err := l.setCounters(ctx); err != nil {
		return err
	}
	loadTook := time.Since(started)
	log.Info("memories loaded", "memories", l.loaded.Load(), "took", loadTook.Round(time.Second).String(),
		"rate_per_s", int(float64(l.loaded.Load())/loadTook.Seconds()))

	if defs != nil {
		t := time.Now()
		d := defs
		defs = nil // the deferred restore is no longer needed once this runs
		if err := store.RecreateIndexes(ctx, d, cfg.workMem, cfg.workers); err != nil {
			defs = d
			return err
		}
		log.Info("indexes rebuilt", "took", time.Since(t).Round(time.Second).String())
	}
	t := time.Now()
	for _, table := range []string{"myses", "broadcasts", "memories"} {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+table); err != nil {
			return err
		}
	}
	log.Info("vacuum analyze done", "took", time.Since(t).Round(time.Second).String())
	log.Info("seed complete", "memories", l.loaded.Load(), "myses", len(jobs), "took", time.Since(started).Round(time.Second).String())
	return nil
}

// parseSeedFlags reads and checks `seed`'s flags.
func parseSeedFlags(dbURL string, args []string) (seedConfig, error) {
	var cfg seedConfig
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.StringVar(&cfg.db, "db", dbURL, "database URL (default ZOEA_DATABASE_URL)")
	fs.IntVar(&cfg.myses, "myses", 1000, "number of myses, including the long ones")
	fs.Int64Var(&cfg.memories, "memories", 1_000_000, "total number of memories, including the long myses' histories")
	longs := fs.String("long", "1000,10000,100000,1000000", "comma-separated history sizes of the long myses (empty for none)")
	fs.IntVar(&cfg.broadcasts, "broadcasts", 300, "number of commander broadcasts over the seeded period")
	fs.IntVar(&cfg.workers, "workers", 2, "parallel COPY streams")
	fs.Uint64Var(&cfg.seed, "seed", 1, "random seed (same seed, same data)")
	fs.BoolVar(&cfg.rebuild, "rebuild-indexes", true, "drop the secondary memory indexes during the load and build them after (faster)")
	fs.StringVar(&cfg.workMem, "maintenance-work-mem", "1GB", "maintenance_work_mem for the index builds")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var longTotal int64
	if *longs != "" {
		for _, f := range strings.Split(*longs, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || n <= 0 {
				return cfg, fmt.Errorf("-long: bad size %q", f)
			}
			cfg.longSizes = append(cfg.longSizes, n)
			longTotal += n
		}
	}
	if len(cfg.longSizes) >= cfg.myses && cfg.myses > 0 {
		return cfg, errors.New("-myses must exceed the number of long myses")
	}
	if longTotal > cfg.memories {
		return cfg, fmt.Errorf("-memories (%d) is smaller than the long histories (%d)", cfg.memories, longTotal)
	}
	return cfg, nil
}

// migrateEmpty brings the schema up to date and refuses a database that already holds myses or broadcasts.
func migrateEmpty(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	if _, err := migrations.Up(ctx, pool, log); err != nil {
		return err
	}
	var existing int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM myses) + (SELECT count(*) FROM broadcasts)`).Scan(&existing); err != nil {
		return err
	}
	if existing > 0 {
		return errors.New("seed needs an empty database (create one, e.g. createdb zoea_bench, and pass -db)")
	}
	return nil
}

// makeBroadcasts spreads n commander broadcasts evenly over [begin, end).
func makeBroadcasts(r *rand.Rand, n int, begin, end time.Time) ([]memory.Broadcast, []broadcastRef) {
	bcasts := make([]memory.Broadcast, n)
	refs := make([]broadcastRef, n)
	for i := range bcasts {
		at := begin.Add(time.Duration(float64(end.Sub(begin)) * float64(i) / float64(max(n, 1))))
		content := fmt.Sprintf("Swarm order %d: %s", i+1, orders[r.IntN(len(orders))])
		bcasts[i] = memory.Broadcast{ID: memory.NewID(), Content: content, CreatedAt: at}
		refs[i] = broadcastRef{id: bcasts[i].ID, content: content, at: at}
	}
	return bcasts, refs
}

// planMyses names the myses and sizes their histories: the long ones first, then the rest sharing what is left
// evenly.
func planMyses(cfg seedConfig, begin time.Time) []seedJob {
	var longTotal int64
	for _, n := range cfg.longSizes {
		longTotal += n
	}
	jobs := make([]seedJob, 0, cfg.myses)
	rest := cfg.memories - longTotal
	nRest := int64(cfg.myses - len(cfg.longSizes))
	for i := range cfg.myses {
		m := memory.Mysis{ID: memory.NewID(), Provider: memoryrules.AutopilotProvider, SystemPrompt: systemPrompt,
			State: memory.StateIdle, CreatedAt: begin}
		var n int64
		if i < len(cfg.longSizes) {
			m.Name, n = fmt.Sprintf("%s%d", LongPrefix, cfg.longSizes[i]), cfg.longSizes[i]
		} else {
			k := int64(i - len(cfg.longSizes))
			m.Name = fmt.Sprintf("seed-%06d", k)
			n = rest / nRest
			if k < rest%nRest {
				n++
			}
		}
		jobs = append(jobs, seedJob{mysis: m, rows: n})
	}
	return jobs
}

// loader streams the planned histories into the database on several COPY connections and records each mysis's
// final seq and turn.
type loader struct {
	store             *pgstore.Store
	jobs              []seedJob
	refs              []broadcastRef
	seed              uint64
	begin, end        time.Time
	lastSeq, lastTurn []int64
	loaded            atomic.Int64
}

// run loads every job on workers connections, biggest histories first so the long tail does not end on one worker.
func (l *loader) run(ctx context.Context, workers int) error {
	order := make([]int, len(l.jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return l.jobs[order[a]].rows > l.jobs[order[b]].rows })
	work := make(chan int)
	go func() {
		defer close(work)
		for _, i := range order {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			if err := l.worker(ctx, work); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

// worker loads the jobs it receives: one COPY streams many small myses; a long history is one COPY of its own.
func (l *loader) worker(ctx context.Context, work <-chan int) error {
	const copyRows = 200_000
	var batch []int
	var batchRows int64
	for i := range work {
		batch = append(batch, i)
		batchRows += l.jobs[i].rows
		if batchRows >= copyRows {
			if err := l.copyJobs(ctx, batch); err != nil {
				return err
			}
			batch, batchRows = batch[:0], 0
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return l.copyJobs(ctx, batch)
}

// reportProgress logs the load's progress every 30 s until the returned stop is called.
func (l *loader) reportProgress(log *slog.Logger, total int64, started time.Time) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := l.loaded.Load()
				el := time.Since(started)
				log.Info("progress", "memories", n, "of", total, "elapsed", el.Round(time.Second).String(),
					"rate_per_s", int(float64(n)/el.Seconds()))
			}
		}
	}()
	return func() { close(done) }
}

// setCounters stores every mysis's last seq and turn as loaded.
func (l *loader) setCounters(ctx context.Context) error {
	ids := make([]string, len(l.jobs))
	for i, j := range l.jobs {
		ids[i] = j.mysis.ID
	}
	return l.store.SetCounters(ctx, ids, l.lastSeq, l.lastTurn)
}

// copyJobs loads the histories of several myses with one COPY and records their final seq and turn.
func (l *loader) copyJobs(ctx context.Context, idx []int) error {
	refs, seed, begin, end, lastSeq, lastTurn, loaded := l.refs, l.seed, l.begin, l.end, l.lastSeq, l.lastTurn, &l.loaded
	get := func(i int) (memory.Mysis, int64) { return l.jobs[i].mysis, l.jobs[i].rows }
	k := 0
	var h *history
	var m memory.Mysis
	var want int64
	var buf []memory.Memory
	var written int64
	startHistory := func() {
		m, want = get(idx[k])
		r := rand.New(rand.NewPCG(seed, uint64(idx[k])))
		// A mysis's history ends before `end`; about 5 s per row on average.
		span := time.Duration(want) * 5 * time.Second
		start := end.Add(-span)
		if start.Before(begin) {
			start = begin
		} else {
			start = start.Add(-time.Duration(r.Int64N(int64(start.Sub(begin)) + 1)))
		}
		first := sort.Search(len(refs), func(i int) bool { return !refs[i].at.Before(start) })
		h = newHistory(seed^uint64(idx[k])*0x9e3779b97f4a7c15, start, refs[first:])
		written = 0
	}
	startHistory()
	next := func() (memory.Memory, bool) {
		for {
			if written < want {
				if len(buf) == 0 {
					buf = h.next(min(int(want-written), 512))
					// A tool loop may run past the target; cut it (the histories need not end on a loop).
					if int64(len(buf)) > want-written {
						buf = buf[:want-written]
					}
				}
				r := buf[0]
				buf = buf[1:]
				r.MysisID = m.ID
				written++
				lastSeq[idx[k]], lastTurn[idx[k]] = r.Seq, r.Turn
				if written%10000 == 0 {
					loaded.Add(10000)
				}
				return r, true
			}
			loaded.Add(written % 10000)
			buf = nil
			k++
			if k >= len(idx) {
				return memory.Memory{}, false
			}
			startHistory()
		}
	}
	_, err := l.store.CopyMemories(ctx, next)
	return err
}
