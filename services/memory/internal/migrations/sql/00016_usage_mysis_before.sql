-- +goose Up
-- Ranking myses by cost over an open range of several hours (GetUsage with top and a from, no to; issue 32) without
-- summing every mysis's hours. llm_usage_mysis_before holds, for a whole UTC hour A, each mysis's cost and calls
-- before A as of the moment it was built: a mysis's cost since A is then its all-time row of llm_usage_mysis_cost
-- less its row here — one entry per mysis however many hours the range spans — plus the ragged edge before A from
-- llm_calls. llm_usage_before_marks lists the hours built; deleting a mark deletes its rows.
--
-- The rows are built in the background (pgstore.UsageSnapshotter) when a ranking asks for an hour that has none,
-- and never updated: a call recorded later with a start before A (late, or retried) makes them stale. A ranking
-- checks that they are not, in its own snapshot: the calls since A they give, summed over the swarm, must equal the
-- swarm rollup's calls since A (calls only ever add, and a deleted mysis leaves both). Stale or missing, it sums
-- the hours instead and asks for a rebuild. A deleted mysis's rows are not joined (its all-time row is gone) and go
-- with their mark.
CREATE TABLE llm_usage_before_marks (
    start    timestamptz PRIMARY KEY,
    built_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE llm_usage_mysis_before (
    start      timestamptz NOT NULL REFERENCES llm_usage_before_marks (start) ON DELETE CASCADE,
    mysis_id   uuid NOT NULL,
    cost_nanos bigint NOT NULL,
    calls      bigint NOT NULL,
    PRIMARY KEY (start, mysis_id) INCLUDE (cost_nanos, calls)
);

-- +goose Down
DROP TABLE llm_usage_mysis_before;
DROP TABLE llm_usage_before_marks;
