package pgstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Top by cost over the whole swarm (GetUsage with Top and no mysis ids) reads llm_usage_mysis_cost (migration
// 00015): one row per mysis and whole hour, whole day or all time, read in cost order through
// llm_usage_mysis_cost_rank_idx (span, start, cost_nanos DESC).
//
// A range is a set of buckets (the hours and days of rangeSegments) plus at most two ragged edges shorter than an
// hour (or one range shorter than two hours without a whole hour). Every bucket is a list of myses ordered by
// cost; an edge's lists are the hours it touches, whose costs bound the edge's. The ranking is the threshold
// algorithm (Fagin, Lotem, Naor) over those lists: read the first depth entries of every list; every mysis seen
// gets its exact sum over the range (its rows of the range's buckets by primary key, its edge calls through
// llm_calls_mysis_started_idx); a mysis not seen has at most the threshold, the sum over the lists of the last cost
// read (0 for a list read to its end). When the Top-th exact sum is above the threshold, no unseen mysis can reach
// or tie it, so the first Top seen myses in (cost desc, name) order are the answer, ties at the cut included.
// Otherwise it reads deeper once if that stays small (maxTopDeepEntries), and then sums every mysis's entries of
// the range from the index (what the ranking did before, now one narrow row per mysis and bucket), without
// parallel workers.
//
// One bucket (all time, a whole day such as today, a whole hour) stops after its first entries unless the costs
// tie across the cut. Several buckets stop early when a few myses cost much more than most (skewed spend); when
// every mysis costs about the same per hour (uniform spend) the threshold stays far above the Top-th sum and the
// ranking falls back to the full sum. A range of MinBeforeLists buckets or more is ranked first from the snapshots
// of costs before its first (and, with an end, its last) whole hour, when they are built and fresh (rankFromBefore,
// before.go), which read two entries per mysis however many buckets the range has.

// TopHow is how a top-by-cost ranking ended: the lists read whole, stopped at the threshold after the first or the
// deeper read, or summed whole.
type TopHow struct {
	Lists  int  // lists (buckets) of the range
	Rounds int  // reads of the lists (0: the range had more than maxTopLists)
	Whole  bool // fell back to summing every mysis's entries
	Depth  int  // entries read of every list in the last read
	// Before: ranked from the snapshots of costs before the range's first (and last) whole hour (before.go), not
	// the lists.
	Before bool
}

// bucket is one list of the ranking: llm_usage_mysis_cost's rows of one span and start.
type bucket struct {
	span  rollupSpan
	start time.Time
}

const (
	// maxTopLists is the most lists the threshold algorithm reads; a range of more buckets is summed whole.
	maxTopLists = 64
	// topDeepFactor is how much deeper the second (and last) read of the lists goes than the first.
	topDeepFactor = 16
	// maxTopDeepEntries is the most list entries the deeper read may take (over all lists).
	maxTopDeepEntries = 4096
)

// topFirstDepth is how many entries of every list the first read takes for the top n.
func topFirstDepth(n int) int { return 4*n + 16 }

// topPlan is a ranking's lists and the SQL that sums candidates exactly over the range.
type topPlan struct {
	lists []bucket
	// exact selects (mysis_id, cost_nanos, calls) of the range's rows for the myses in the CTE cand; its
	// placeholders are args.
	exact string
	args  []any
	// whole selects (mysis_id, cost_nanos, calls) of every mysis's rows in the range (the fallback); the same args.
	whole string
}

// topExtents is the first and last start of the hours and days stored, which bound a range's open ends.
type topExtents struct{ minHour, maxHour, minDay, maxDay *time.Time }

// topExtentsSQL reads the extents and, in the same round trip, which of the snapshot hours $1 are built (before.go).
const topExtentsSQL = `SELECT
	(SELECT min(start) FROM llm_usage_mysis_cost WHERE span = 1), (SELECT max(start) FROM llm_usage_mysis_cost WHERE span = 1),
	(SELECT min(start) FROM llm_usage_mysis_cost WHERE span = 2), (SELECT max(start) FROM llm_usage_mysis_cost WHERE span = 2),
	(SELECT coalesce(array_agg(EXISTS (SELECT FROM llm_usage_before_marks m WHERE m.start = w.start) ORDER BY w.i), '{}')
		FROM unnest($1::timestamptz[]) WITH ORDINALITY AS w(start, i))`

// planTop builds the lists and the exact sums of a top query over q's range (all time when q has none).
func planTop(q memory.UsageQuery, ext topExtents) topPlan {
	var p topPlan
	arg := func(v any) string {
		p.args = append(p.args, v)
		return "$" + strconv.Itoa(len(p.args))
	}
	if q.From.IsZero() && q.To.IsZero() {
		p.lists = []bucket{{3, time.Unix(0, 0).UTC()}}
		p.exact = `SELECT c.mysis_id, c.cost_nanos, c.calls FROM llm_usage_mysis_cost c JOIN cand ON cand.mysis_id = c.mysis_id
			WHERE c.span = 3`
		p.whole = `SELECT c.mysis_id, c.cost_nanos, c.calls FROM llm_usage_mysis_cost c WHERE c.span = 3`
		return p
	}
	var exact, whole []string
	for _, seg := range rangeSegments(q.From, q.To) {
		if seg.span == spanCalls {
			// The hours the edge touches (two when a range shorter than two hours holds no whole hour).
			for h := seg.from.Truncate(time.Hour); h.Before(seg.to); h = h.Add(time.Hour) {
				p.lists = append(p.lists, bucket{spanHour, h})
			}
			cond := `u.started_at >= ` + arg(seg.from) + ` AND u.started_at < ` + arg(seg.to)
			exact = append(exact, `SELECT u.mysis_id, u.cost_nanos, 1::bigint FROM cand JOIN llm_calls u ON u.mysis_id = cand.mysis_id
				WHERE `+cond)
			whole = append(whole, `SELECT u.mysis_id, u.cost_nanos, 1::bigint FROM llm_calls u WHERE `+cond)
			continue
		}
		step, lo, hi := time.Hour, ext.minHour, ext.maxHour
		if seg.span == spanDay {
			step, lo, hi = 24*time.Hour, ext.minDay, ext.maxDay
		}
		// The buckets of the segment that can hold rows: its bounds, open ends closed by the stored extent.
		from, to := seg.from, seg.to
		if lo == nil || hi == nil {
			continue // no bucket of this span is stored
		}
		if from.IsZero() || from.Before(*lo) {
			from = *lo
		}
		if to.IsZero() || to.After(hi.Add(step)) {
			to = hi.Add(step)
		}
		for t := from; t.Before(to); t = t.Add(step) {
			p.lists = append(p.lists, bucket{seg.span, t})
			if len(p.lists) > maxTopLists {
				break
			}
		}
		cond := `c.span = ` + strconv.Itoa(int(seg.span))
		if !seg.from.IsZero() {
			cond += ` AND c.start >= ` + arg(seg.from)
		}
		if !seg.to.IsZero() {
			cond += ` AND c.start < ` + arg(seg.to)
		}
		exact = append(exact, `SELECT c.mysis_id, c.cost_nanos, c.calls FROM cand JOIN llm_usage_mysis_cost c ON c.mysis_id = cand.mysis_id
			WHERE `+cond)
		whole = append(whole, `SELECT c.mysis_id, c.cost_nanos, c.calls FROM llm_usage_mysis_cost c WHERE `+cond)
	}
	p.exact = strings.Join(exact, "\n\t\tUNION ALL ")
	p.whole = strings.Join(whole, "\n\t\tUNION ALL ")
	return p
}

// ranked is a mysis's exact cost over the range.
type ranked struct {
	id   string
	cost int64
}

// topRound reads the first depth entries of every list and returns the exact sums (myses with calls in the range
// only) of every mysis seen, the threshold, and whether every list was read to its end.
func topRound(ctx context.Context, tx pgx.Tx, p topPlan, depth int) ([]ranked, int64, bool, error) {
	spans, starts := make([]int16, len(p.lists)), make([]time.Time, len(p.lists))
	for i, l := range p.lists {
		spans[i], starts[i] = int16(l.span), l.start
	}
	args := append(slices.Clone(p.args), spans, starts, depth)
	var threshold int64
	var more bool
	var ids []string
	var costs []int64
	if err := tx.QueryRow(ctx, topRoundSQL(p), args...).Scan(&threshold, &more, &ids, &costs); err != nil {
		return nil, 0, false, err
	}
	out := make([]ranked, len(ids))
	for i := range ids {
		out[i] = ranked{ids[i], costs[i]}
	}
	return out, threshold, !more, nil
}

// topWhole sums every mysis's entries of the range and returns the myses at or above the n-th highest cost (the
// fallback of the threshold algorithm).
func topWhole(ctx context.Context, tx pgx.Tx, p topPlan, n int) ([]ranked, error) {
	args := append(slices.Clone(p.args), n)
	rows, err := tx.Query(ctx, `WITH r AS (
			SELECT r.mysis_id, sum(r.cost_nanos)::bigint AS cost FROM (`+p.whole+`) AS r (mysis_id, cost_nanos, calls)
			GROUP BY r.mysis_id HAVING sum(r.calls) > 0),
		cut AS (SELECT cost FROM r ORDER BY cost DESC OFFSET $`+strconv.Itoa(len(args))+` - 1 LIMIT 1)
		SELECT mysis_id::text, cost FROM r WHERE cost >= ALL (SELECT cost FROM cut)`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ranked, error) {
		var x ranked
		return x, r.Scan(&x.id, &x.cost)
	})
}

// atCut keeps the myses at or above the n-th highest cost (all of them when fewer than n), and that cost.
func atCut(rs []ranked, n int) ([]ranked, int64) {
	slices.SortFunc(rs, func(a, b ranked) int {
		switch {
		case a.cost > b.cost:
			return -1
		case a.cost < b.cost:
			return 1
		}
		return 0
	})
	if len(rs) < n {
		return rs, -1
	}
	cut := rs[n-1].cost
	i := n
	for i < len(rs) && rs[i].cost == cut {
		i++
	}
	return rs[:i], cut
}

// topByCost answers GetUsage with Top over the whole swarm: the ranking (see the comment at the top of this file)
// picks the myses at or above the Top-th cost, and one batch reads the selection's total and those myses' names
// and full sums, first Top in (cost desc, name) order.
func (s *Store) topByCost(ctx context.Context, q memory.UsageQuery, f usageFilter) (memory.Usage, error) {
	var out memory.Usage
	// One snapshot for the ranking and the rows, so calls recorded meanwhile cannot reorder them.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var ext topExtents
		snaps := planBefore(q, time.Now())
		var have []bool
		if !q.From.IsZero() || !q.To.IsZero() {
			if err := tx.QueryRow(ctx, topExtentsSQL, snaps.hours()).Scan(&ext.minHour, &ext.maxHour, &ext.minDay, &ext.maxDay,
				&have); err != nil {
				return err
			}
		}
		p := planTop(q, ext)
		winners, how, err := s.rankFromBefore(ctx, tx, q, snaps, have, len(p.lists))
		if err != nil {
			return err
		}
		if !how.Before {
			if winners, how, err = rankTop(ctx, tx, p, q.Top); err != nil {
				return err
			}
		}
		if s.topTrace != nil {
			s.topTrace(how)
		}
		ids, costs := make([]string, len(winners)), make([]int64, len(winners))
		for i, w := range winners {
			ids[i], costs[i] = w.id, w.cost
		}
		b := &pgx.Batch{}
		b.Queue(`SELECT `+f.aggs+` FROM `+f.src+` WHERE `+f.cond, f.args...)
		rowArgs := append(slices.Clone(f.args), ids, costs, q.Top)
		b.Queue(`WITH w AS (SELECT * FROM unnest(`+f.param(1)+`::uuid[], `+f.param(2)+`::bigint[]) AS w(id, cost)),
			top AS (
				SELECT m.id, m.name, w.cost FROM w JOIN myses m ON m.id = w.id
				ORDER BY w.cost DESC, m.name LIMIT `+f.param(3)+`)
			SELECT m.id::text, m.name, '', '', t.* FROM top m
				CROSS JOIN LATERAL (SELECT `+f.aggs+` FROM `+f.walkSrc+`) t
				ORDER BY m.cost DESC, m.name`, rowArgs...)
		br := tx.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		var first, last *time.Time
		if err := br.QueryRow().Scan(totalsDest(&out.Total, &first, &last)...); err != nil {
			return err
		}
		setTimes(&out.Total, first, last)
		rows, err := scanUsageRows(br)
		if err != nil {
			return err
		}
		out.Rows = rows
		return br.Close()
	})
	if err != nil {
		return memory.Usage{}, dbErr(err, "get usage")
	}
	return out, nil
}

// rankTop returns the myses at or above the n-th highest cost of the plan's range: the threshold algorithm, read
// deeper at most once, then the full sum.
func rankTop(ctx context.Context, tx pgx.Tx, p topPlan, n int) ([]ranked, TopHow, error) {
	how := TopHow{Lists: len(p.lists)}
	if len(p.lists) <= maxTopLists {
		depth := topFirstDepth(n)
		for range 2 {
			how.Rounds++
			how.Depth = depth
			rs, threshold, ended, err := topRound(ctx, tx, p, depth)
			if err != nil {
				return nil, how, err
			}
			top, cut := atCut(rs, n)
			// Exact when every list was read whole, or when no unseen mysis can reach the cut.
			if ended || cut > threshold {
				return top, how, nil
			}
			// Read deeper only when close to stopping and when the deeper read stays small: far from stopping (the
			// threshold above twice the cut, as with uniform spend over many hours) it would read most entries and
			// sum most myses one by one, dearer than the full sum.
			if cut < 0 || threshold > 2*cut || len(p.lists)*depth*topDeepFactor > maxTopDeepEntries {
				break
			}
			depth *= topDeepFactor
		}
	}
	how.Whole = true
	// One process for the full sum: on a busy machine (the cores taken) parallel workers only queue, and gathering
	// and re-sorting their partial sums doubled its time (docs/BENCHMARKS.md).
	if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
		return nil, how, err
	}
	rs, err := topWhole(ctx, tx, p, n)
	return rs, how, err
}

// topRoundSQL is topRound's statement: its placeholders are p.args, then the lists' spans and starts and the depth.
func topRoundSQL(p topPlan) string {
	n := len(p.args)
	ph := func(i int) string { return "$" + strconv.Itoa(n+i) }
	return `WITH l AS (SELECT * FROM unnest(` + ph(1) + `::smallint[], ` + ph(2) + `::timestamptz[]) WITH ORDINALITY AS l(span, start, i)),
		seen AS (
			SELECT l.i, x.mysis_id, x.cost_nanos FROM l CROSS JOIN LATERAL (
				SELECT c.mysis_id, c.cost_nanos FROM llm_usage_mysis_cost c WHERE c.span = l.span AND c.start = l.start
				ORDER BY c.cost_nanos DESC LIMIT ` + ph(3) + `) x),
		edge AS (
			SELECT CASE WHEN count(s.mysis_id) = ` + ph(3) + ` THEN min(s.cost_nanos) ELSE 0 END AS last,
				count(s.mysis_id) = ` + ph(3) + ` AS more
			FROM l LEFT JOIN seen s ON s.i = l.i GROUP BY l.i),
		cand AS (SELECT DISTINCT mysis_id FROM seen),
		exact AS (
			SELECT r.mysis_id, sum(r.cost_nanos)::bigint AS cost FROM (` + p.exact + `) AS r (mysis_id, cost_nanos, calls)
			GROUP BY r.mysis_id HAVING sum(r.calls) > 0)
		SELECT (SELECT coalesce(sum(last), 0)::bigint FROM edge), (SELECT coalesce(bool_or(more), false) FROM edge),
			coalesce((SELECT array_agg(mysis_id::text) FROM exact), '{}'), coalesce((SELECT array_agg(cost) FROM exact), '{}')`
}

// MinBeforeLists is the fewest lists (buckets) a range must have to be ranked from snapshots: they read one or two
// entries per mysis however long the range, the lists one per mysis and bucket at worst, so for one or two buckets
// (this hour and the ragged hour before it: `--since 1h`) the lists cost the same or less (docs/BENCHMARKS.md).
const MinBeforeLists = 3

// beforePlan is which snapshots (before.go) a ranking of q would read: at the range's first whole hour a and, for a
// range with an end, at its last whole hour b; ahead is the hour after a, built ahead for an open range once it has
// begun (aheadDue). ok is false when the range cannot be ranked from snapshots (no start, or an hour still to come).
type beforePlan struct {
	a, b, ahead          time.Time
	closed, ok, aheadDue bool
}

func planBefore(q memory.UsageQuery, now time.Time) beforePlan {
	p := beforePlan{a: ceilTo(q.From, time.Hour).UTC(), b: q.To.Truncate(time.Hour).UTC(), closed: !q.To.IsZero()}
	p.ahead = p.a.Add(time.Hour)
	p.ok = !q.From.IsZero() && !p.a.After(now) && !p.b.After(now) && (!p.closed || p.b.After(p.a))
	p.aheadDue = !p.closed && !p.ahead.After(now)
	return p
}

// need is the snapshot hours the ranking reads.
func (p beforePlan) need() []time.Time {
	if p.closed {
		return []time.Time{p.a, p.b}
	}
	return []time.Time{p.a}
}

// hours is need and then ahead: the hours whose snapshots topExtentsSQL looks up (none when !ok).
func (p beforePlan) hours() []time.Time {
	if !p.ok {
		return []time.Time{}
	}
	return append(p.need(), p.ahead)
}

// rankFromBefore ranks a range of several buckets from the snapshots of every mysis's cost before the range's first
// whole hour A and, for a range with an end, before its last whole hour B (migration 00016): all-time cost (or the
// snapshot at B) less the snapshot at A, plus the calls of the ragged edges [from, A) and [B, to). have says which
// of snaps.hours() are built. It reports how.Before false — rank from the lists instead — when the range does not
// qualify, when a snapshot it needs is missing or stale (a call recorded since with a start before its hour), and
// then asks the UsageSnapshotter for it. An open range asks for the next hour's snapshot too, so the same range
// asked an hour later finds its own.
func (s *Store) rankFromBefore(ctx context.Context, tx pgx.Tx, q memory.UsageQuery, snaps beforePlan, have []bool, lists int) ([]ranked, TopHow, error) {
	how := TopHow{Lists: lists}
	if !snaps.ok || lists < MinBeforeLists || len(have) != len(snaps.hours()) {
		return nil, how, nil
	}
	need := snaps.need()
	if snaps.aheadDue && !have[len(need)] {
		s.wantSnapshot(snaps.ahead)
	}
	missing := false
	for i, h := range need {
		if !have[i] {
			s.wantSnapshot(h)
			missing = true
		}
	}
	if missing {
		return nil, how, nil
	}
	query, args := rankFromBeforeSQL(snaps, q)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, how, err
	}
	fresh := false
	var out []ranked
	for rows.Next() {
		var id *string
		var cost *int64
		if err := rows.Scan(&fresh, &id, &cost); err != nil {
			rows.Close()
			return nil, how, err
		}
		if id != nil {
			out = append(out, ranked{*id, *cost})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, how, err
	}
	if !fresh {
		for _, h := range need {
			s.wantSnapshot(h)
		}
		return nil, how, nil
	}
	// The rows are the Top+beforeTieRoom highest costs; the answer is every mysis at or above the Top-th. If the
	// last row ties it, more may: rank from the lists (exact, and rare: the room is 64 equal costs at the cut).
	top, cut := atCut(out, q.Top)
	if len(out) == q.Top+beforeTieRoom && out[len(out)-1].cost == cut {
		return nil, how, nil
	}
	how.Before = true
	return top, how, nil
}

// beforeTieRoom is how many rows past the Top-th rankFromBeforeSQL returns, to hold the myses that tie it.
const beforeTieRoom = 64

// rankFromBeforeSQL is rankFromBefore's statement: whether the snapshots it reads are fresh, and in cost order the
// Top+beforeTieRoom myses with the highest cost over the range (a single row with no mysis when none has calls in
// it). The whole hours [a, b) (b zero: from a on) are the all-time rows (or the snapshot at b) less the snapshot at
// a. A snapshot is fresh when its calls, summed, equal the swarm rollup's calls before its hour: its rows never
// exceed the truth (calls only add; a deleted mysis's rows go with it), so equal sums mean every row is exact. (A
// row at a without one at b makes the sum at a short, so that reads as stale too.)
func rankFromBeforeSQL(snaps beforePlan, q memory.UsageQuery) (string, []any) {
	args := []any{snaps.a, q.From, q.Top + beforeTieRoom}
	hi := `SELECT mysis_id, cost_nanos, calls, 0::bigint AS snap FROM llm_usage_mysis_cost WHERE span = 3`
	edges := `started_at >= $2 AND started_at < $1`
	freshHi := `true`
	if snaps.closed {
		args = append(args, snaps.b, q.To)
		hi = `SELECT mysis_id, cost_nanos, calls, calls AS snap FROM llm_usage_mysis_before WHERE start = $4`
		edges = `(started_at >= $2 AND started_at < $1) OR (started_at >= $4 AND started_at < $5)`
		freshHi = `(SELECT coalesce(sum(hi_snap), 0) FROM w) = (SELECT calls FROM swarm) -
			(SELECT coalesce(sum(calls), 0) FROM llm_usage_swarm_rollup WHERE span = 1 AND start >= $4)`
	}
	return `WITH w AS (
		SELECT h.mysis_id, h.cost_nanos - coalesce(l.cost_nanos, 0) AS cost, h.calls - coalesce(l.calls, 0) AS calls,
			h.snap AS hi_snap, coalesce(l.calls, 0) AS lo_snap
		FROM (` + hi + `) h LEFT JOIN llm_usage_mysis_before l ON l.start = $1 AND l.mysis_id = h.mysis_id),
	swarm AS (SELECT coalesce(sum(calls), 0) AS calls FROM llm_usage_swarm_rollup WHERE span = 3),
	e AS (
		SELECT mysis_id, sum(cost_nanos)::bigint AS cost, count(*) AS calls FROM llm_calls WHERE ` + edges + `
		GROUP BY mysis_id)
	SELECT f.ok, x.mysis_id::text, x.cost FROM (
		SELECT (SELECT coalesce(sum(lo_snap), 0) FROM w) = (SELECT calls FROM swarm) -
			(SELECT coalesce(sum(calls), 0) FROM llm_usage_swarm_rollup WHERE span = 1 AND start >= $1)
			AND ` + freshHi + ` AS ok) f
	LEFT JOIN LATERAL (
		SELECT coalesce(w.mysis_id, e.mysis_id) AS mysis_id, coalesce(w.cost, 0) + coalesce(e.cost, 0) AS cost
		FROM w FULL JOIN e ON e.mysis_id = w.mysis_id WHERE coalesce(w.calls, 0) + coalesce(e.calls, 0) > 0
		ORDER BY 2 DESC LIMIT $3) x ON true`, args
}
