package pgstore

import (
	"context"
)

// Term statistics (migration 00017): per mysis, how many memories hold each lexeme (memory_terms.df), how many
// memories have a vector and their total length (memory_term_totals), which message search needs for BM25's IDF and
// length normalisation and to know which of a query's terms are rare enough to read whole (search.go).
//
// Counting is off the write path: whatever writes a vector (the append for the rows it indexes, the background
// indexer for tool results, the bulk loader) also adds the memory to memory_terms_queue in the same statement — one
// small row — and CountTerms folds the queue into the counts in batches, aggregated per mysis and lexeme, so a
// batch of 2,000 SpaceMolt memories of one mysis costs a few hundred upserts rather than one per lexeme and row. The
// counts therefore lag the newest memories by at most one indexer pass (ZOEA_FTS_INDEX_INTERVAL); search takes a
// term it has no count for as rare, which is right for a new word and costs at most one bounded read otherwise.
//
// Each batch takes its queue rows FOR UPDATE SKIP LOCKED, so several memory replicas count disjoint batches, and
// upserts in (mysis_id, lexeme) order, so two batches that share terms wait for each other instead of deadlocking.

// TermBatch is how many queued memories one CountTerms call folds in (one transaction each).
const TermBatch = 2000

// countTermsSQL folds up to $1 queued memories into the counts and returns how many it took from the queue. A
// queued memory that no longer exists (its mysis was deleted) is dropped uncounted.
const countTermsSQL = `
WITH q AS (
	DELETE FROM memory_terms_queue d
	USING (SELECT memory_id FROM memory_terms_queue ORDER BY memory_id LIMIT $1 FOR UPDATE SKIP LOCKED) p
	WHERE d.memory_id = p.memory_id
	RETURNING d.memory_id, d.mysis_id
), docs AS MATERIALIZED (
	SELECT m.mysis_id, m.content_tsv AS tsv FROM q JOIN memories m ON m.id = q.memory_id AND m.mysis_id = q.mysis_id
	WHERE m.content_tsv IS NOT NULL
), totals AS (
	INSERT INTO memory_term_totals AS t (mysis_id, docs, len)
	SELECT mysis_id, count(*), sum(length(tsv)) FROM docs GROUP BY mysis_id ORDER BY mysis_id
	ON CONFLICT (mysis_id) DO UPDATE SET docs = t.docs + excluded.docs, len = t.len + excluded.len
	RETURNING 1
), terms AS (
	INSERT INTO memory_terms AS t (mysis_id, lexeme, df)
	SELECT d.mysis_id, l.lexeme, count(*) FROM docs d, unnest(tsvector_to_array(d.tsv)) l(lexeme)
	GROUP BY 1, 2 ORDER BY 1, 2
	ON CONFLICT (mysis_id, lexeme) DO UPDATE SET df = t.df + excluded.df
	RETURNING 1
)
SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM totals), (SELECT count(*) FROM terms)`

// CountTerms folds up to limit queued memories into the term statistics and returns how many it took.
func (s *Store) CountTerms(ctx context.Context, limit int) (int, error) {
	var n, totals, terms int64
	if err := s.pool.QueryRow(ctx, countTermsSQL, limit).Scan(&n, &totals, &terms); err != nil {
		return 0, dbErr(err, "count terms")
	}
	return int(n), nil
}

// CountAllTerms folds the whole queue in (bulk loads and tests; the indexer does this on every pass).
func (s *Store) CountAllTerms(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.CountTerms(ctx, TermBatch)
		total += n
		if err != nil || n < TermBatch {
			return total, err
		}
	}
}

// deleteTermsSQL removes a mysis's statistics (DeleteMysis, in its transaction).
const deleteTermsSQL = `WITH a AS (DELETE FROM memory_terms WHERE mysis_id = $1)
	DELETE FROM memory_term_totals WHERE mysis_id = $1`
