-- +goose NO TRANSACTION
-- Composition v2: tool results keep the arguments of the call they answer and a distinct-call key, and the compose
-- window gets the indexes that let it carry the newest result of each call, pinned results, earlier replies and the
-- whole current turn without reading whole histories. Runs outside a transaction so the backfill can commit in
-- batches (no multi-million-row transaction, no table-wide lock held for its duration) and the indexes can be built
-- CONCURRENTLY while the service keeps writing; every statement is idempotent, so a re-run after a failure resumes.

-- +goose Up
-- Both are NULL on rows that are not tool results. Adding nullable columns without a default rewrites nothing.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS call_arguments_json text, ADD COLUMN IF NOT EXISTS call_key text;

-- zoea_canonical_json writes a jsonb value compactly with object keys in byte order: the canonical form of the
-- memory package's CanonicalArguments (keys sorted, no insignificant whitespace, jsonb's string escapes and number
-- text). Only the backfill below uses it; new rows get their key from the service.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION zoea_canonical_json(j jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    CASE jsonb_typeof(j)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_jsonb(e.key)::text || ':' || zoea_canonical_json(e.value), ','
                                              ORDER BY e.key COLLATE "C")
                                FROM jsonb_each(j) e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(zoea_canonical_json(e.v), ',' ORDER BY e.n)
                                FROM jsonb_array_elements(j) WITH ORDINALITY e(v, n)), '') || ']';
    ELSE
        RETURN j::text;
    END CASE;
END $$;
-- +goose StatementEnd

-- zoea_call_key is callkey.Of (libs/callkey) in SQL: tool name, a space, the canonical arguments (their exact text when they
-- are not a JSON object jsonb accepts), replaced by sha256:<hex> when longer than 256 bytes so the key always fits
-- a b-tree entry. TestCallKeyMatchesSQL checks it against the Go function.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION zoea_call_key(tool_name text, args text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    c text := args;
BEGIN
    IF ltrim(args, E' \t\r\n') LIKE '{%' THEN
        BEGIN
            c := zoea_canonical_json(args::jsonb);
        EXCEPTION WHEN OTHERS THEN
            c := args; -- jsonb refuses it (\u0000, a lone surrogate, trailing text): keyed by its exact text
        END;
    END IF;
    IF octet_length(c) > 256 THEN
        c := 'sha256:' || encode(sha256(convert_to(c, 'UTF8')), 'hex');
    END IF;
    RETURN tool_name || ' ' || c;
END $$;
-- +goose StatementEnd

-- Backfill: a tool result's arguments are those of the call with its id in the nearest earlier assistant message
-- with tool calls (within 256 rows, the same rule the service applies when a client sends no arguments); a result
-- whose call cannot be found is keyed by the tool name and empty arguments. Batches of 50,000 ids, each committed,
-- so the work is resumable (call_key IS NULL marks what is left) and no transaction grows with the table.
-- +goose StatementBegin
DO $$
DECLARE
    lo  bigint;
    top bigint;
BEGIN
    SELECT min(id), max(id) INTO lo, top FROM memories;
    WHILE lo <= top LOOP
        UPDATE memories t
        SET call_arguments_json = s.args, call_key = zoea_call_key(t.tool_name, coalesce(s.args, ''))
        FROM (
            SELECT r.id,
                   (SELECT tc ->> 'arguments' FROM jsonb_array_elements(a.tool_calls) tc
                    WHERE tc ->> 'id' = r.tool_call_id LIMIT 1) AS args
            FROM memories r
            LEFT JOIN LATERAL (
                SELECT a.tool_calls FROM memories a
                WHERE a.mysis_id = r.mysis_id AND a.seq < r.seq AND a.seq >= r.seq - 256
                  AND a.role = 3 AND a.tool_calls IS NOT NULL
                ORDER BY a.seq DESC LIMIT 1
            ) a ON true
            WHERE r.id >= lo AND r.id < lo + 50000 AND r.role = 4 AND r.call_key IS NULL
        ) s
        WHERE t.id = s.id;
        COMMIT;
        lo := lo + 50000;
    END LOOP;
END $$;
-- +goose StatementEnd

-- The compose window's indexes (see pgstore/window.go). All partial, so they cost only the rows they serve.
-- Tool results newest first with their keys: the carry-over scan since the objective, index-only once vacuumed.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_tool_seq_idx ON memories (mysis_id, seq DESC)
    INCLUDE (call_key, tool_name) WHERE role = 4;
-- The newest result of a tool by name however far back (pinned login/register).
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_tool_name_idx ON memories (mysis_id, tool_name, seq DESC)
    WHERE role = 4;
-- Assistant text replies (no tool calls): the final replies of earlier turns.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_reply_idx ON memories (mysis_id, seq DESC)
    WHERE role = 3 AND tool_calls IS NULL;
-- Turn openers (commander direct messages, broadcasts, nudges): where the current turn begins.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_turn_open_idx ON memories (mysis_id, seq DESC)
    WHERE role = 2 AND source IN (1, 2, 3);

-- +goose Down
DROP INDEX IF EXISTS memories_turn_open_idx;
DROP INDEX IF EXISTS memories_reply_idx;
DROP INDEX IF EXISTS memories_tool_name_idx;
DROP INDEX IF EXISTS memories_tool_seq_idx;
DROP FUNCTION IF EXISTS zoea_call_key(text, text);
DROP FUNCTION IF EXISTS zoea_canonical_json(jsonb);
ALTER TABLE memories DROP COLUMN IF EXISTS call_key, DROP COLUMN IF EXISTS call_arguments_json;
