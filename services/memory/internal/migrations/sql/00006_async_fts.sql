-- +goose NO TRANSACTION
-- Asynchronous full-text indexing of tool results (pgstore/indexer.go). Computing a tsvector and maintaining the
-- GIN index is ~90 % of an append's cost and tool results are most of the text, so the memory service may leave
-- their content_tsv NULL at append time and fill it from a background indexer within a bounded lag. Runs outside a
-- transaction so the pending index can be built CONCURRENTLY while the service writes; every statement is
-- idempotent, so a re-run after a failure resumes.

-- +goose Up
-- content_tsv stops being a generated column and becomes an ordinary one that the writer fills: appends compute it
-- for every row except tool results (when asynchronous indexing is on), the indexer computes it for those. DROP
-- EXPRESSION keeps every stored value and rewrites nothing. reasoning_tsv stays generated (reasoning is short and
-- on few rows). The expression is the same as before: to_tsvector('english', zoea_fts_text(content)).
ALTER TABLE memories ALTER COLUMN content_tsv DROP EXPRESSION IF EXISTS;

-- The indexer's queue: exactly the tool results still without a vector, oldest first. Rows leave it when indexed,
-- so it stays as small as the backlog (plus dead entries until vacuum).
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_fts_pending_idx ON memories (id, mysis_id)
    WHERE content_tsv IS NULL AND role = 4;

-- +goose Down
DROP INDEX IF EXISTS memories_fts_pending_idx;
UPDATE memories SET content_tsv = to_tsvector('english', zoea_fts_text(content)) WHERE content_tsv IS NULL;
-- Making the column generated again needs a table rewrite: drop it (with its GIN index) and add it back.
ALTER TABLE memories DROP COLUMN content_tsv;
ALTER TABLE memories ADD COLUMN content_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', zoea_fts_text(content))) STORED;
CREATE INDEX memories_content_fts_idx ON memories USING gin (mysis_id, content_tsv);
