-- +goose Up
-- The whole swarm's usage over a time range without reading a row per mysis (issue 32). llm_usage_swarm_rollup sums
-- llm_calls per provider and model over whole UTC hours (span 1), whole UTC days (span 2) and all time (span 3,
-- start 'epoch'), in 16 shards (the mysis id's last byte & 15) so concurrent writers of different myses rarely wait
-- on one row; a read sums the shards. recordCallsSQL keeps it current in the statement that inserts the calls;
-- DeleteMysis takes a deleted mysis's rows (read from llm_usage_rollup and llm_usage_totals before they cascade)
-- out of its shard, so it equals an aggregate over llm_calls at every commit. The swarm's total and by-model sums
-- over a range read whole days and hours here and only the ragged edges from llm_calls.
CREATE TABLE llm_usage_swarm_rollup (
    span                 smallint NOT NULL CHECK (span IN (1, 2, 3)),
    start                timestamptz NOT NULL,
    provider             text NOT NULL,
    model                text NOT NULL,
    shard                smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
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
    PRIMARY KEY (span, start, provider, model, shard)
);

-- Backfill from the per-mysis rollup (hours, days) and the running totals (all time), which 00010 and 00004 built
-- from the stored calls.
INSERT INTO llm_usage_swarm_rollup (span, start, provider, model, shard, calls, failed_calls, prompt_tokens,
    cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos,
    first_call_at, last_call_at)
SELECT span, start, provider, model, get_byte(uuid_send(mysis_id), 15) & 15, sum(calls), sum(failed_calls),
    sum(prompt_tokens), sum(cached_prompt_tokens), sum(completion_tokens), sum(reasoning_tokens), sum(composed_tokens),
    sum(latency_ms), sum(retries), sum(cost_nanos), min(first_call_at), max(last_call_at)
FROM (
    SELECT mysis_id, span, start, provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
        completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
    FROM llm_usage_rollup
    UNION ALL
    SELECT mysis_id, 3, 'epoch', provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
        completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
    FROM llm_usage_totals
) r
GROUP BY span, start, provider, model, get_byte(uuid_send(mysis_id), 15) & 15;

-- +goose Down
DROP TABLE llm_usage_swarm_rollup;
