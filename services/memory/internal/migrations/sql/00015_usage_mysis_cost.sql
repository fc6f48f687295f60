-- +goose Up
-- Ranking myses by cost (GetUsage with top, issue 32) without summing every mysis's rows. llm_usage_mysis_cost is
-- each mysis's cost and calls per whole UTC hour (span 1), whole UTC day (span 2) and all time (span 3, start
-- 'epoch') over all providers and models: one row per mysis and bucket, so a bucket's rows ordered by cost are the
-- bucket's ranking. llm_usage_mysis_cost_rank_idx reads that order: the top N of one bucket (all time, today, this
-- hour) are its first N entries, and a range of several buckets is ranked by the threshold algorithm over them
-- (pgstore.topByCost), which falls back to summing the range's entries from the same index (an index-only scan).
-- recordCallsSQL keeps it current in the statement that inserts the calls; deleting a mysis deletes its rows.
CREATE TABLE llm_usage_mysis_cost (
    mysis_id   uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    span       smallint NOT NULL CHECK (span IN (1, 2, 3)),
    start      timestamptz NOT NULL,
    cost_nanos bigint NOT NULL DEFAULT 0,
    calls      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (mysis_id, span, start)
);
-- Backfill from the rollup (hours, days) and the running totals (all time). The SHARE locks hold off writers until
-- this transaction commits, so no call lands in the sources after the backfill read them and before the write path
-- that keeps this table exists.
LOCK TABLE llm_usage_rollup, llm_usage_totals IN SHARE MODE;
INSERT INTO llm_usage_mysis_cost (mysis_id, span, start, cost_nanos, calls)
SELECT mysis_id, span, start, sum(cost_nanos), sum(calls) FROM llm_usage_rollup GROUP BY mysis_id, span, start
UNION ALL
SELECT mysis_id, 3, 'epoch', sum(cost_nanos), sum(calls) FROM llm_usage_totals GROUP BY mysis_id;
-- Built after the backfill, so its pages are full (built before it, the inserts' page splits left it ~20% larger).
CREATE INDEX llm_usage_mysis_cost_rank_idx ON llm_usage_mysis_cost (span, start, cost_nanos DESC)
    INCLUDE (mysis_id, calls);

-- The ranking no longer reads llm_usage_rollup's covering index (00014): the plain (span, start) index it replaced
-- comes back, and updates of a rollup row can be HOT again (cost_nanos and calls are no longer index columns).
CREATE INDEX llm_usage_rollup_span_start_idx ON llm_usage_rollup (span, start);
DROP INDEX llm_usage_rollup_rank_idx;

-- +goose Down
CREATE INDEX llm_usage_rollup_rank_idx ON llm_usage_rollup (span, start) INCLUDE (mysis_id, cost_nanos, calls);
DROP INDEX llm_usage_rollup_span_start_idx;
DROP TABLE llm_usage_mysis_cost;
