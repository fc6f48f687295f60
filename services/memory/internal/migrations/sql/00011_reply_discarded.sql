-- +goose Up
-- At most one discarded paid reply per turn, whichever runner replica owns the mysis (issue 26). A reply thrown away
-- because a commander prompt arrived while the model wrote it is recorded in llm_calls (RecordLlmCalls with
-- discarded set), which sets reply_discarded in the same transaction; the next final answer (an assistant memory
-- without tool calls) clears it in its append's update of the mysis row. A runner that takes the mysis over reads it
-- with the mysis record and keeps its next answer instead of discarding a second one.
ALTER TABLE myses ADD COLUMN reply_discarded boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE myses DROP COLUMN reply_discarded;
