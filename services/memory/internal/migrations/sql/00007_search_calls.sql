-- +goose NO TRANSACTION
-- Search v2: tool calls become searchable. An assistant memory's tool calls (name and arguments, e.g.
-- `sell {"item_id":"titanium_ore"}`) are indexed together with its text, so "sell", "titanium_ore" or
-- "sell titanium_ore" find the call. An expression index, not a stored column: adding a generated column would
-- rewrite the whole table under an exclusive lock, while this builds CONCURRENTLY beside a running service and costs
-- only the index entries of assistant memories with tool calls. Runs outside a transaction for CONCURRENTLY; every
-- statement is idempotent, so a re-run after a failure resumes.

-- +goose Up
-- zoea_calls_text is the text of a tool_calls array: each call's name, a space and its arguments (a JSON string,
-- read as text), calls separated by " ; ". NULL for NULL.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION zoea_calls_text(calls jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT string_agg(coalesce(c ->> 'name', '') || ' ' || coalesce(c ->> 'arguments', ''), ' ; ' ORDER BY n)
            FROM jsonb_array_elements(CASE jsonb_typeof(calls) WHEN 'array' THEN calls ELSE '[]' END)
                 WITH ORDINALITY e(c, n));
-- +goose StatementEnd

-- zoea_calls_tsv is what a memory with tool calls is searched by: its content and its calls, one document, so a
-- query may combine words of both ("sell titanium_ore" matches "I'll call sell now." + sell {"item_id":…}).
-- The same parser and JSON-escape handling as content_tsv (zoea_fts_text, 'english').
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION zoea_calls_tsv(content text, calls jsonb) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('english', zoea_fts_text(coalesce(content, '') || ' ' || coalesce(zoea_calls_text(calls), '')));
-- +goose StatementEnd

-- A build interrupted earlier leaves an INVALID index that IF NOT EXISTS would keep: drop it so the build reruns.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = 'memories_calls_fts_idx' AND NOT i.indisvalid) THEN
        DROP INDEX memories_calls_fts_idx;
    END IF;
END $$;
-- +goose StatementEnd

-- Partial: only assistant memories with tool calls have entries (about a quarter of a SpaceMolt history). The
-- predicate and expression must stay identical to pgstore/search.go's.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_calls_fts_idx ON memories
    USING gin (mysis_id, zoea_calls_tsv(content, tool_calls)) WHERE tool_calls IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS memories_calls_fts_idx;
DROP FUNCTION IF EXISTS zoea_calls_tsv(text, jsonb);
DROP FUNCTION IF EXISTS zoea_calls_text(jsonb);
