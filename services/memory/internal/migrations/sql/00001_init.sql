-- +goose Up
-- The memory service schema. Numbers stored for role and source are the memory package's Role and Source values
-- (and the proto enum numbers): role 1 system, 2 user, 3 assistant, 4 tool; source 1 direct, 2 broadcast,
-- 3 nudge, 4 llm, 5 tool, 6 system.

-- btree_gin lets one GIN index hold (mysis_id, tsvector), so a search of one mysis intersects that mysis's posting
-- list with the query's instead of ranking every matching row of the swarm.
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- zoea_fts_text is the text that full-text search indexes: the content with JSON escape sequences (\n, \t, \",
-- \uXXXX) turned into spaces, so "Arrived.\nDocked" in a tool result indexes "docked" rather than "ndocked".
-- The stored content itself is never changed.
-- +goose StatementBegin
CREATE FUNCTION zoea_fts_text(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(t, '\\(u[0-9A-Fa-f]{4}|[nrtbf"\\/])', ' ', 'g');
-- +goose StatementEnd

CREATE TABLE myses (
    id                  uuid PRIMARY KEY,
    name                text NOT NULL UNIQUE,
    provider            text NOT NULL,
    model               text NOT NULL DEFAULT '',
    temperature         double precision NOT NULL DEFAULT 0,
    system_prompt       text NOT NULL DEFAULT '',
    state               text NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'running', 'stopped', 'errored')),
    state_reason        text NOT NULL DEFAULT '',
    encouragement_count integer NOT NULL DEFAULT 0 CHECK (encouragement_count >= 0),
    -- current_turn and last_seq are advanced under this row's lock by every append and delivery, which is what
    -- keeps seq gapless and strictly increasing with concurrent writers.
    current_turn        bigint NOT NULL DEFAULT 0,
    last_seq            bigint NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX myses_state_name_idx ON myses (state, name);

CREATE TABLE memories (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    mysis_id        uuid NOT NULL REFERENCES myses (id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    turn            bigint NOT NULL,
    role            smallint NOT NULL CHECK (role BETWEEN 1 AND 4),
    source          smallint NOT NULL CHECK (source BETWEEN 1 AND 6),
    sender_id       text NOT NULL DEFAULT '',
    content         text NOT NULL DEFAULT '',
    reasoning       text NOT NULL DEFAULT '',
    -- [{"id":…,"name":…,"arguments":"<JSON object text>"}]: arguments is a JSON string, not a nested object, so
    -- its bytes (whitespace, key order, duplicate keys) survive the round trip exactly. NULL when there are none.
    tool_calls      jsonb,
    tool_call_id    text NOT NULL DEFAULT '',
    tool_name       text NOT NULL DEFAULT '',
    idempotency_key text,
    broadcast_id    uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    content_tsv     tsvector GENERATED ALWAYS AS (to_tsvector('english', zoea_fts_text(content))) STORED,
    reasoning_tsv   tsvector GENERATED ALWAYS AS (to_tsvector('english', zoea_fts_text(reasoning))) STORED,
    CONSTRAINT memories_mysis_seq_key UNIQUE (mysis_id, seq)
);
-- Retries find their rows here (client keys; broadcast deliveries are unique per broadcast, see 00002).
CREATE UNIQUE INDEX memories_idempotency_key ON memories (mysis_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The current mission (latest commander direct message or broadcast) in O(log n) however far back it is. The
-- predicate must stay identical to the one in the compose-window query.
CREATE INDEX memories_mission_idx ON memories (mysis_id, seq DESC)
    WHERE role = 2 AND source IN (1, 2) AND sender_id = '';
CREATE INDEX memories_content_fts_idx ON memories USING gin (mysis_id, content_tsv);
CREATE INDEX memories_reasoning_fts_idx ON memories USING gin (mysis_id, reasoning_tsv) WHERE reasoning <> '';

CREATE TABLE broadcasts (
    id          uuid PRIMARY KEY,
    sender_id   text NOT NULL DEFAULT '',
    content     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', zoea_fts_text(content))) STORED
);
CREATE INDEX broadcasts_content_fts_idx ON broadcasts USING gin (content_tsv);
-- The swarm's latest commander broadcast (global mission fallback).
CREATE INDEX broadcasts_commander_idx ON broadcasts (created_at DESC, id DESC) WHERE sender_id = '';

CREATE TABLE accounts (
    username     text PRIMARY KEY,
    -- version byte || AES-256-GCM nonce || ciphertext+tag; the plaintext is never stored.
    password_enc bytea NOT NULL,
    empire       text NOT NULL DEFAULT '',
    -- Deleting a mysis releases its account.
    mysis_id     uuid UNIQUE REFERENCES myses (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX accounts_free_idx ON accounts (created_at, username) WHERE mysis_id IS NULL;

-- +goose Down
DROP TABLE accounts;
DROP TABLE broadcasts;
DROP TABLE memories;
DROP TABLE myses;
DROP FUNCTION zoea_fts_text(text);
