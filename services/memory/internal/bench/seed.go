package bench

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

// SeedMain runs `memory seed`: it fills an empty database with synthetic SpaceMolt-like myses, broadcasts and
// memories using COPY, so benchmarks can run at realistic scale.
func SeedMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	db := fs.String("db", dbURL, "database URL (default ZOEA_DATABASE_URL)")
	nMyses := fs.Int("myses", 1000, "number of myses, including the long ones")
	nMem := fs.Int64("memories", 1_000_000, "total number of memories, including the long myses' histories")
	longs := fs.String("long", "1000,10000,100000,1000000", "comma-separated history sizes of the long myses (empty for none)")
	nBcast := fs.Int("broadcasts", 300, "number of commander broadcasts over the seeded period")
	workers := fs.Int("workers", 2, "parallel COPY streams")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same data)")
	rebuild := fs.Bool("rebuild-indexes", true, "drop the secondary memory indexes during the load and build them after (faster)")
	workMem := fs.String("maintenance-work-mem", "1GB", "maintenance_work_mem for the index builds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var longSizes []int64
	if *longs != "" {
		for _, f := range strings.Split(*longs, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("-long: bad size %q", f)
			}
			longSizes = append(longSizes, n)
		}
	}
	var longTotal int64
	for _, n := range longSizes {
		longTotal += n
	}
	if len(longSizes) >= *nMyses && *nMyses > 0 {
		return errors.New("-myses must exceed the number of long myses")
	}
	if longTotal > *nMem {
		return fmt.Errorf("-memories (%d) is smaller than the long histories (%d)", *nMem, longTotal)
	}

	pool, err := pgutil.Open(ctx, *db, int32(*workers+2))
	if err != nil {
		return err
	}
	defer pool.Close()
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
	store := pgstore.New(pool, nil)
	started := time.Now()
	r := rand.New(rand.NewPCG(*seed, 7))

	// The seeded period ends now and spans 60 days; broadcasts are spread over it.
	end := time.Now().Add(-time.Hour)
	begin := end.Add(-60 * 24 * time.Hour)
	bcasts := make([]memory.Broadcast, *nBcast)
	refs := make([]broadcastRef, *nBcast)
	for i := range bcasts {
		at := begin.Add(time.Duration(float64(end.Sub(begin)) * float64(i) / float64(max(*nBcast, 1))))
		content := fmt.Sprintf("Swarm order %d: %s", i+1, orders[r.IntN(len(orders))])
		bcasts[i] = memory.Broadcast{ID: memory.NewID(), Content: content, CreatedAt: at}
		refs[i] = broadcastRef{id: bcasts[i].ID, content: content, at: at}
	}
	if err := store.CopyBroadcasts(ctx, bcasts); err != nil {
		return err
	}

	// Myses: the long ones first, then the rest sharing what is left evenly.
	type job struct {
		mysis memory.Mysis
		rows  int64
	}
	jobs := make([]job, 0, *nMyses)
	rest := *nMem - longTotal
	nRest := int64(*nMyses - len(longSizes))
	for i := range *nMyses {
		m := memory.Mysis{ID: memory.NewID(), Provider: "autopilot", SystemPrompt: systemPrompt,
			State: memory.StateIdle, CreatedAt: begin}
		var n int64
		if i < len(longSizes) {
			m.Name, n = fmt.Sprintf("%s%d", LongPrefix, longSizes[i]), longSizes[i]
		} else {
			k := int64(i - len(longSizes))
			m.Name = fmt.Sprintf("seed-%06d", k)
			n = rest / nRest
			if k < rest%nRest {
				n++
			}
		}
		jobs = append(jobs, job{mysis: m, rows: n})
	}
	ms := make([]memory.Mysis, len(jobs))
	for i, j := range jobs {
		ms[i] = j.mysis
	}
	if err := store.CopyMyses(ctx, ms); err != nil {
		return err
	}
	log.Info("seeding", "myses", len(jobs), "memories", *nMem, "long", longSizes, "broadcasts", len(bcasts), "workers", *workers)

	var defs []pgstore.IndexDef
	if *rebuild {
		if defs, err = store.DropSecondaryIndexes(ctx); err != nil {
			return err
		}
		names := make([]string, len(defs))
		for i, d := range defs {
			names[i] = d.Name
		}
		log.Info("dropped secondary indexes for the load; they are rebuilt at the end", "indexes", names)
		defer func() {
			// Never leave the schema without its indexes, even when the load fails or is interrupted.
			if defs != nil {
				bctx := context.WithoutCancel(ctx)
				if err := store.RecreateIndexes(bctx, defs, *workMem, 1); err != nil {
					log.Error("restoring indexes failed; recreate them by hand", "err", err, "defs", defs)
				}
			}
		}()
	}

	// Biggest histories first so the long tail does not end on one worker.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].rows > jobs[order[b]].rows })
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
	var loaded atomic.Int64
	lastSeq := make([]int64, len(jobs))
	lastTurn := make([]int64, len(jobs))
	var wg sync.WaitGroup
	errc := make(chan error, *workers)
	progressDone := make(chan struct{})
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				n := loaded.Load()
				el := time.Since(started)
				log.Info("progress", "memories", n, "of", *nMem, "elapsed", el.Round(time.Second).String(),
					"rate_per_s", int(float64(n)/el.Seconds()))
			}
		}
	}()
	for range *workers {
		wg.Go(func() {
			// One COPY streams many small myses; a long history is one COPY of its own.
			const copyRows = 200_000
			var batch []int
			var batchRows int64
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				err := copyJobs(ctx, store, batch, func(i int) (memory.Mysis, int64) { return jobs[i].mysis, jobs[i].rows },
					refs, *seed, begin, end, lastSeq, lastTurn, &loaded)
				batch, batchRows = batch[:0], 0
				return err
			}
			for i := range work {
				batch = append(batch, i)
				batchRows += jobs[i].rows
				if batchRows >= copyRows {
					if err := flush(); err != nil {
						errc <- err
						return
					}
				}
			}
			if err := flush(); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(progressDone)
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.mysis.ID
	}
	if err := store.SetCounters(ctx, ids, lastSeq, lastTurn); err != nil {
		return err
	}
	loadTook := time.Since(started)
	log.Info("memories loaded", "memories", loaded.Load(), "took", loadTook.Round(time.Second).String(),
		"rate_per_s", int(float64(loaded.Load())/loadTook.Seconds()))

	if defs != nil {
		t := time.Now()
		d := defs
		defs = nil // the deferred restore is no longer needed once this runs
		if err := store.RecreateIndexes(ctx, d, *workMem, *workers); err != nil {
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
	log.Info("seed complete", "memories", loaded.Load(), "myses", len(jobs), "took", time.Since(started).Round(time.Second).String())
	return nil
}

// copyJobs loads the histories of several myses with one COPY and records their final seq and turn.
func copyJobs(ctx context.Context, store *pgstore.Store, idx []int, get func(int) (memory.Mysis, int64),
	refs []broadcastRef, seed uint64, begin, end time.Time, lastSeq, lastTurn []int64, loaded *atomic.Int64) error {
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
	_, err := store.CopyMemories(ctx, next)
	return err
}
