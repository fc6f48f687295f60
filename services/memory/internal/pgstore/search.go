package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Search ranks with ts_rank normalised by document length (flag 1) and squashed into [0, 1) (flag 32), so a 50 kB
// tool result that mentions a word once does not outrank a short message about it; ties go to the newest row.
// Words people wrote outrank raw tool output for the same query: a commander's order, a broadcast or the mysis's
// own reply gets +1 over any tool result, so "copper_ore" finds the order to mine it before the twenty JSON
// inventories that list it (ts_rank alone put the order 24th of 26: JSON repeats the word far more often).
//
// Queries use websearch_to_tsquery with the 'english' configuration, the same one the generated tsvector columns
// use: words are stemmed and lower-cased, "quoted phrases", OR and -exclusion work, and identifiers survive
// because the parser treats both sides alike: iron_ore becomes the phrase iron <-> ore on both sides, a hex
// session id like a3f9c2e1b7d04f55 stays one lexeme, and a UUID is indexed whole and in its parts.
//
// Broadcast deliveries carry no text or vector of their own (a broadcast is stored once, see broadcasts.go): the
// second branch of searchMessagesSQL matches the broadcasts' own vectors (broadcasts_content_fts_idx) and joins the
// mysis's deliveries of them through memories_broadcast_delivery_key (broadcast_id, mysis_id), ranked like any
// message people wrote. A search query written elsewhere gets deliveries the same way: match broadcasts.content_tsv,
// join memories on broadcast_id and mysis_id.
//
// Snippets are computed in an outer query, only for the rows that survived LIMIT, because ts_headline re-parses
// the whole text; texts are cut at snippetInputChars first so a 1 MB tool result cannot make a search slow.

// headlineOpts marks matches «like this» and keeps snippets short.
const headlineOpts = `StartSel=«, StopSel=», MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`

const snippetInputChars = 100000

// Message search matches a memory's document, its content_tsv: its content, or for an assistant memory with tool
// calls its content and calls together (zoea_memory_tsv, migrations 00007 and 00009: `sell {"item_id":"titanium_ore"}`
// is found by "sell", "titanium_ore" or "sell titanium_ore"), indexed by the GIN index (mysis_id, content_tsv). The
// query is written inline (not a FROM item) so that, planned with the caller's words as constants, the planner
// estimates how many rows they match.
const (
	tsq      = `websearch_to_tsquery('english', $2)`
	msgMatch = `m.content_tsv @@ ` + tsq
	// msgText is what snippets are cut from: the content, plus the calls for a memory that made some.
	msgText = `CASE WHEN m.tool_calls IS NULL THEN m.content ELSE m.content || ' ' || coalesce(zoea_calls_text(m.tool_calls), '') END`
)

// searchWindow is the recency window of a long history's search, in rows back from its newest memory. The newest
// matches are looked for in the newest searchWindow rows first, in a statement of their own (windowRows): only when
// those hold fewer matches than the caller asked for (limit) does a second statement read older rows. The window
// always walks (mysis_id, seq) newest first, testing each row, and stops at $4 matches: at most searchWindow rows
// whatever the word. Two statements rather than one with the older tiers gated off: most searches end in the window,
// and a statement that also carries the tiers that do not run takes twice as long to plan (~2 ms against ~1 ms on
// the benchmark box; every search is planned with its words, see memoryHits).
//
// Below the window, the rows are read one of two ways, chosen per call from the window's own match rate (searchWalk):
//   - walked further through the same index, over as many rows as should hold the missing matches with a wide margin
//     (view_market, in 13,200 rows of a 1M-row mysis, at limit 50: a few thousand rows instead of a fetch, recheck
//     and sort of every older match);
//   - or from the GIN indexes (a word the window holds once or not at all: its older matches are few, or it is nowhere
//     and a walk would read the whole history), also below a walk that fell short.
//
// Measured and dropped: nested windows of fixed sizes (for a rare word the planner, which costs a GIN scan by the
// size of the mysis's posting list rather than by what fast-scan reads, walked them), and GIN reads bounded by seq
// ranges (Postgres applies the range after fetching every match; docs/BENCHMARKS.md).
const searchWindow = 2000

// searchWalkCap bounds the walk below the window, in rows (~1 µs each on the benchmark box, all pages cached).
const searchWalkCap = 8 * searchWindow

// searchWalkGIN is what one match read from the GIN indexes costs, in walked rows: a heap fetch, out of seq order,
// and for a phrase (which every identifier such as view_market becomes) a recheck against the stored vector. On the
// benchmark box, 1M-row mysis, all pages cached: 13,000 older view_market matches in 41-44 ms (~3.2 µs each) against
// 14,929 rows walked in 11-17 ms (~1 µs each); docs/benchmarks/2026-11-25-search-content-tsv.md.
const searchWalkGIN = 4

// searchWalk is the walk below the window, in rows, when the window (searchWindow rows) held n matches, limit were
// asked for and older rows lie below it; 0 for none. The walk is sized to hold 2*(limit-n)+8 matches at the window's
// rate — twice the missing ones plus 8, so that a window that was merely lucky rarely leaves it short — and is
// chosen only when it costs less than reading every older match from GIN (the window's rate times the older rows,
// at searchWalkGIN rows each), stays within searchWalkCap and leaves rows below it. A walk that falls short hands
// over to the GIN read below it.
func searchWalk(n, limit, older int64) int64 {
	if n <= 0 || n >= limit {
		return 0
	}
	est := ((2*(limit-n)+8)*searchWindow + n - 1) / n
	if est > searchWalkCap || est >= older || est*searchWindow >= searchWalkGIN*n*older {
		return 0
	}
	return est
}

// windowRows is the window's FROM item: the mysis's newest rows ($8 is the window's first seq minus one), newest
// first, behind OFFSET 0 so that the planner cannot push the match into it and answer the window from a GIN index
// instead. It used to choose, by its estimate of how many rows match; that estimate is far off for a phrase, which is
// what an identifier becomes (view_market is 'view' <-> 'market', estimated as two independent words: 58 rows of a
// 1M-row history where 13,200 match), and the GIN plan then fetched and rechecked every match of the whole history
// to keep the window's 29 (12,500 buffers, 95-99 ms on a quiet box, every call;
// docs/benchmarks/2026-11-25-search-tool-call-queries.md). A walk costs what the planner already chose for rare words and words that
// are nowhere: the 2,000 rows.
const windowRows = `(SELECT * FROM memories m WHERE m.mysis_id = $1 AND m.seq > $8 ORDER BY m.seq DESC OFFSET 0) m`

// walkRows is the walk below the window, the same way: rows ($9, $8].
const walkRows = `(SELECT * FROM memories m WHERE m.mysis_id = $1 AND m.seq > $9 AND m.seq <= $8 ORDER BY m.seq DESC OFFSET 0) m`

// matchesSQL is the mysis's newest $4 matches among the rows of from (and where), newest first. It has two arms: the
// mysis's own memories (their vectors), and its broadcast deliveries, which carry no text of their own (migration
// 00005): matched through the broadcast's vector (broadcasts' GIN index) and joined to this mysis's delivery row
// (memories_broadcast_delivery_key). An order on m.seq + 0 keeps the planner from walking (mysis_id, seq) to find
// the newest matches: they are read from the GIN indexes and sorted.
func matchesSQL(from, where, order string) string {
	return `(SELECT * FROM ((SELECT ` + memCols + `, m.content_tsv AS doc, ` + msgText + ` AS doc_text, ` + tsq + ` AS q
		FROM ` + from + `
		WHERE m.mysis_id = $1 AND ` + msgMatch + ` AND ($3 OR m.source <> 3)` + where + `
		ORDER BY ` + order + ` LIMIT $4)
		UNION ALL
		(SELECT ` + memCols + `, b.content_tsv AS doc, b.content AS doc_text, ` + tsq + ` AS q
		FROM broadcasts b JOIN memories m ON m.broadcast_id = b.id AND m.mysis_id = $1
		WHERE b.content_tsv @@ ` + tsq + where + `
		ORDER BY ` + order + ` LIMIT $4)) u ORDER BY u.seq DESC LIMIT $4)`
}

// The candidate sets of both orders: newest matches, newest first, each row with a partial flag (rows below were
// left unread although matches may be there).
var (
	// allMatchesSQL: a history no longer than the window, all of it.
	allMatchesSQL = `SELECT x.*, false AS partial FROM ` + matchesSQL("memories m", "", "m.seq DESC") + ` x`
	// windowMatchesSQL: the window; partial when it holds at least limit ($7) matches, and the older rows are then
	// never read.
	windowMatchesSQL = `SELECT x.*, count(*) OVER () >= $7 AS partial FROM ` +
		matchesSQL(windowRows, " AND m.seq > $8", "m.seq DESC") + ` x`
	// olderMatchesSQL: every row below the window, from GIN.
	olderMatchesSQL = `SELECT x.*, false AS partial FROM ` + matchesSQL("memories m", " AND m.seq <= $8", "m.seq + 0 DESC") + ` x`
	// walkMatchesSQL: the walk below the window down to $9, then the rows below it from GIN unless the walk found the
	// $10 matches the window was short of (partial).
	walkMatchesSQL = `WITH v AS MATERIALIZED ` + matchesSQL(walkRows, " AND m.seq > $9 AND m.seq <= $8", "m.seq DESC") + `
	SELECT l.*, (SELECT count(*) FROM v) >= $10 AS partial FROM (
		SELECT * FROM v
		UNION ALL
		SELECT * FROM ` + matchesSQL("memories m", " AND m.seq <= $9", "m.seq + 0 DESC") + ` r
		WHERE (SELECT count(*) FROM v) < $10
	) l LIMIT $4`
)

const hitCols = `h.id, h.mysis_id, h.seq, h.turn, h.role, h.source, h.sender_id, h.content, h.reasoning, h.tool_calls,
	h.tool_call_id, h.tool_name, h.idempotency_key, h.broadcast_id, h.created_at, h.call_arguments_json, h.call_key,
	ts_headline('english', zoea_fts_text(left(h.doc_text, $5)), h.q, $6), h.rank`

// searchRelevanceSQL ranks the newest $4 - 1 candidates ($4 = SearchCandidates + 1 for a whole search: the extra row
// only says that older matches exist) and returns the best $7; bounded when older matches exist or were not looked
// at.
func searchRelevanceSQL(candidates string) string {
	return `
SELECT ` + hitCols + `, h.bounded
FROM (
	SELECT c.*, ts_rank(c.doc, c.q, 1|32) + CASE WHEN c.role = 4 THEN 0 ELSE 1 END AS rank, c.total >= $4 OR c.partial AS bounded
	FROM (SELECT n.*, row_number() OVER (ORDER BY n.seq DESC) AS rn, count(*) OVER () AS total
		FROM (` + candidates + `) n) c
	WHERE c.rn < $4
	ORDER BY rank DESC, c.seq DESC
	LIMIT $7
) h
ORDER BY h.rank DESC, h.seq DESC`
}

// searchRecencySQL returns the newest $4 candidates, newest first ($7 is unused: both orders take the same
// arguments).
func searchRecencySQL(candidates string) string {
	return `
SELECT ` + hitCols + `, $7::int < 0
FROM (
	SELECT n.*, ts_rank(n.doc, n.q, 1|32) + CASE WHEN n.role = 4 THEN 0 ELSE 1 END AS rank
	FROM (` + candidates + `) n
) h
ORDER BY h.seq DESC`
}

// searchStatements are one order's statements, by candidate set.
type searchStatements struct{ all, window, older, walk string }

func newSearchStatements(order func(string) string) searchStatements {
	return searchStatements{all: order(allMatchesSQL), window: order(windowMatchesSQL), older: order(olderMatchesSQL),
		walk: order(walkMatchesSQL)}
}

var searchSQL = map[memory.SearchOrder]searchStatements{
	memory.OrderRelevance: newSearchStatements(searchRelevanceSQL),
	memory.OrderRecency:   newSearchStatements(searchRecencySQL),
}

// reasoning <> ” repeats the partial index predicate so the planner can use memories_reasoning_fts_idx.
const searchReasoningSQL = `
SELECT h.id, h.mysis_id, h.seq, h.turn, h.role, h.source, h.sender_id, h.content, h.reasoning, h.tool_calls,
	h.tool_call_id, h.tool_name, h.idempotency_key, h.broadcast_id, h.created_at, h.call_arguments_json, h.call_key,
	ts_headline('english', zoea_fts_text(left(h.reasoning, $4)), h.q, $5), h.rank
FROM (
	SELECT ` + memCols + `, q, ts_rank(m.reasoning_tsv, q, 1) AS rank
	FROM memories m, websearch_to_tsquery('english', $2) q
	WHERE m.mysis_id = $1 AND m.reasoning <> '' AND m.reasoning_tsv @@ q
	ORDER BY rank DESC, m.seq DESC
	LIMIT $3
) h
ORDER BY h.rank DESC, h.seq DESC`

const searchBroadcastsSQL = `
SELECT h.id, h.sender_id, h.content, h.created_at, ts_headline('english', zoea_fts_text(left(h.content, $3)), h.q, $4), h.rank
FROM (
	SELECT ` + broadcastCols + `, q, ts_rank(b.content_tsv, q, 1) AS rank
	FROM broadcasts b, websearch_to_tsquery('english', $1) q
	WHERE b.content_tsv @@ q
	ORDER BY rank DESC, b.created_at DESC, b.id DESC
	LIMIT $2
) h
ORDER BY h.rank DESC, h.created_at DESC, h.id DESC`

// SearchMessages finds one mysis's messages and tool calls, best match first among the newest
// memory.SearchCandidates matches, or newest first; nudges only when asked.
func (s *Store) SearchMessages(ctx context.Context, q memory.SearchQuery) (memory.MessageHits, error) {
	var out memory.MessageHits
	err := s.inSearchTx(ctx, "search messages", func(tx pgx.Tx) error {
		var err error
		out, err = searchMessages(ctx, tx, q, func(sql string, args []any) ([]memory.MemoryHit, bool, error) {
			return scanHits(ctx, tx, "search messages", sql, true, args...)
		})
		return err
	})
	return out, err
}

// inSearchTx runs f in a read-only transaction with JIT compilation off. A long history's search plan carries a
// high cost estimate for its GIN read (which often never runs), above jit_above_cost: Postgres would then spend
// ~20-400 ms compiling expressions for a statement that runs in a few milliseconds.
func (s *Store) inSearchTx(ctx context.Context, what string, f func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return dbErr(err, what)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return dbErr(err, what)
	}
	return nil
}

// searchMessages turns JIT off for the transaction, reads the mysis's newest seq (NotFound for an unknown mysis) and
// runs q's statements through run, which returns one statement's hits and flag: the whole history when it is no
// longer than the window; otherwise the window, and when the window holds fewer than limit matches, the rows below
// it (walked, then from GIN, or from GIN alone: searchWalk), merged with the window's. q is normalised
// (memory.SearchQuery.Normalize) and its order one the service accepts.
func searchMessages(ctx context.Context, tx pgx.Tx, q memory.SearchQuery, run func(string, []any) ([]memory.MemoryHit, bool, error)) (memory.MessageHits, error) {
	sqls, ok := searchSQL[q.Order]
	if !ok {
		return memory.MessageHits{}, fmt.Errorf("search messages: unsupported order %d", q.Order)
	}
	k := memory.SearchCandidates + 1 // the candidates relevance ranks, and one that says more exist
	if q.Order == memory.OrderRecency {
		k = q.Limit
	}
	var last int64
	if err := tx.QueryRow(ctx, `SELECT last_seq FROM myses, set_config('jit', 'off', true) WHERE id = $1`, q.MysisID).Scan(&last); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.MessageHits{}, errMysisNotFound(q.MysisID)
		}
		return memory.MessageHits{}, dbErr(err, "search messages")
	}
	args := []any{q.MysisID, q.Text, q.IncludeNudges, k, snippetInputChars, headlineOpts, q.Limit}
	if last <= searchWindow {
		hits, bounded, err := run(sqls.all, args)
		return memory.MessageHits{Hits: hits, CandidatesBounded: bounded}, err
	}
	older := last - searchWindow
	args = append(args, older)
	hits, bounded, err := run(sqls.window, args)
	if err != nil || len(hits) >= q.Limit {
		return memory.MessageHits{Hits: hits, CandidatesBounded: bounded}, err
	}
	// The window held n < limit matches, so all of them are in hits: the older rows supply the candidates left.
	n := len(hits)
	args[3] = k - n
	sql := sqls.older
	if walk := searchWalk(int64(n), int64(q.Limit), older); walk > 0 {
		sql, args = sqls.walk, append(args, older-walk, q.Limit-n)
	}
	more, bounded, err := run(sql, args)
	if err != nil {
		return memory.MessageHits{}, err
	}
	hits = append(hits, more...) // newest first: every older match lies below the window
	if q.Order == memory.OrderRelevance {
		slices.SortStableFunc(hits, func(a, b memory.MemoryHit) int {
			if c := cmp.Compare(b.Rank, a.Rank); c != 0 {
				return c
			}
			return cmp.Compare(b.Memory.Seq, a.Memory.Seq)
		})
		hits = hits[:min(len(hits), q.Limit)]
	}
	return memory.MessageHits{Hits: hits, CandidatesBounded: bounded}, nil
}

// SearchReasoning ranks one mysis's stored reasoning; snippets come from the reasoning.
func (s *Store) SearchReasoning(ctx context.Context, q memory.SearchQuery) ([]memory.MemoryHit, error) {
	return s.memoryHits(ctx, s.pool, "search reasoning", q.MysisID, searchReasoningSQL,
		q.MysisID, q.Text, q.Limit, snippetInputChars, headlineOpts)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// memoryHits runs a search statement of one mysis; no hits for a mysis that does not exist is NotFound.
func (s *Store) memoryHits(ctx context.Context, db querier, what, mysisID, sql string, args ...any) ([]memory.MemoryHit, error) {
	out, _, err := scanHits(ctx, db, what, sql, false, args...)
	if err == nil && len(out) == 0 {
		// Searching an unknown mysis is a mistake worth reporting, not an empty result.
		return out, s.mustExist(ctx, mysisID)
	}
	return out, err
}

// scanHits runs a search statement and reads its hits. With flag, each row ends in one more boolean column, the
// same in every row (false when there are none).
func scanHits(ctx context.Context, db querier, what, sql string, flag bool, args ...any) ([]memory.MemoryHit, bool, error) {
	// Always a custom plan: the planner must see the query's words (how rare they are) to plan the GIN reads; a
	// cached generic plan cannot.
	rows, err := db.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, false, dbErr(err, what)
	}
	defer rows.Close()
	var out []memory.MemoryHit
	var f bool
	for rows.Next() {
		var r memRow
		var h memory.MemoryHit
		dest := append(r.dest(), &h.Snippet, &h.Rank)
		if flag {
			dest = append(dest, &f)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, false, dbErr(err, what)
		}
		if h.Memory, err = r.memory(); err != nil {
			return nil, false, err
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, false, dbErr(err, what)
	}
	return out, f, nil
}

// SearchBroadcasts ranks broadcasts swarm-wide.
func (s *Store) SearchBroadcasts(ctx context.Context, q memory.SearchQuery) ([]memory.BroadcastHit, error) {
	rows, err := s.pool.Query(ctx, searchBroadcastsSQL, q.Text, q.Limit, snippetInputChars, headlineOpts)
	if err != nil {
		return nil, dbErr(err, "search broadcasts")
	}
	defer rows.Close()
	var out []memory.BroadcastHit
	for rows.Next() {
		var h memory.BroadcastHit
		if err := rows.Scan(append(broadcastDest(&h.Broadcast), &h.Snippet, &h.Rank)...); err != nil {
			return nil, dbErr(err, "search broadcasts")
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "search broadcasts")
	}
	return out, nil
}

// ExplainSearchMessages returns EXPLAIN (ANALYZE, BUFFERS) of each statement SearchMessages runs for q (normalised,
// as SearchMessages takes it), with q's words as constants the way the service plans them, each headed by a line
// "-- statement N" (benchmarks and plan tests). Each statement also runs once more to learn what the next one is.
func (s *Store) ExplainSearchMessages(ctx context.Context, q memory.SearchQuery) (string, error) {
	var lines []string
	n := 0
	err := s.inSearchTx(ctx, "explain search", func(tx pgx.Tx) error {
		_, err := searchMessages(ctx, tx, q, func(sql string, args []any) ([]memory.MemoryHit, bool, error) {
			rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
			if err != nil {
				return nil, false, dbErr(err, "explain search")
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return nil, false, dbErr(err, "explain search")
			}
			n++
			lines = append(append(lines, fmt.Sprintf("-- statement %d", n)), plan...)
			return scanHits(ctx, tx, "explain search", sql, true, args...)
		})
		return err
	})
	return strings.Join(lines, "\n"), err
}
