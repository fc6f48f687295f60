-- +goose NO TRANSACTION
-- Broadcast fan-out touches one myses row and a handful of index pages per target; these two changes take most
-- of those page writes away. Runs outside a transaction so VACUUM FULL can rewrite myses with the new settings;
-- every statement is idempotent, so a re-run after a failure is safe.

-- +goose Up
-- Deliveries are unique per (broadcast, mysis). Keyed by broadcast first, one delivery's 1,000 index entries share
-- a few leaf pages instead of landing on 1,000 random pages of the per-mysis idempotency index; deliveries no
-- longer carry an idempotency key.
CREATE UNIQUE INDEX IF NOT EXISTS memories_broadcast_delivery_key ON memories (broadcast_id, mysis_id)
    WHERE broadcast_id IS NOT NULL;

-- Every append and delivery updates its mysis row (last_seq, current_turn, updated_at — none of them indexed).
-- Free space on each page lets those be HOT updates, which write no index entries; VACUUM FULL rewrites the
-- (small) table so existing pages get that space too.
ALTER TABLE myses SET (fillfactor = 50);
VACUUM FULL myses;

-- +goose Down
ALTER TABLE myses RESET (fillfactor);
DROP INDEX IF EXISTS memories_broadcast_delivery_key;
