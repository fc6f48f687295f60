package pgstore

import (
	"context"

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

const searchMessagesSQL = `
SELECT h.id, h.mysis_id, h.seq, h.turn, h.role, h.source, h.sender_id, h.content, h.reasoning, h.tool_calls,
	h.tool_call_id, h.tool_name, h.idempotency_key, h.broadcast_id, h.created_at, h.call_arguments_json, h.call_key,
	ts_headline('english', zoea_fts_text(left(h.content, $5)), h.q, $6), h.rank
FROM (
	SELECT ` + memCols + `, q, ts_rank(m.content_tsv, q, 1|32) + CASE WHEN m.role = 4 THEN 0 ELSE 1 END AS rank
	FROM memories m, websearch_to_tsquery('english', $2) q
	WHERE m.mysis_id = $1 AND m.content_tsv @@ q AND ($3 OR m.source <> 3)
	UNION ALL
	SELECT ` + memCols + `, q, ts_rank(b.content_tsv, q, 1|32) + 1 AS rank
	FROM websearch_to_tsquery('english', $2) q, broadcasts b
	JOIN memories m ON m.broadcast_id = b.id AND m.mysis_id = $1 AND m.broadcast_id IS NOT NULL
	WHERE b.content_tsv @@ q
	ORDER BY rank DESC, seq DESC
	LIMIT $4
) h
ORDER BY h.rank DESC, h.seq DESC`

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

// SearchMessages ranks one mysis's messages; nudges only when asked.
func (s *Store) SearchMessages(ctx context.Context, q memory.SearchQuery) ([]memory.MemoryHit, error) {
	q, err := checkSearch(q, true)
	if err != nil {
		return nil, err
	}
	return s.memoryHits(ctx, "search messages", q.MysisID, searchMessagesSQL,
		q.MysisID, q.Text, q.IncludeNudges, q.Limit, snippetInputChars, headlineOpts)
}

// SearchReasoning ranks one mysis's stored reasoning; snippets come from the reasoning.
func (s *Store) SearchReasoning(ctx context.Context, q memory.SearchQuery) ([]memory.MemoryHit, error) {
	q, err := checkSearch(q, true)
	if err != nil {
		return nil, err
	}
	return s.memoryHits(ctx, "search reasoning", q.MysisID, searchReasoningSQL,
		q.MysisID, q.Text, q.Limit, snippetInputChars, headlineOpts)
}

func (s *Store) memoryHits(ctx context.Context, what, mysisID, sql string, args ...any) ([]memory.MemoryHit, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	defer rows.Close()
	var out []memory.MemoryHit
	for rows.Next() {
		var r memRow
		var h memory.MemoryHit
		if err := rows.Scan(append(r.dest(), &h.Snippet, &h.Rank)...); err != nil {
			return nil, dbErr(err, what)
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
