-- +goose Up
-- LLM usage accounting (issue 11). Every LLM call is one llm_calls row, written in the same statement batch as the
-- assistant memory it produced (or alone, for failed and discarded calls). Two derived tables are kept current in
-- the same statement, so reads never scan the call log: running totals per mysis and model (usage "all time",
-- grouped by mysis or model, for 10,000 myses in a few milliseconds) and the spend counters of the current hour,
-- day and total that the runner checks before every call.

CREATE TABLE llm_calls (
    -- Client-assigned: a retried write of the same call is stored once.
    call_id              uuid PRIMARY KEY,
    mysis_id             uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    -- Seq of the assistant memory the call produced; NULL for a failed or discarded call.
    memory_seq           bigint,
    started_at           timestamptz NOT NULL,
    provider             text NOT NULL,
    model                text NOT NULL,
    prompt_tokens        bigint NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_prompt_tokens bigint NOT NULL DEFAULT 0 CHECK (cached_prompt_tokens >= 0),
    completion_tokens    bigint NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens     bigint NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    composed_tokens      bigint NOT NULL DEFAULT 0 CHECK (composed_tokens >= 0),
    latency_ms           bigint NOT NULL DEFAULT 0 CHECK (latency_ms >= 0),
    retries              integer NOT NULL DEFAULT 0 CHECK (retries >= 0),
    error                text NOT NULL DEFAULT '',
    cost_nanos           bigint NOT NULL DEFAULT 0 CHECK (cost_nanos >= 0)
);
-- Time-range usage: the swarm's calls in a range, and one mysis's.
CREATE INDEX llm_calls_started_idx ON llm_calls (started_at);
CREATE INDEX llm_calls_mysis_started_idx ON llm_calls (mysis_id, started_at);

-- Running totals per mysis, provider and model.
CREATE TABLE llm_usage_totals (
    mysis_id             uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    provider             text NOT NULL,
    model                text NOT NULL,
    calls                bigint NOT NULL DEFAULT 0,
    failed_calls         bigint NOT NULL DEFAULT 0,
    prompt_tokens        bigint NOT NULL DEFAULT 0,
    cached_prompt_tokens bigint NOT NULL DEFAULT 0,
    completion_tokens    bigint NOT NULL DEFAULT 0,
    reasoning_tokens     bigint NOT NULL DEFAULT 0,
    composed_tokens      bigint NOT NULL DEFAULT 0,
    latency_ms           bigint NOT NULL DEFAULT 0,
    retries              bigint NOT NULL DEFAULT 0,
    cost_nanos           bigint NOT NULL DEFAULT 0,
    first_call_at        timestamptz NOT NULL,
    last_call_at         timestamptz NOT NULL,
    PRIMARY KEY (mysis_id, provider, model)
);

-- Spend in the current window of each kind (1 hour, 2 day, 3 total), one row per mysis and window. A call in a
-- newer window than the row's restarts the count; a late call for an older window is not counted again.
CREATE TABLE mysis_spend (
    mysis_id   uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    win        smallint NOT NULL CHECK (win BETWEEN 1 AND 3),
    start      timestamptz NOT NULL,
    tokens     bigint NOT NULL DEFAULT 0,
    cost_nanos bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (mysis_id, win)
);

-- The swarm's spend, in 16 shards per window so concurrent writers of different myses rarely wait on one row;
-- a read sums the shards. Deleting a mysis does not refund the swarm.
CREATE TABLE swarm_spend (
    shard      smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    win        smallint NOT NULL CHECK (win BETWEEN 1 AND 3),
    start      timestamptz NOT NULL,
    tokens     bigint NOT NULL DEFAULT 0,
    cost_nanos bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (shard, win)
);

-- A mysis's own spend limits (window 1 hour, 2 day, 3 total; unit 1 tokens, 2 cost in 1e-9 USD). Amount 0 lifts a
-- configured default for that window and unit.
CREATE TABLE spend_limits (
    mysis_id uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    win      smallint NOT NULL CHECK (win BETWEEN 1 AND 3),
    unit     smallint NOT NULL CHECK (unit BETWEEN 1 AND 2),
    amount   bigint NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (mysis_id, win, unit)
);

-- +goose Down
DROP TABLE spend_limits;
DROP TABLE swarm_spend;
DROP TABLE mysis_spend;
DROP TABLE llm_usage_totals;
DROP TABLE llm_calls;
