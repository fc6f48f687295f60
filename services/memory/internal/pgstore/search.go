package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
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

// searchLevels are the recency windows of a long history's candidate scan, in rows back from its newest memory.
// The newest matches are looked for in the newest 2,000 rows first, then the next 14,000, then the next 112,000,
// then the rest, and the scan stops as soon as it has enough: each level is its own LIMITed subquery of one UNION
// ALL under an outer LIMIT, and Postgres runs UNION ALL branches in order and only while the outer LIMIT still
// wants rows. A word in many recent rows is found by walking at most a window's rows newest first on
// (mysis_id, seq); a rare word by intersecting the GIN posting lists and sorting its few matches; the last level is
// always the latter (its ORDER BY is on an expression so it cannot walk the whole history looking for a word that
// is not there). So a search reads about as many rows as it returns, however long the history.
var searchLevels = []int64{2000, 16000, 128000}

// newestMatchesSQL is the candidate set of both orders: the mysis's newest $4 matches, newest first. bounds are the
// seq boundaries of the levels used (arguments $8, $9, …): none for a history shorter than the first window.
func newestMatchesSQL(levels int) string {
	one := func(where, order string) string {
		return `(SELECT ` + memCols + `, ` + msgDoc + ` AS doc, ` + msgText + ` AS doc_text, ` + tsq + ` AS q
		FROM memories m
		WHERE m.mysis_id = $1 AND ` + msgMatch + ` AND ($3 OR m.source <> 3)` + where + `
		ORDER BY ` + order + ` LIMIT $4)`
	}
	if levels == 0 {
		return one("", "m.seq DESC")
	}
	var b strings.Builder
	b.WriteString("SELECT * FROM (")
	for i := range levels + 1 {
		var where string
		if i > 0 {
			where += fmt.Sprintf(" AND m.seq <= $%d", 7+i)
			b.WriteString("\n\tUNION ALL\n")
		}
		order := "m.seq DESC"
		if i < levels {
			where += fmt.Sprintf(" AND m.seq > $%d", 8+i)
		} else {
			order = "m.seq + 0 DESC" // never a walk of (mysis_id, seq): see searchLevels
		}
		b.WriteString(one(where, order))
	}
	b.WriteString(") l LIMIT $4")
	return b.String()
}

const hitCols = `h.id, h.mysis_id, h.seq, h.turn, h.role, h.source, h.sender_id, h.content, h.reasoning, h.tool_calls,
	h.tool_call_id, h.tool_name, h.idempotency_key, h.broadcast_id, h.created_at, h.call_arguments_json, h.call_key,
	ts_headline('english', zoea_fts_text(left(h.doc_text, $5)), h.q, $6), h.rank`

// searchRelevanceSQL ranks the newest SearchCandidates matches ($4 = SearchCandidates + 1: the extra row only says
// that older matches exist) and returns the best $7.
func searchRelevanceSQL(levels int) string {
	return `
SELECT ` + hitCols + `, h.bounded
FROM (
	SELECT c.*, ts_rank(c.doc, c.q, 1|32) + CASE WHEN c.role = 4 THEN 0 ELSE 1 END AS rank, c.total >= $4 AS bounded
	FROM (SELECT n.*, row_number() OVER (ORDER BY n.seq DESC) AS rn, count(*) OVER () AS total
		FROM (` + newestMatchesSQL(levels) + `) n) c
	WHERE c.rn < $4
	ORDER BY rank DESC, c.seq DESC
	LIMIT $7
) h
ORDER BY h.rank DESC, h.seq DESC`
}

// searchRecencySQL returns the newest $4 matches, newest first ($7 is unused: both orders take the same arguments).
func searchRecencySQL(levels int) string {
	return `
SELECT ` + hitCols + `, $7::int < 0
FROM (
	SELECT n.*, ts_rank(n.doc, n.q, 1|32) + CASE WHEN n.role = 4 THEN 0 ELSE 1 END AS rank
	FROM (` + newestMatchesSQL(levels) + `) n
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

func checkSearch(q memory.SearchQuery, needMysis bool) (memory.SearchQuery, error) {
	var err error
	if needMysis {
		if q.MysisID, err = memory.ParseID("mysis_id", q.MysisID); err != nil {
			return q, err
		}
	}
	if err := memory.ValidateQuery(q.Text); err != nil {
		return q, err
	}
	q.Text = memory.BoundQueryOperators(q.Text)
	q.Limit, err = memory.Limit("limit", q.Limit, memory.DefaultSearchLimit, memory.MaxSearchLimit)
	return q, err
}

// SearchMessages finds one mysis's messages and tool calls, best match first among the newest
// memory.SearchCandidates matches, or newest first; nudges only when asked.
func (s *Store) SearchMessages(ctx context.Context, q memory.SearchQuery) (memory.MessageHits, error) {
	sql, args, err := s.searchMessagesStatement(ctx, q)
	if err != nil {
		return memory.MessageHits{}, err
	}
	var out memory.MessageHits
	out.Hits, err = s.memoryHits(ctx, "search messages", args[0].(string), sql, func(bounded bool) { out.CandidatesBounded = bounded }, args...)
	return out, err
}

// searchMessagesStatement validates q, reads the mysis's newest seq (NotFound for an unknown mysis) and returns the
// statement for its order and history length with its arguments.
func (s *Store) searchMessagesStatement(ctx context.Context, q memory.SearchQuery) (string, []any, error) {
	q, err := checkSearch(q, true)
	if err != nil {
		return "", nil, err
	}
	k := memory.SearchCandidates + 1
	var build func(int) string
	switch q.Order {
	case memory.OrderRelevance:
		build = searchRelevanceSQL
	case memory.OrderRecency:
		build, k = searchRecencySQL, q.Limit
	default:
		return "", nil, errs.InvalidField("order", "unknown search order %d", q.Order)
	}
	var last int64
	if err := s.pool.QueryRow(ctx, `SELECT last_seq FROM myses WHERE id = $1`, q.MysisID).Scan(&last); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil, errMysisNotFound(q.MysisID)
		}
		return "", nil, dbErr(err, "search messages")
	}
	args := []any{q.MysisID, q.Text, q.IncludeNudges, k, snippetInputChars, headlineOpts, q.Limit}
	for _, w := range searchLevels {
		if last-w <= 0 {
			break
		}
		args = append(args, last-w)
	}
	return build(len(args) - 7), args, nil
}

// SearchReasoning ranks one mysis's stored reasoning; snippets come from the reasoning.
func (s *Store) SearchReasoning(ctx context.Context, q memory.SearchQuery) ([]memory.MemoryHit, error) {
	q, err := checkSearch(q, true)
	if err != nil {
		return nil, err
	}
	return s.memoryHits(ctx, "search reasoning", q.MysisID, searchReasoningSQL, nil,
		q.MysisID, q.Text, q.Limit, snippetInputChars, headlineOpts)
}

// memoryHits runs a search statement. With flag set, each row ends in one more boolean column, passed to flag.
func (s *Store) memoryHits(ctx context.Context, what, mysisID, sql string, flag func(bool), args ...any) ([]memory.MemoryHit, error) {
	// Always a custom plan: the planner must see the query's words (how rare they are) to choose between walking
	// the mysis's newest rows and intersecting posting lists; a cached generic plan cannot.
	rows, err := s.pool.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
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
	q, err := checkSearch(q, false)
	if err != nil {
		return nil, err
	}
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

// ExplainSearchMessages returns EXPLAIN (ANALYZE, BUFFERS) of the statement SearchMessages runs for q, with q's
// words as constants the way the service plans it (benchmarks and plan tests).
func (s *Store) ExplainSearchMessages(ctx context.Context, q memory.SearchQuery) (string, error) {
	sql, args, err := s.searchMessagesStatement(ctx, q)
	if err != nil {
		return "", err
	}
	rows, err := s.pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return "", dbErr(err, "explain search")
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", dbErr(err, "explain search")
	}
	return strings.Join(lines, "\n"), nil
}
