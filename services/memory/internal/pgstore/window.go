package pgstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// windowSQL answers GetComposeWindow in one statement, so one round trip and one snapshot. Rows are told apart by
// the first column (0 mysis — carrying in its last five columns the window's bounds and what the statement left out
// because the caller holds it (om.skip, om.held), so the caller learns it from the statement itself —, 1 memory,
// 2 mission, 3 global fallback); the columns of the other kinds are typed NULLs.
//
// Parameters: $1 mysis, $2 window, $3 global fallback, $4 v2, $5 max turn rows, $6 carry limit, $7 snapshot tools,
// $8 pinned tools, $9 reply limit, $10 carry scan range, $11 call lookback, $12 recent from (0 = none), $13 and $14
// the objective and recent start of the carried rows the caller holds (carry_known; start 0 = none), $15 their seqs,
// $16 the last of the recent rows it holds (0 = none).
//
// The recent part is the seq range [s, last_seq] (seq is gapless). v1 (not $4): s = last_seq - window + 1, the
// newest window rows, exactly as before. v2: s reaches back to the current turn's opener (the newest user row with
// source direct, broadcast or nudge: first entry of memories_turn_open_idx), but no further than max turn rows
// (truncated); with recent from ($12 > 0, the composer's previous compaction boundary) s is that seq instead, so the
// part stays put between the composer's compactions (still bounded by max turn rows). s is then moved onto a loop
// boundary: when the first call-or-result row at or after s is a tool
// result, s moves back to the assistant row that made the call — or, when that row lies beyond max turn rows (the
// bound is hard, as when the turn was truncated), forward past the cut loop's results.
//
// Carried rows (v2), all before s: the newest result per distinct call since the objective (mission seq), keyed by
// call_key or by tool name for snapshot tools, among the tool results of that span in the $10 rows before s
// (memories_tool_seq_idx walked newest first, index-only when vacuumed; its LIMIT never binds, as the range holds
// at most $10 results; grouped by the key's bytes, COLLATE "C", which groups exactly as the database's
// deterministic collation does but sorts without strcoll), newest $6 keys — the state as of s, so a newer result in
// the recent part does not change what is carried; the newest result before s of each pinned tool however old
// (memories_tool_name_idx); each of those with the assistant row that made the call; and the newest $9 assistant
// text replies since the objective (memories_reply_idx). Every part is an
// index probe or a bounded index range, so the cost follows the size of the answer, not the length of the history.
//
// When the window's objective and start equal the caller's ($13, $14), the carried rows are the ones the caller
// holds (all before s, memories append-only): ck, pn and rp are gated off by a one-time filter (om), so none of them
// is read — the carry scan's cost, which grows with the time since the objective, is skipped altogether. The recent
// rows the caller holds ([s, $16], when that lies within [s, last_seq]: om.held) are left out of r as well, so such a
// window reads only the rows stored since the caller's previous one.
//
// When the objective is the same but s lies above the held start (the caller's compaction boundary moved up) and the
// caller sent the held rows' seqs ($15), the carried rows at s are derived (om.derive): each part reads only the
// rows between the two starts (om.lo = $14) plus the held rows (kn: one (mysis_id, seq) probe per seq — a filter on
// the parts' own index ranges would read everything below the held start), and the answer is the one the whole
// scan gives. For the calls: a call's newest result below s is either between the starts or its newest below the held
// start; if the call is among the $6 newest at s, it was among them at the held start too (every call newer than it
// then is newer now, and results leave the scan range by seq alone), so that result is held. For the pinned tools
// and the replies the same holds of the newest one and the newest $9.
const windowSQL = `
WITH y AS (
	SELECT ` + mysisCols + ` FROM myses y WHERE y.id = $1
), mi AS (
	SELECT ` + memCols + ` FROM memories m
	WHERE m.mysis_id = $1 AND m.role = 2 AND m.source IN (1, 2) AND m.sender_id = ''
	ORDER BY m.seq DESC LIMIT 1
), g AS (
	SELECT b.id, b.content, b.created_at FROM broadcasts b
	WHERE $3::boolean AND b.sender_id = '' AND NOT EXISTS (SELECT 1 FROM mi)
	ORDER BY b.created_at DESC, b.id DESC LIMIT 1
), ts AS MATERIALIZED (
	SELECT coalesce((SELECT o.seq FROM memories o
		WHERE $4::boolean AND o.mysis_id = $1 AND o.role = 2 AND o.source IN (1, 2, 3)
		ORDER BY o.seq DESC LIMIT 1), 1) AS seq
), b1 AS MATERIALIZED (
	SELECT y.last_seq AS l, coalesce((SELECT mi.seq FROM mi), 0) AS obj,
		CASE WHEN $4::boolean THEN
			CASE WHEN $12::int8 > 0 THEN greatest(least($12::int8, y.last_seq), y.last_seq - $5 + 1, 1)
			ELSE least(greatest(y.last_seq - $2 + 1, 1), greatest(ts.seq, y.last_seq - $5 + 1, 1)) END
		ELSE greatest(y.last_seq - $2 + 1, 1) END AS s1,
		$4::boolean AND CASE WHEN $12::int8 > 0 THEN $12::int8 ELSE ts.seq END < y.last_seq - $5 + 1 AS truncated
	FROM y, ts
), b2 AS MATERIALIZED (
	SELECT b1.l, b1.obj, b1.truncated, CASE
		WHEN NOT $4::boolean OR b1.l = 0 THEN b1.s1
		WHEN (SELECT f.role FROM memories f WHERE f.mysis_id = $1 AND f.seq >= b1.s1 AND f.role IN (3, 4)
			ORDER BY f.seq LIMIT 1) IS DISTINCT FROM 4 THEN b1.s1
		ELSE coalesce(
			(SELECT a.seq FROM memories a
			WHERE a.mysis_id = $1 AND a.seq < b1.s1 AND a.seq >= greatest(b1.s1 - $11, b1.l - $5 + 1)
				AND a.role = 3 AND a.tool_calls IS NOT NULL
			ORDER BY a.seq DESC LIMIT 1),
			(SELECT min(f.seq) FROM memories f WHERE f.mysis_id = $1 AND f.seq > b1.s1 AND f.role <> 4),
			b1.s1)
	END AS s
	FROM b1
), om AS MATERIALIZED (
	SELECT o.skip, o.derive, CASE WHEN o.derive THEN $14::int8 ELSE 0 END AS lo,
		CASE WHEN o.skip AND $16::int8 >= o.s AND $16::int8 <= o.l THEN $16::int8 ELSE 0 END AS held
	FROM (
		SELECT b2.s, b2.l, $14::int8 > 0 AND b2.obj = $13::int8 AND b2.s = $14::int8 AS skip,
			b2.obj = $13::int8 AND $14::int8 > 0 AND b2.s > $14::int8 AND cardinality($15::int8[]) > 0 AS derive
		FROM b2
	) o
), kn AS MATERIALIZED (
	SELECT k.seq, k.role, k.tool_name, k.call_key, k.text FROM unnest($15::int8[]) AS h(seq), LATERAL (
		SELECT t.seq, t.role, t.tool_name, t.call_key, t.tool_calls IS NULL AS text FROM memories t
		WHERE t.mysis_id = $1 AND t.seq = h.seq LIMIT 1
	) k
	WHERE (SELECT om.derive FROM om) AND h.seq < $14::int8
), r AS (
	SELECT ` + memCols + ` FROM memories m
	WHERE m.mysis_id = $1 AND m.seq >= (SELECT b2.s FROM b2) AND m.seq <= (SELECT b2.l FROM b2)
		AND m.seq > (SELECT om.held FROM om)
), ck AS (
	(SELECT t.seq, CASE WHEN t.tool_name = ANY($7::text[]) THEN t.tool_name ELSE coalesce(t.call_key, t.tool_name) END AS k
	FROM memories t
	WHERE $6 > 0 AND NOT (SELECT om.skip FROM om) AND t.mysis_id = $1 AND t.role = 4
		AND t.seq > (SELECT b2.obj FROM b2) AND t.seq >= (SELECT b2.s FROM b2) - $10 AND t.seq < (SELECT b2.s FROM b2)
		AND t.seq >= (SELECT om.lo FROM om)
	ORDER BY t.seq DESC LIMIT $10)
	UNION ALL
	SELECT kn.seq, CASE WHEN kn.tool_name = ANY($7::text[]) THEN kn.tool_name ELSE coalesce(kn.call_key, kn.tool_name) END
	FROM kn
	WHERE $6 > 0 AND kn.role = 4 AND kn.seq > (SELECT b2.obj FROM b2) AND kn.seq >= (SELECT b2.s FROM b2) - $10
), c AS (
	SELECT max(ck.seq) AS seq FROM ck GROUP BY ck.k COLLATE "C" ORDER BY 1 DESC LIMIT $6
), pn AS (
	SELECT x.seq FROM unnest($8::text[]) AS p(name), LATERAL (
		SELECT coalesce((SELECT t.seq FROM memories t WHERE NOT (SELECT om.skip FROM om) AND t.mysis_id = $1 AND t.role = 4
				AND t.tool_name = p.name
				AND t.seq < (SELECT b2.s FROM b2) AND t.seq >= (SELECT om.lo FROM om)
			ORDER BY t.seq DESC LIMIT 1),
			(SELECT max(kn.seq) FROM kn WHERE kn.role = 4 AND kn.tool_name = p.name)) AS seq
	) x WHERE x.seq IS NOT NULL
), rp AS (
	(SELECT a.seq FROM memories a
	WHERE $9 > 0 AND NOT (SELECT om.skip FROM om) AND a.mysis_id = $1 AND a.role = 3 AND a.tool_calls IS NULL
		AND a.seq > (SELECT b2.obj FROM b2) AND a.seq < (SELECT b2.s FROM b2) AND a.seq >= (SELECT om.lo FROM om)
	ORDER BY a.seq DESC LIMIT $9)
	UNION ALL
	SELECT kn.seq FROM kn WHERE $9 > 0 AND kn.role = 3 AND kn.text AND kn.seq > (SELECT b2.obj FROM b2)
	ORDER BY 1 DESC LIMIT $9
), xa AS (
	SELECT a.seq FROM (SELECT seq FROM c UNION SELECT seq FROM pn) x, LATERAL (
		SELECT a.seq FROM memories a
		WHERE a.mysis_id = $1 AND a.seq < x.seq AND a.seq >= x.seq - $11 AND a.role = 3 AND a.tool_calls IS NOT NULL
		ORDER BY a.seq DESC LIMIT 1
	) a
), ex AS (
	SELECT seq FROM c UNION SELECT seq FROM pn UNION SELECT seq FROM rp UNION SELECT seq FROM xa
)
SELECT 0, y.*, ` + nullMem + `, b2.s, b2.obj, b2.truncated, om.skip, om.held FROM y, b2, om
UNION ALL SELECT 1, ` + nullMysis + `, r.*, ` + nullBounds + ` FROM r
UNION ALL SELECT 1, ` + nullMysis + `, ` + memCols + `, ` + nullBounds + ` FROM memories m
	WHERE m.mysis_id = $1 AND m.seq = ANY (ARRAY(SELECT seq FROM ex)) AND m.seq < (SELECT b2.s FROM b2)
UNION ALL SELECT 2, ` + nullMysis + `, mi.*, ` + nullBounds + ` FROM mi
UNION ALL SELECT 3, ` + nullMysis + `, 0::int8, $1::uuid, 0::int8, 0::int8, 2::int2, 2::int2, '', g.content, '',
	NULL::jsonb, '', '', NULL::text, g.id, g.created_at, NULL::text, NULL::text, ` + nullBounds + `
	FROM g`

// windowArgs are windowSQL's parameters for a normalised query.
func windowArgs(q memory.WindowQuery) []any {
	snap, pinned := q.SnapshotTools, q.PinnedTools
	if snap == nil {
		snap = []string{}
	}
	if pinned == nil {
		pinned = []string{}
	}
	seqs := q.Known.Seqs
	if seqs == nil {
		seqs = []int64{}
	}
	return []any{q.MysisID, q.Window, q.GlobalFallback, q.V2(), q.TurnRows(), q.CarryLimit, snap, pinned,
		q.ReplyLimit, memory.CarryScanRows, memory.CallLookback, q.RecentFrom, q.Known.ObjectiveSeq, q.Known.RecentStartSeq,
		seqs, q.Known.RecentThrough}
}

// GetComposeWindow returns the mysis, its compose window (oldest first, rows as stored) and its current mission for
// a normalised query (memory.WindowQuery.Normalize); see windowSQL for what the window holds. The caller bounds the
// window's size (memory.ComposeWindow.Bound).
//
// The statement runs on its cached generic plan (queueGenericTx, in the same round trip): planned afresh it cost
// ~1.5 ms a call, most of the server's work for a window that returns a few new rows
// (docs/benchmarks/2026-11-25-composecontext-derived-carry.md, "The window statement on its generic plan").
// TestComposeWindowV2UsesItsIndexes and TestComposeWindowDerivesMovedCarry check the generic plan's indexes and reads.
func (s *Store) GetComposeWindow(ctx context.Context, q memory.WindowQuery) (memory.ComposeWindow, error) {
	b := &pgx.Batch{}
	queueGenericTx(b)
	b.Queue(windowSQL, windowArgs(q)...)
	b.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, b)
	out, err := readWindow(br, q)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = dbErr(cerr, "compose window")
	}
	return out, err
}

// readWindow reads GetComposeWindow's batch: the transaction's head, the window statement, COMMIT.
func readWindow(br pgx.BatchResults, q memory.WindowQuery) (memory.ComposeWindow, error) {
	if err := readGenericTx(br, "compose window"); err != nil {
		return memory.ComposeWindow{}, err
	}
	rows, err := br.Query()
	if err != nil {
		return memory.ComposeWindow{}, dbErr(err, "compose window")
	}
	out, err := scanWindow(rows, q)
	if err != nil {
		return out, err
	}
	if _, err := br.Exec(); err != nil {
		return memory.ComposeWindow{}, dbErr(err, "compose window")
	}
	return out, nil
}

// scanWindow reads the window statement's rows into the window (see windowSQL for the kinds of rows).
func scanWindow(rows pgx.Rows, q memory.WindowQuery) (memory.ComposeWindow, error) {
	defer rows.Close()
	var out memory.ComposeWindow
	found := false
	out.Memories = make([]memory.Memory, 0, q.Window)
	for rows.Next() {
		var r composeRow
		if err := rows.Scan(r.dest()...); err != nil {
			return memory.ComposeWindow{}, dbErr(err, "compose window")
		}
		if r.kind == 0 {
			out.Mysis, found = r.mysis(), true
			out.RecentStartSeq, out.ObjectiveSeq, out.TurnTruncated = deref(r.wStart), deref(r.wObjective), deref(r.wTruncated)
			out.CarryOmitted, out.RecentOmittedThrough = deref(r.wSkip), deref(r.wHeld)
			continue
		}
		m, err := r.memory()
		if err != nil {
			return memory.ComposeWindow{}, err
		}
		switch r.kind {
		case 1:
			out.Memories = append(out.Memories, m)
		case 2:
			out.Mission = &memory.Mission{Memory: m}
		case 3:
			out.Mission = &memory.Mission{Memory: m, GlobalFallback: true}
		}
	}
	if err := rows.Err(); err != nil {
		return memory.ComposeWindow{}, dbErr(err, "compose window")
	}
	if !found {
		return memory.ComposeWindow{}, errMysisNotFound(q.MysisID)
	}
	// A mysis without memories has no recent part, and nothing carried to leave out.
	if out.Mysis.LastSeq == 0 {
		out.RecentStartSeq, out.CarryOmitted, out.RecentOmittedThrough = 0, false, 0
	}
	// Rows come in index order per part; the composer wants one chronological list.
	slices.SortFunc(out.Memories, func(a, b memory.Memory) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}
