-- Search v3: an assistant memory's tool calls go into its content_tsv. Since 00007 a memory with tool calls was
-- searched by a second document, zoea_calls_tsv(content, tool_calls), indexed by the expression index
-- memories_calls_fts_idx and recomputed from the text for every such row a search walked or ranked: on the benchmark
-- box ~11 µs a row, most of the cost of looking through a mysis's newest 2,000 rows (docs/BENCHMARKS.md, "Search:
-- tool calls in content_tsv"). Now the writer stores that document as the row's content_tsv (zoea_memory_tsv below),
-- so one vector and one GIN index answer every message search and nothing is recomputed on read.
--
-- The backfill rewrites the assistant memories that made tool calls (about a quarter of a SpaceMolt history) in this
-- migration's transaction; appends are not blocked (memories are append-only, nothing else updates those rows), and
-- VACUUM afterwards makes the old row versions' space reusable. Re-running it recomputes the same values.

-- +goose Up
-- zoea_memory_tsv is a memory's full-text vector as the service writes it: its content, and for a memory with tool
-- calls its content and its calls as one document (zoea_calls_tsv, 00007). Tool results are written by the
-- background indexer with the same function (they carry no tool calls).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION zoea_memory_tsv(content text, calls jsonb) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN calls IS NULL THEN to_tsvector('english', zoea_fts_text(content))
                ELSE zoea_calls_tsv(content, calls) END;
-- +goose StatementEnd

UPDATE memories SET content_tsv = zoea_calls_tsv(content, tool_calls) WHERE tool_calls IS NOT NULL;

DROP INDEX IF EXISTS memories_calls_fts_idx;

-- +goose Down
UPDATE memories SET content_tsv = to_tsvector('english', zoea_fts_text(content)) WHERE tool_calls IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_calls_fts_idx ON memories
    USING gin (mysis_id, zoea_calls_tsv(content, tool_calls)) WHERE tool_calls IS NOT NULL;
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'zoea_name_partition_indexes') THEN
        PERFORM zoea_name_partition_indexes('memories');
    END IF;
END $$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS zoea_memory_tsv(text, jsonb);
