-- +goose Up
-- Ranking myses by cost over a range of several hours (GetUsage with top and a from; issue 32) without summing every
-- mysis's hours. llm_usage_mysis_before holds, for a whole UTC hour A, each mysis's cost and calls before A as of
-- the moment it was built: a mysis's cost since A is then its all-time row of llm_usage_mysis_cost less its row
-- here, and its cost in [A, B) its row at B less its row at A — one or two entries per mysis however many hours the
-- range spans — plus the ragged edges from llm_calls. llm_usage_before_marks lists the hours built; deleting a mark
-- deletes its rows, and deleting a mysis deletes its rows.
--
-- The rows are built in the background (pgstore.UsageSnapshotter) when a ranking asks for an hour that has none,
-- and never updated: a call recorded later with a start before A (late, or retried) makes them stale. A ranking
-- checks each snapshot it reads, in its own snapshot: its calls, summed over the swarm, must equal the swarm
-- rollup's calls before A (calls only ever add; a deleted mysis leaves both). Stale or missing, it sums the hours
-- instead and asks for a rebuild.
CREATE TABLE llm_usage_before_marks (
    start    timestamptz PRIMARY KEY,
    built_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE llm_usage_mysis_before (
    start      timestamptz NOT NULL REFERENCES llm_usage_before_marks (start) ON DELETE CASCADE,
    mysis_id   uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    cost_nanos bigint NOT NULL,
    calls      bigint NOT NULL,
    PRIMARY KEY (start, mysis_id) INCLUDE (cost_nanos, calls)
);
-- For the cascade when a mysis is deleted.
CREATE INDEX llm_usage_mysis_before_mysis_idx ON llm_usage_mysis_before (mysis_id);

-- +goose Down
DROP TABLE llm_usage_mysis_before;
DROP TABLE llm_usage_before_marks;
