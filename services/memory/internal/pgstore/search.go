package pgstore

import (
	"context"
	"errors"
	"fmt"
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

// Message search matches a memory's document: its content, or for an assistant memory with tool calls its content
// and calls together (zoea_calls_tsv, migration 00007: `sell {"item_id":"titanium_ore"}` is found by "sell",
// "titanium_ore" or "sell titanium_ore"). The two arms are two GIN indexes, (mysis_id, content_tsv) and the partial
// (mysis_id, zoea_calls_tsv(content, tool_calls)) WHERE tool_calls IS NOT NULL; the expressions below must stay
// identical to the index definitions. The query is written inline (not a FROM item) so that, planned with the
// caller's words as constants, the planner estimates how many rows they match.
const (
	tsq      = `websearch_to_tsquery('english', $2)`
	msgMatch = `(m.content_tsv @@ ` + tsq + ` OR (m.tool_calls IS NOT NULL AND zoea_calls_tsv(m.content, m.tool_calls) @@ ` + tsq + `))`
	msgDoc   = `CASE WHEN m.tool_calls IS NULL THEN m.content_tsv ELSE zoea_calls_tsv(m.content, m.tool_calls) END`
	// msgText is what snippets are cut from: the content, plus the calls for a memory that made some.
	msgText = `CASE WHEN m.tool_calls IS NULL THEN m.content ELSE m.content || ' ' || coalesce(zoea_calls_text(m.tool_calls), '') END`
)

// searchWindow is the recency window of a long history's candidate scan, in rows back from its newest memory. The
// newest matches are looked for in the newest searchWindow rows first; only when those hold fewer matches than the
// caller asked for (limit) is the rest of the history searched. The window is a MATERIALIZED CTE; the rest is one
// UNION ALL branch gated by a one-time filter on the window's count, so Postgres never starts it when the window
// answered. The window always walks (mysis_id, seq) newest first (windowRows), testing each row, and stops at $4
// matches: at most searchWindow rows whatever the word. The rest is always answered from the GIN indexes (its ORDER
// BY is on an expression, so it can never walk a whole history looking for a word that is not there) and costs a
// sort of the older matches. Measured and dropped: nested windows (for a rare word the planner, which costs a GIN
// scan by the size of the mysis's posting list rather than by what fast-scan reads, walked them).
const searchWindow = 2000

// windowRows is the window's FROM item: the mysis's newest rows, newest first, behind OFFSET 0 so that the planner
// cannot push the match into it and answer the window from a GIN index instead. It used to choose, by its estimate of
// how many rows match; that estimate is far off for a phrase, which is what an identifier becomes (view_market is
// 'view' <-> 'market', estimated as two independent words: 58 rows of a 1M-row history where 13,200 match),
// and the GIN plan then fetched and rechecked every match of the whole history to keep the window's 29 (12,500
// buffers, 95-99 ms on a quiet box, every call; docs/BENCHMARKS.md, "Search: tool-call queries on a 1M-row mysis").
// A walk costs what the planner already chose for rare words and words that are nowhere: the 2,000 rows.
const windowRows = `(SELECT * FROM memories m WHERE m.mysis_id = $1 AND m.seq > $8 ORDER BY m.seq DESC OFFSET 0) m`

// newestMatchesSQL is the candidate set of both orders: the mysis's newest $4 matches, newest first, each with
// partial set when older matches were not looked at (the window held at least $7 matches). With window, $8 is the
// window's first seq minus one.
func newestMatchesSQL(window bool) string {
	// Each part has two arms: the mysis's own memories (their vectors), and its broadcast deliveries, which carry no
	// text of their own (migration 00005): matched through the broadcast's vector (broadcasts' GIN index) and joined
	// to this mysis's delivery row (memories_broadcast_delivery_key).
	one := func(from, match, where, order string) string {
		return `(SELECT * FROM ((SELECT ` + memCols + `, ` + msgDoc + ` AS doc, ` + msgText + ` AS doc_text, ` + tsq + ` AS q
		FROM ` + from + `
		WHERE m.mysis_id = $1 AND ` + match + ` AND ($3 OR m.source <> 3)` + where + `
		ORDER BY ` + order + ` LIMIT $4)
		UNION ALL
		(SELECT ` + memCols + `, b.content_tsv AS doc, b.content AS doc_text, ` + tsq + ` AS q
		FROM broadcasts b JOIN memories m ON m.broadcast_id = b.id AND m.mysis_id = $1
		WHERE b.content_tsv @@ ` + tsq + where + `
		ORDER BY ` + order + ` LIMIT $4)) u ORDER BY u.seq DESC LIMIT $4)`
	}
	if !window {
		return `SELECT x.*, false AS partial FROM ` + one("memories m", msgMatch, "", "m.seq DESC") + ` x`
	}
	return `WITH w AS MATERIALIZED ` + one(windowRows, msgMatch, " AND m.seq > $8", "m.seq DESC") + `
	SELECT l.*, (SELECT count(*) FROM w) >= $7 AS partial FROM (
		SELECT * FROM w
		UNION ALL
		SELECT * FROM ` + one("memories m", msgMatch, " AND m.seq <= $8", "m.seq + 0 DESC") + ` r WHERE (SELECT count(*) FROM w) < $7
	) l LIMIT $4`
}

const hitCols = `h.id, h.mysis_id, h.seq, h.turn, h.role, h.source, h.sender_id, h.content, h.reasoning, h.tool_calls,
	h.tool_call_id, h.tool_name, h.idempotency_key, h.broadcast_id, h.created_at, h.call_arguments_json, h.call_key,
	ts_headline('english', zoea_fts_text(left(h.doc_text, $5)), h.q, $6), h.rank`

// searchRelevanceSQL ranks the newest SearchCandidates matches ($4 = SearchCandidates + 1: the extra row only says
// that older matches exist) and returns the best $7; bounded when older matches exist or were not looked at.
func searchRelevanceSQL(window bool) string {
	return `
SELECT ` + hitCols + `, h.bounded
FROM (
	SELECT c.*, ts_rank(c.doc, c.q, 1|32) + CASE WHEN c.role = 4 THEN 0 ELSE 1 END AS rank, c.total >= $4 OR c.partial AS bounded
	FROM (SELECT n.*, row_number() OVER (ORDER BY n.seq DESC) AS rn, count(*) OVER () AS total
		FROM (` + newestMatchesSQL(window) + `) n) c
	WHERE c.rn < $4
	ORDER BY rank DESC, c.seq DESC
	LIMIT $7
) h
ORDER BY h.rank DESC, h.seq DESC`
}

// searchRecencySQL returns the newest $4 matches, newest first ($7 is unused: both orders take the same arguments).
func searchRecencySQL(window bool) string {
	return `
SELECT ` + hitCols + `, $7::int < 0
FROM (
	SELECT n.*, ts_rank(n.doc, n.q, 1|32) + CASE WHEN n.role = 4 THEN 0 ELSE 1 END AS rank
	FROM (` + newestMatchesSQL(window) + `) n
) h
ORDER BY h.seq DESC`
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
		sql, args, err := searchMessagesStatement(ctx, tx, q)
		if err != nil {
			return err
		}
		out.Hits, err = s.memoryHits(ctx, tx, "search messages", args[0].(string), sql, func(bounded bool) { out.CandidatesBounded = bounded }, args...)
		return err
	})
	return out, err
}

// inSearchTx runs f in a read-only transaction with JIT compilation off. A long history's search plan carries a
// high cost estimate for its last window (the one that usually never runs), which is above jit_above_cost: Postgres
// would then spend ~20-400 ms compiling expressions for a statement that runs in a few milliseconds.
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

// searchMessagesStatement turns JIT off for the transaction, reads the mysis's newest seq (NotFound for an unknown
// mysis) and returns the statement for q's order and the history length with its arguments. q is normalised
// (memory.SearchQuery.Normalize) and its order one the service accepts.
func searchMessagesStatement(ctx context.Context, tx pgx.Tx, q memory.SearchQuery) (string, []any, error) {
	k := memory.SearchCandidates + 1
	var build func(bool) string
	switch q.Order {
	case memory.OrderRelevance:
		build = searchRelevanceSQL
	case memory.OrderRecency:
		build, k = searchRecencySQL, q.Limit
	default:
		return "", nil, fmt.Errorf("search messages: unsupported order %d", q.Order)
	}
	var last int64
	if err := tx.QueryRow(ctx, `SELECT last_seq FROM myses, set_config('jit', 'off', true) WHERE id = $1`, q.MysisID).Scan(&last); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil, errMysisNotFound(q.MysisID)
		}
		return "", nil, dbErr(err, "search messages")
	}
	args := []any{q.MysisID, q.Text, q.IncludeNudges, k, snippetInputChars, headlineOpts, q.Limit}
	if last > searchWindow {
		args = append(args, last-searchWindow)
	}
	return build(len(args) > 7), args, nil
}

// SearchReasoning ranks one mysis's stored reasoning; snippets come from the reasoning.
func (s *Store) SearchReasoning(ctx context.Context, q memory.SearchQuery) ([]memory.MemoryHit, error) {
	return s.memoryHits(ctx, s.pool, "search reasoning", q.MysisID, searchReasoningSQL, nil,
		q.MysisID, q.Text, q.Limit, snippetInputChars, headlineOpts)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// memoryHits runs a search statement. With flag set, each row ends in one more boolean column, passed to flag.
func (s *Store) memoryHits(ctx context.Context, db querier, what, mysisID, sql string, flag func(bool), args ...any) ([]memory.MemoryHit, error) {
	// Always a custom plan: the planner must see the query's words (how rare they are) to choose between walking
	// the mysis's newest rows and intersecting posting lists; a cached generic plan cannot.
	rows, err := db.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	defer rows.Close()
	var out []memory.MemoryHit
	for rows.Next() {
		var r memRow
		var h memory.MemoryHit
		dest := append(r.dest(), &h.Snippet, &h.Rank)
		var f bool
		if flag != nil {
			dest = append(dest, &f)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, dbErr(err, what)
		}
		if flag != nil {
			flag(f)
		}
		if h.Memory, err = r.memory(); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, what)
	}
	if len(out) == 0 {
		// Searching an unknown mysis is a mistake worth reporting, not an empty result.
		return out, s.mustExist(ctx, mysisID)
	}
	return out, nil
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

// ExplainSearchMessages returns EXPLAIN (ANALYZE, BUFFERS) of the statement SearchMessages runs for q (normalised,
// as SearchMessages takes it), with q's words as constants the way the service plans it (benchmarks and plan
// tests).
func (s *Store) ExplainSearchMessages(ctx context.Context, q memory.SearchQuery) (string, error) {
	var lines []string
	err := s.inSearchTx(ctx, "explain search", func(tx pgx.Tx) error {
		sql, args, err := searchMessagesStatement(ctx, tx, q)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			return dbErr(err, "explain search")
		}
		if lines, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return dbErr(err, "explain search")
		}
		return nil
	})
	return strings.Join(lines, "\n"), err
}
