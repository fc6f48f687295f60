-- +goose Up
-- A broadcast is stored once. Its row in broadcasts keeps the content and the only full-text vector of it; a
-- delivery to a mysis is a light memory row (role user, source broadcast, broadcast_id set, empty content) whose
-- content every read resolves from the broadcast by primary key (pgstore memContentSQL) and which message search
-- finds through the broadcast's own vector (pgstore searchMessagesSQL). Before this, every delivery carried a copy
-- of the text and its two tsvectors: a fan-out to 10,000 myses wrote the text 10,000 times.
--
-- Deliveries written before this migration give their copies up here: a delivery always copied the broadcast as
-- recorded, so nothing is lost. One statement over the deliveries only (found through
-- memories_broadcast_delivery_key); the generated content_tsv of each becomes empty with its content.
UPDATE memories m SET content = ''
FROM broadcasts b
WHERE m.broadcast_id = b.id AND m.broadcast_id IS NOT NULL AND m.content <> '';

-- +goose Down
UPDATE memories m SET content = b.content
FROM broadcasts b
WHERE m.broadcast_id = b.id AND m.broadcast_id IS NOT NULL AND m.content = '';
