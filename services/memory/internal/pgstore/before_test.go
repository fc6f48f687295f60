package pgstore_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// beforeFixture is a store whose rankings report how they ended, with myses and calls over three days before base
// + 72 h: every mysis costs about the same per call (the case where ranking from the hourly lists falls back to
// summing them), and costs come from a small set so that sums tie.
type beforeFixture struct {
	s     *svcStore
	p     *pgxpool.Pool
	names map[string]string
	ids   []string
	base  time.Time
	mu    sync.Mutex
	hows  []pgstore.TopHow
	rng   *rand.Rand
	n     int
}

func newBeforeFixture(t *testing.T, myses, batches int) *beforeFixture {
	t.Helper()
	f := &beforeFixture{names: map[string]string{}, rng: rand.New(rand.NewPCG(16, 3))}
	_, f.p = freshStore(t)
	f.s = newSvcStore(f.p, testBox(t), pgstore.WithTopTrace(func(h pgstore.TopHow) {
		f.mu.Lock()
		f.hows = append(f.hows, h)
		f.mu.Unlock()
	}))
	for range myses {
		m := mkMysis(t, f.s)
		f.names[m.ID] = m.Name
		f.ids = append(f.ids, m.ID)
	}
	f.base = time.Now().UTC().Truncate(time.Hour).Add(-96 * time.Hour)
	for range batches {
		f.record(t, f.ids[f.rng.IntN(len(f.ids))], f.base.Add(time.Duration(f.rng.Int64N(int64(72*time.Hour)))), 1+f.rng.IntN(4))
	}
	return f
}

// record records n calls of mysis id at at.
func (f *beforeFixture) record(t *testing.T, id string, at time.Time, n int) {
	t.Helper()
	var calls []memory.LlmCall
	for range n {
		f.n++
		calls = append(calls, *call(uuidN(40_000+f.n), at, 1000, 0, 100, 1000+int64(f.rng.IntN(3))*50))
	}
	if _, err := f.s.RecordLlmCalls(context.Background(), id, calls); err != nil {
		t.Fatal(err)
	}
}

// top asks the top n from from on and checks the answer against the call log; it returns how the ranking ended.
func (f *beforeFixture) top(t *testing.T, from time.Time, n int) pgstore.TopHow {
	t.Helper()
	return f.topIn(t, from, time.Time{}, n)
}

// topIn asks the top n over [from, to) (to zero: open) and checks the answer against the call log; it returns how
// the ranking ended.
func (f *beforeFixture) topIn(t *testing.T, from, to time.Time, n int) pgstore.TopHow {
	t.Helper()
	u, err := f.s.GetUsage(context.Background(), memory.UsageQuery{From: from, To: to, GroupBy: memory.GroupMysis, Top: n})
	if err != nil {
		t.Fatal(err)
	}
	want := wantTop(t, f.p, f.names, from, to, n)
	if len(u.Rows) != len(want) {
		t.Fatalf("[%v, %v) top %d: %d rows, want %d\n got %+v\nwant %+v", from, to, n, len(u.Rows), len(want), u.Rows, want)
	}
	for k := range want {
		if u.Rows[k] != want[k] {
			t.Fatalf("[%v, %v) top %d: row %d\n got %+v\nwant %+v", from, to, n, k, u.Rows[k], want[k])
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.hows) == 0 {
		t.Fatalf("from %v: the ranking was not traced", from)
	}
	return f.hows[len(f.hows)-1]
}

func (f *beforeFixture) build(t *testing.T, at time.Time) {
	t.Helper()
	if _, err := f.s.adapter.Store.BuildUsageSnapshot(context.Background(), at); err != nil {
		t.Fatal(err)
	}
}

// TestTopFromSnapshotMatchesTheCallLog: an open range of several hours ranked from the snapshot of costs before its
// first whole hour answers exactly what the call log says — ragged and whole-hour starts, ties, top 1 to 12 — and
// a snapshot made stale by a call recorded later with an earlier start is noticed: that ranking sums the hours
// instead (still exact) until the snapshot is rebuilt. A mysis deleted after the snapshot leaves it fresh.
func TestTopFromSnapshotMatchesTheCallLog(t *testing.T) {
	f := newBeforeFixture(t, 40, 300)
	built := map[time.Time]bool{}
	fromSnap := 0
	for i := range 120 {
		from := f.base.Add(-2 * time.Hour).Add(time.Duration(f.rng.Int64N(int64(76 * time.Hour))))
		if i%3 == 0 {
			from = from.Truncate(time.Hour)
		}
		a := from.Truncate(time.Hour)
		if !a.Equal(from) {
			a = a.Add(time.Hour)
		}
		if !built[a] {
			f.build(t, a)
			built[a] = true
		}
		how := f.top(t, from, 1+f.rng.IntN(12))
		if how.Before != (how.Lists >= pgstore.MinBeforeLists) {
			t.Fatalf("from %v: %+v: a range of several lists with a snapshot must be ranked from it, and only such a range", from, how)
		}
		if how.Before {
			fromSnap++
		}
	}
	if fromSnap < 90 {
		t.Fatalf("%d of 120 rankings came from a snapshot: the test checks too little", fromSnap)
	}

	// A late call: recorded now, started before a snapshot's hour.
	from := f.base.Add(30*time.Hour + 20*time.Minute)
	a := f.base.Add(31 * time.Hour)
	f.build(t, a)
	if how := f.top(t, from, 5); !how.Before {
		t.Fatalf("fresh snapshot not used: %+v", how)
	}
	f.record(t, f.ids[3], a.Add(-2*time.Hour), 3) // before a: the snapshot no longer holds mysis 3's cost before it
	if how := f.top(t, from, 40); how.Before {
		t.Fatalf("a stale snapshot was used: %+v", how)
	}
	f.record(t, f.ids[3], a.Add(-40*time.Minute), 1) // in the ragged edge and before a
	if how := f.top(t, from, 40); how.Before {
		t.Fatalf("a stale snapshot was used: %+v", how)
	}
	f.build(t, a)
	if how := f.top(t, from, 5); !how.Before {
		t.Fatalf("rebuilt snapshot not used: %+v", how)
	}
	// Calls from a on do not make it stale.
	f.record(t, f.ids[4], a.Add(time.Minute), 2)
	f.record(t, f.ids[5], time.Now(), 1)
	if how := f.top(t, from, 5); !how.Before {
		t.Fatalf("a snapshot went stale on calls after its hour: %+v", how)
	}
	// A mysis deleted after the snapshot: its rows are not joined, and the swarm rollup loses its calls too.
	if err := f.s.DeleteMysis(context.Background(), f.ids[6]); err != nil {
		t.Fatal(err)
	}
	delete(f.names, f.ids[6])
	if how := f.top(t, from, 40); !how.Before {
		t.Fatalf("a deleted mysis made the snapshot stale: %+v", how)
	}
	// One list, and an hour still to come, are ranked from the lists.
	for _, q := range []memory.UsageQuery{
		{From: a, To: a.Add(time.Hour), GroupBy: memory.GroupMysis, Top: 3},
		{From: time.Now().Add(10 * time.Minute), GroupBy: memory.GroupMysis, Top: 3},
	} {
		if _, err := f.s.GetUsage(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		how := f.hows[len(f.hows)-1]
		f.mu.Unlock()
		if how.Before {
			t.Fatalf("[%v, %v): ranked from a snapshot: %+v", q.From, q.To, how)
		}
	}

	// Ranges with an end: the snapshot at the last whole hour less the one at the first. (Built again: the late
	// calls above made those of later hours stale.)
	fromSnap = 0
	built = map[time.Time]bool{}
	for range 80 {
		from := f.base.Add(-2 * time.Hour).Add(time.Duration(f.rng.Int64N(int64(70 * time.Hour))))
		to := from.Add(time.Duration(f.rng.Int64N(int64(30 * time.Hour))))
		if f.rng.IntN(3) == 0 {
			from, to = from.Truncate(time.Hour), to.Truncate(time.Hour)
		}
		if !to.After(from) {
			to = from.Add(2 * time.Hour)
		}
		for _, h := range []time.Time{ceilHour(from), to.Truncate(time.Hour)} {
			if !built[h] {
				f.build(t, h)
				built[h] = true
			}
		}
		how := f.topIn(t, from, to, 1+f.rng.IntN(12))
		if how.Before != (how.Lists >= pgstore.MinBeforeLists && to.Truncate(time.Hour).After(ceilHour(from))) {
			t.Fatalf("[%v, %v): %+v: a range of several lists with its snapshots must be ranked from them, and only such a range", from, to, how)
		}
		if how.Before {
			fromSnap++
		}
	}
	if fromSnap < 40 {
		t.Fatalf("%d of 80 rankings with an end came from snapshots: the test checks too little", fromSnap)
	}
	// Two stale snapshots whose errors cancel in their difference: b built, then a late call before a, then a
	// built (it holds that call, b does not), then a late call inside [a, b) (neither holds it). Each is checked on
	// its own, so the ranking notices b.
	a, b := f.base.Add(40*time.Hour), f.base.Add(50*time.Hour)
	from, to := a.Add(-20*time.Minute), b.Add(20*time.Minute)
	f.build(t, b)
	f.record(t, f.ids[8], a.Add(-3*time.Hour), 1)
	f.build(t, a)
	if how := f.topIn(t, from, to, 40); how.Before {
		t.Fatalf("a stale snapshot at the range's end was used: %+v", how)
	}
	f.record(t, f.ids[9], a.Add(3*time.Hour), 1)
	if how := f.topIn(t, from, to, 40); how.Before {
		t.Fatalf("stale snapshots whose errors cancel were used: %+v", how)
	}
	f.build(t, b)
	if how := f.topIn(t, from, to, 40); !how.Before {
		t.Fatalf("fresh snapshots were not used: %+v", how)
	}
}

// TestUsageSnapshotterBuildsWhatRankingsAsk: at start and on every tick the snapshotter builds the newest missing
// snapshots of the kept hours, a few at a time; a ranking that finds no snapshot asks for its hour and the next, the
// snapshotter builds them, and the same ranking then comes from the snapshot. Pruning keeps the newest
// MaxBeforeMarks and nothing older than 8 days.
func TestUsageSnapshotterBuildsWhatRankingsAsk(t *testing.T) {
	f := newBeforeFixture(t, 12, 60)
	ctx, cancel := context.WithCancel(context.Background())
	built := make(chan time.Time, 32) // more than the builds this test causes, so the hook never blocks the snapshotter
	tick := make(chan time.Time)
	u := pgstore.WithSnapshotBuilt(&pgstore.UsageSnapshotter{Store: f.s.adapter.Store, Log: slog.New(slog.DiscardHandler)},
		func(start time.Time, err error) {
			if err != nil {
				t.Error(err)
			}
			built <- start
		})
	// waitBuilt waits until every hour of want was built (other builds may come between).
	waitBuilt := func(want ...time.Time) {
		t.Helper()
		left := map[time.Time]bool{}
		for _, h := range want {
			left[h.UTC()] = true
		}
		for len(left) > 0 {
			select {
			case h := <-built:
				delete(left, h.UTC())
			case <-time.After(time.Minute):
				t.Fatalf("not built within a minute: %v", left)
			}
		}
	}
	// The snapshotter's clock: ten minutes into the current hour, so the kept hours do not move under the test.
	var clock sync.Mutex // guards now
	hour := time.Now().UTC().Truncate(time.Hour)
	now := hour.Add(10 * time.Minute)
	u.Now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	done := make(chan struct{})
	go func() { defer close(done); u.Run(ctx, tick) }()
	defer func() { cancel(); <-done }()
	waitBuilt(hour.Add(-1*time.Hour), hour.Add(-2*time.Hour), hour.Add(-3*time.Hour), hour.Add(-4*time.Hour)) // at start

	from := f.base.Add(20*time.Hour + 10*time.Minute)
	a := f.base.Add(21 * time.Hour)
	if how := f.top(t, from, 3); how.Before {
		t.Fatalf("ranked from a snapshot nobody built: %+v", how)
	}
	waitBuilt(a, a.Add(time.Hour))
	if how := f.top(t, from, 3); !how.Before {
		t.Fatalf("the snapshot built was not used: %+v", how)
	}
	if how := f.top(t, from.Add(time.Hour), 3); !how.Before { // an hour later: its snapshot was built ahead
		t.Fatalf("the next hour's snapshot was not used: %+v", how)
	}

	// A tick builds the next four missing, and one deleted again (rebuilt: two minutes on, past the wait between
	// two builds of one hour).
	if _, err := f.p.Exec(ctx, `DELETE FROM llm_usage_before_marks WHERE start = $1`, hour.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	clock.Lock()
	now = now.Add(2 * time.Minute)
	tickAt := now
	clock.Unlock()
	tick <- tickAt
	waitBuilt(hour.Add(-2*time.Hour), hour.Add(-5*time.Hour), hour.Add(-6*time.Hour), hour.Add(-7*time.Hour))

	// Pruning: three snapshots of hours more than 8 days ago, then MaxBeforeMarks + 5 more recent ones, built last:
	// the old three go, and of the rest the MaxBeforeMarks built last stay.
	for h := range 3 {
		f.build(t, hour.Add(-200*time.Hour+time.Duration(h)*time.Hour))
	}
	first := hour.Add(-190 * time.Hour)
	for h := range pgstore.MaxBeforeMarks + 5 {
		f.build(t, first.Add(time.Duration(h)*time.Hour))
	}
	if _, err := f.s.adapter.Store.PruneUsageSnapshots(ctx, hour); err != nil {
		t.Fatal(err)
	}
	var marks int
	var oldest time.Time
	if err := f.p.QueryRow(ctx, `SELECT count(*), min(start) FROM llm_usage_before_marks`).Scan(&marks, &oldest); err != nil {
		t.Fatal(err)
	}
	var orphans int
	if err := f.p.QueryRow(ctx, `SELECT count(*) FROM llm_usage_mysis_before b
		WHERE NOT EXISTS (SELECT FROM llm_usage_before_marks m WHERE m.start = b.start)`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if want := first.Add(5 * time.Hour); marks != pgstore.MaxBeforeMarks || !oldest.Equal(want) || orphans != 0 {
		t.Fatalf("after pruning: %d snapshots, the oldest of %v, %d rows without one; want %d, %v, none",
			marks, oldest, orphans, pgstore.MaxBeforeMarks, want)
	}
}

// TestTopFromSnapshotWithManyTies: when more myses tie at the cut than the snapshot's ranking returns, the ranking
// comes from the lists, and the answer is still the call log's (ties in name order).
func TestTopFromSnapshotWithManyTies(t *testing.T) {
	f := newBeforeFixture(t, 90, 0)
	// Calls in hours 6 to 17 of one day, and ranges starting after its midnight: the range never holds the whole
	// day, so its buckets are hours (several lists) at any time of day the test runs. (A range holding the whole day
	// would have one list for it, and rank from the lists.)
	base := f.base.Truncate(24 * time.Hour).Add(6 * time.Hour)
	for i, id := range f.ids {
		f.rng = rand.New(rand.NewPCG(1, 1)) // every call costs the same
		f.record(t, id, base.Add(time.Duration(i%12)*time.Hour+time.Minute), 1)
	}
	f.record(t, f.ids[7], base.Add(5*time.Hour), 1) // one mysis above the rest
	from := base.Add(-30 * time.Minute)
	f.build(t, ceilHour(from))
	if how := f.top(t, from, 3); how.Before || how.Lists < pgstore.MinBeforeLists {
		t.Fatalf("89 myses tie at the cut: %+v, want ranked from the lists", how)
	}
	from = base.Add(4*time.Hour + 30*time.Minute) // mysis 7 costs twice the others from here
	f.build(t, ceilHour(from))
	if how := f.top(t, from, 1); !how.Before || how.Lists < pgstore.MinBeforeLists {
		t.Fatalf("a cut with no tie was not ranked from the snapshot: %+v", how)
	}
}
