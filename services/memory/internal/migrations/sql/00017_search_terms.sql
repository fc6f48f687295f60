-- +goose NO TRANSACTION
-- Search v4 (issue 42): per-mysis term statistics for BM25 ranking and rarity-first candidates
-- (pgstore/search.go, pgstore/terms.go). Message search used to rank only a mysis's newest 200 matches with ts_rank,
-- so a memory's age decided whether it could be found; it now reads the postings of the query's rarest terms whole
-- and scores with BM25, which needs, per mysis, how many memories hold each lexeme (df), how many memories have a
-- vector (docs) and their total length (len, in distinct lexemes: length(tsvector)).
--
-- Nothing here touches memories' rows or takes more than a brief lock on it: the tables are new, and existing
-- memories are only enqueued (a read of memories plus inserts into the queue); the memory service's indexer
-- (pgstore.Store.CountTerms) folds the queue into the counts in the background, as it does for every new row.
-- Statements are idempotent so a re-run after a failure resumes (NO TRANSACTION: the enqueue of a large table is not
-- one long transaction holding the other statements' locks).

-- +goose Up
-- df of each lexeme among a mysis's memories (their content_tsv). No foreign key: the counts are written by the
-- background counter only, and DeleteMysis deletes a mysis's rows itself.
CREATE TABLE IF NOT EXISTS memory_terms (
    mysis_id uuid   NOT NULL,
    lexeme   text   NOT NULL,
    df       bigint NOT NULL,
    PRIMARY KEY (mysis_id, lexeme)
) WITH (fillfactor = 80);

-- docs and len per mysis: BM25's N and average document length.
CREATE TABLE IF NOT EXISTS memory_term_totals (
    mysis_id uuid   PRIMARY KEY,
    docs     bigint NOT NULL,
    len      bigint NOT NULL
) WITH (fillfactor = 50);

-- Memories whose vector is stored but not counted yet: the append (rows indexed in it), the indexer (tool results
-- it indexes) and the bulk loader add one row each, in the transaction that writes the vector, so a memory is
-- counted exactly once however writes and counting interleave.
CREATE TABLE IF NOT EXISTS memory_terms_queue (
    memory_id bigint PRIMARY KEY,
    mysis_id  uuid   NOT NULL
);

-- Every memory already indexed, once (a re-run adds nothing twice).
INSERT INTO memory_terms_queue (memory_id, mysis_id)
SELECT m.id, m.mysis_id FROM memories m
WHERE m.content_tsv IS NOT NULL
ON CONFLICT (memory_id) DO NOTHING;

-- +goose Down
DROP TABLE IF EXISTS memory_terms_queue;
DROP TABLE IF EXISTS memory_term_totals;
DROP TABLE IF EXISTS memory_terms;
