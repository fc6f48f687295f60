-- +goose NO TRANSACTION
-- Ranking myses by cost over a time range (GetUsage with top, issue 32) sums every mysis's hour and day rows of
-- llm_usage_rollup in the range: ~100,000 rows for the last 24 hours at 10,000 myses. Through (span, start) alone
-- each row is a heap fetch (~250 ms); this covering index lets the ranking read them from the index alone (an
-- index-only scan). It replaces llm_usage_rollup_span_start_idx, whose lookups it serves as well. Built
-- CONCURRENTLY while the service keeps writing; idempotent.
-- Cost: cost_nanos and calls are now indexed, so the write path's update of a rollup row is no longer a HOT
-- update (one more index entry per updated row).

-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS llm_usage_rollup_rank_idx ON llm_usage_rollup (span, start)
    INCLUDE (mysis_id, cost_nanos, calls);
DROP INDEX CONCURRENTLY IF EXISTS llm_usage_rollup_span_start_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS llm_usage_rollup_span_start_idx ON llm_usage_rollup (span, start);
DROP INDEX CONCURRENTLY IF EXISTS llm_usage_rollup_rank_idx;
