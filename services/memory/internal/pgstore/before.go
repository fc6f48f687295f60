package pgstore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Snapshots of each mysis's cost before a whole hour (migration 00016), for ranking myses by cost over a range of
// several hours: a mysis's cost since hour A is its all-time cost less its cost before A, and between hours A and B
// its cost before B less its cost before A — one or two entries per mysis however long the range, where summing
// the range's hours reads one entry per mysis and hour. topByCost uses the snapshots when they exist and are not
// stale (each checked in the ranking's own transaction), else ranks as before and asks for them; the
// UsageSnapshotter builds what is asked, in the background.

const (
	// BeforeKeptHours is how many hours back from the current one the UsageSnapshotter keeps a snapshot of every
	// hour (each hour from the one before the current, back): any range of several hours starting and ending within
	// them finds its snapshots built. One is built a minute or less after each hour ends.
	BeforeKeptHours = 168
	// beforeBuildsPerTick is how many missing hours of the kept ones a tick builds at most (newest first): a replica
	// started on a database with none builds them over about 40 minutes, not at once.
	beforeBuildsPerTick = 4
	// maxBeforeMarks is how many snapshots are kept (the newest built): the kept hours and some asked for. Each
	// holds a row per mysis that had called before its hour (~1.45 MB at 10,000 myses).
	maxBeforeMarks = BeforeKeptHours + 32
	// beforeMaxAge is how old a snapshot's hour may be: older ones are deleted.
	beforeMaxAge = 8 * 24 * time.Hour
	// beforeRebuildEvery is how often one replica rebuilds the same hour's snapshot at most (a stream of late calls
	// before it would otherwise rebuild it on every ranking).
	beforeRebuildEvery = time.Minute
)

// buildBeforeSQL replaces the snapshot of hour $1: each mysis's all-time cost and calls less its hours from $1 on,
// for the myses that had called before $1. The all-time and hourly rows are read in one snapshot, so they agree.
const buildBeforeSQL = `INSERT INTO llm_usage_mysis_before (start, mysis_id, cost_nanos, calls)
	SELECT $1, a.mysis_id, a.cost_nanos - coalesce(h.cost, 0), a.calls - coalesce(h.calls, 0)
	FROM llm_usage_mysis_cost a
	LEFT JOIN (
		SELECT mysis_id, sum(cost_nanos)::bigint AS cost, sum(calls)::bigint AS calls FROM llm_usage_mysis_cost
		WHERE span = 1 AND start >= $1 GROUP BY mysis_id) h ON h.mysis_id = a.mysis_id
	WHERE a.span = 3 AND a.calls - coalesce(h.calls, 0) > 0`

// BuildUsageSnapshot (re)builds the snapshot of each mysis's cost before the whole UTC hour at (rounded down), and
// returns how many myses it holds. Concurrent builds of one hour (several replicas) wait for each other; the last
// one's rows stand. VacuumUsageSnapshots after a batch of builds lets rankings read the rows from the index alone.
func (s *Store) BuildUsageSnapshot(ctx context.Context, at time.Time) (int, error) {
	start := at.UTC().Truncate(time.Hour)
	var n int64
	// Read committed: every statement sees what committed before it, so a build that waited for another's lock sees
	// its mark; the rows are one INSERT ... SELECT, whose all-time and hourly rows come from one snapshot.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		// One build of an hour at a time: a second waits here.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('zoea usage before ' || $1::text, 0))`,
			start.Format(time.RFC3339)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM llm_usage_before_marks WHERE start = $1`, start); err != nil {
			return err // (its rows go with it)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO llm_usage_before_marks (start) VALUES ($1)`, start); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, buildBeforeSQL, start)
		n = tag.RowsAffected()
		return err
	})
	return int(n), dbErr(err, "build usage snapshot")
}

// VacuumUsageSnapshots vacuums and analyzes the snapshots' table, so rankings read new rows from the index alone (the
// visibility map) and plan with their count. A role that does not own the table gets a warning, not an error, and
// the rankings read the heap too.
func (s *Store) VacuumUsageSnapshots(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `VACUUM (ANALYZE) llm_usage_mysis_before`)
	return dbErr(err, "vacuum usage snapshots")
}

// PruneUsageSnapshots deletes the snapshots of hours older than beforeMaxAge and all but the maxBeforeMarks newest
// built, with their rows.
func (s *Store) PruneUsageSnapshots(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM llm_usage_before_marks WHERE start < $1 OR start IN (
		SELECT start FROM llm_usage_before_marks ORDER BY built_at DESC, start DESC OFFSET $2)`,
		now.Add(-beforeMaxAge), maxBeforeMarks)
	return int(tag.RowsAffected()), dbErr(err, "prune usage snapshots")
}

// missingUsageSnapshots returns up to beforeBuildsPerTick of the kept hours before now's (BeforeKeptHours of them)
// that have no snapshot, newest first.
func (s *Store) missingUsageSnapshots(ctx context.Context, now time.Time) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT h FROM generate_series($1::timestamptz - $2 * interval '1 hour',
		$1::timestamptz - interval '1 hour', interval '1 hour') AS h
		WHERE NOT EXISTS (SELECT FROM llm_usage_before_marks m WHERE m.start = h) ORDER BY h DESC LIMIT $3`,
		now.UTC().Truncate(time.Hour), BeforeKeptHours, beforeBuildsPerTick)
	var missing []time.Time
	if err == nil {
		missing, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
	}
	return missing, dbErr(err, "check usage snapshots")
}

// wantSnapshot asks the UsageSnapshotter, if one runs, to build the snapshot of hour start; it never blocks (a full
// queue drops the request: the next ranking asks again).
func (s *Store) wantSnapshot(start time.Time) {
	select {
	case s.snapWant <- start:
	default:
	}
}

// UsageSnapshotter builds the snapshots rankings ask for (topByCost) and prunes old ones, in the background of a
// memory server. Each replica runs one; builds of one hour by two replicas wait for each other.
type UsageSnapshotter struct {
	Store *Store
	Log   *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// built, when set (tests), is told of every build and its error.
	built func(start time.Time, err error)
}

// Run serves build requests until ctx ends; when it starts and on every tick it prunes, and builds up to
// beforeBuildsPerTick of the kept hours' snapshots (BeforeKeptHours) that do not exist, newest first, so a ranking
// of a range within them finds its snapshots without asking.
func (u *UsageSnapshotter) Run(ctx context.Context, tick <-chan time.Time) {
	now := u.Now
	if now == nil {
		now = time.Now
	}
	last := map[time.Time]time.Time{} // when this replica last built each hour
	// build builds the snapshot of hour start and reports whether it did.
	build := func(start time.Time) bool {
		start, t := start.UTC(), now() // (UTC: the same hour is one key of last, whoever asked)
		if start.After(t) || t.Sub(last[start]) < beforeRebuildEvery {
			return false // an hour still to come has nothing settled before it; one rebuilt just now waits
		}
		last[start] = t
		n, err := u.Store.BuildUsageSnapshot(ctx, start)
		if err != nil && !errors.Is(err, context.Canceled) {
			u.Log.Warn("usage snapshot not built", "hour", start, "err", err)
		} else if err == nil {
			u.Log.Debug("usage snapshot built", "hour", start, "myses", n, "took", now().Sub(t).String())
		}
		if u.built != nil {
			u.built(start, err)
		}
		return err == nil
	}
	vacuum := func() {
		if err := u.Store.VacuumUsageSnapshots(ctx); err != nil && !errors.Is(err, context.Canceled) {
			u.Log.Warn("usage snapshots not vacuumed", "err", err)
		}
	}
	onTick := func(t time.Time) {
		for h, at := range last {
			if t.Sub(at) > beforeRebuildEvery {
				delete(last, h)
			}
		}
		if _, err := u.Store.PruneUsageSnapshots(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
			u.Log.Warn("usage snapshots not pruned", "err", err)
		}
		missing, err := u.Store.missingUsageSnapshots(ctx, t)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				u.Log.Warn("usage snapshots not checked", "err", err)
			}
			return
		}
		built := false
		for _, h := range missing {
			built = build(h) || built
		}
		if built {
			vacuum() // once for the batch
		}
	}
	// onWant builds the hour a ranking asked for and every other hour asked meanwhile (a ranking asks for two),
	// then vacuums once for the batch.
	onWant := func(start time.Time) {
		built := build(start)
		for more := true; more; {
			select {
			case start := <-u.Store.snapWant:
				built = build(start) || built
			default:
				more = false
			}
		}
		if built {
			vacuum()
		}
	}
	onTick(now()) // at start too: the kept hours need not wait for the first tick
	for {
		select {
		case <-ctx.Done():
			return
		case start := <-u.Store.snapWant:
			onWant(start)
		case t := <-tick:
			onTick(t)
		}
	}
}
