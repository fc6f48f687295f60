-- +goose Up
-- Usage over a time range without scanning the call log (issue 32). llm_usage_rollup sums llm_calls per mysis,
-- provider and model over whole UTC hours (span 1) and whole UTC days (span 2); recordCallsSQL keeps both current
-- in the statement that inserts the calls, so they are exact at every commit. A range reads whole days and whole
-- hours here and only its ragged edges (less than an hour at each end) from llm_calls. Deleting a mysis deletes its
-- rows, as it deletes its calls.
CREATE TABLE llm_usage_rollup (
    mysis_id             uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    span                 smallint NOT NULL CHECK (span IN (1, 2)),
    start                timestamptz NOT NULL,
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
    PRIMARY KEY (mysis_id, span, start, provider, model)
);
-- The swarm's hours or days in a range.
CREATE INDEX llm_usage_rollup_span_start_idx ON llm_usage_rollup (span, start);

-- Backfill from the calls already stored.
INSERT INTO llm_usage_rollup (mysis_id, span, start, provider, model, calls, failed_calls, prompt_tokens,
    cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos,
    first_call_at, last_call_at)
SELECT c.mysis_id, s.span, s.start, c.provider, c.model, count(*), count(*) FILTER (WHERE c.error <> ''),
    sum(c.prompt_tokens), sum(c.cached_prompt_tokens), sum(c.completion_tokens), sum(c.reasoning_tokens),
    sum(c.composed_tokens), sum(c.latency_ms), sum(c.retries), sum(c.cost_nanos), min(c.started_at), max(c.started_at)
FROM llm_calls c CROSS JOIN LATERAL (VALUES
    (1::smallint, date_trunc('hour', c.started_at, 'UTC')),
    (2::smallint, date_trunc('day', c.started_at, 'UTC'))) AS s(span, start)
GROUP BY c.mysis_id, s.span, s.start, c.provider, c.model;

-- +goose Down
DROP TABLE llm_usage_rollup;
