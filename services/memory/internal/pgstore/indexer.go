package pgstore

import (
	"context"
	"log/slog"
	"time"
)

// Asynchronous full-text indexing (migration 00006). Computing a row's tsvector and adding it to the GIN index is
// ~90 % of an append's cost, and tool results — JSON of 70 B to 60 kB — are most of the text. With WithAsyncFTS an
// append stores tool results with content_tsv NULL; the Indexer fills them in batches, oldest first, and
// memories_fts_pending_idx (a partial index of exactly those rows) lets it find them without scanning history.
// Every other row (prompts, broadcasts, replies, nudges) is still indexed in its own append.
//
// Bound: a tool result is searchable within one Indexer interval plus one pass (ZOEA_FTS_INDEX_INTERVAL, default
// 500 ms; a pass indexes everything pending) — as long as the swarm writes tool results no faster than the indexer
// sustains (~1,300 rows/s on the 2-core benchmark box at load ~35, docs/benchmarks/2026-11-24-memory-writes.md; 16 clients
// of 1–2-row appends left 174 pending, all searchable 0.35 s later). Past that rate the lag grows with the backlog; search never returns wrong rows, only misses the newest unindexed results. Several
// memory replicas each run an indexer; FOR UPDATE SKIP LOCKED gives each batch to one of them.
//
// The fill is an UPDATE, so a tool result is written twice (a second row version and new index entries, ~10 % of
// the synchronous cost, measured); the expensive parsing and GIN maintenance just happen off the critical path.

// indexPendingSQL indexes up to $1 pending tool results, oldest first, skipping rows another indexer holds, and
// queues them for the term counts (terms.go).
const indexPendingSQL = `
WITH upd AS (
UPDATE memories m SET content_tsv = zoea_memory_tsv(m.content, m.tool_calls)
FROM (
	SELECT p.id, p.mysis_id FROM memories p
	WHERE p.content_tsv IS NULL AND p.role = 4
	ORDER BY p.id LIMIT $1
	FOR UPDATE SKIP LOCKED
) p
WHERE m.id = p.id AND m.mysis_id = p.mysis_id
RETURNING m.id, m.mysis_id
)
INSERT INTO memory_terms_queue (memory_id, mysis_id) SELECT id, mysis_id FROM upd`

// IndexPending computes the full-text vectors of up to limit tool results stored without one (oldest first) and
// returns how many it indexed.
func (s *Store) IndexPending(ctx context.Context, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, indexPendingSQL, limit)
	if err != nil {
		return 0, dbErr(err, "index pending memories")
	}
	return int(tag.RowsAffected()), nil
}

// PendingIndex reports how many tool results wait for their full-text vector and how old the oldest one is.
func (s *Store) PendingIndex(ctx context.Context) (n int64, oldest time.Duration, err error) {
	var age *float64
	err = s.pool.QueryRow(ctx, `
		SELECT count(*), extract(epoch FROM now() - min(created_at))::float8
		FROM memories WHERE content_tsv IS NULL AND role = 4`).Scan(&n, &age)
	if age != nil {
		oldest = time.Duration(*age * float64(time.Second))
	}
	return n, oldest, dbErr(err, "pending index")
}

// IndexBatch is how many rows one IndexPending call of the Indexer takes (one short transaction each).
const IndexBatch = 500

// Indexer runs IndexPending in the background of a memory server started with WithAsyncFTS.
type Indexer struct {
	Store *Store
	Log   *slog.Logger
	// Passed, when set, is called after every pass with the number of rows it indexed and its error (tests wait
	// on it instead of sleeping).
	Passed func(indexed int, err error)
}

// Run indexes everything pending once at start and again on every tick, until ctx ends. A pass repeats
// IndexPending until a batch comes back short, so a backlog is drained in one pass. Errors are retried on the next
// tick (Postgres may be restarting, or the schema not migrated yet); a failure is logged when it starts or changes,
// and the recovery once, so a down database does not log twice a second.
func (x *Indexer) Run(ctx context.Context, ticks <-chan time.Time) {
	failing := ""
	for {
		n, err := x.pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil && err.Error() != failing:
			failing = err.Error()
			if x.Log != nil {
				x.Log.Warn("full-text indexer pass failed; retrying on every tick", "err", err, "indexed", n)
			}
		case err == nil && failing != "":
			failing = ""
			if x.Log != nil {
				x.Log.Info("full-text indexer recovered", "indexed", n)
			}
		}
		if x.Passed != nil {
			x.Passed(n, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// pass indexes every pending tool result, then folds every queued memory into the term counts (terms.go): the
// rows it just indexed, and the rows appends indexed since the last pass.
func (x *Indexer) pass(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := x.Store.IndexPending(ctx, IndexBatch)
		total += n
		if err != nil {
			return total, err
		}
		if n < IndexBatch {
			break
		}
	}
	_, err := x.Store.CountAllTerms(ctx)
	return total, err
}
