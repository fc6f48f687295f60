package pgstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

const broadcastCols = `b.id, b.sender_id, b.content, b.created_at`

func broadcastDest(b *memory.Broadcast) []any {
	return []any{&b.ID, &b.SenderID, &b.Content, &b.CreatedAt}
}

// RecordBroadcast stores b once (idempotent on b.ID; an empty ID gets a fresh one) and delivers the stored
// broadcast in the same transaction to targets, or to every mysis except the sender when targets is empty.
// A retry returns the broadcast as first recorded and delivers only where it is missing.
func (s *Store) RecordBroadcast(ctx context.Context, b memory.Broadcast, targets []string) (memory.Delivery, error) {
	var err error
	if b.ID == "" {
		b.ID = memory.NewID()
	} else if b.ID, err = memory.ParseID("broadcast_id", b.ID); err != nil {
		return memory.Delivery{}, err
	}
	if b.SenderID, err = memory.ValidateSenderID("sender_id", b.SenderID); err != nil {
		return memory.Delivery{}, err
	}
	if err := memory.ValidateBroadcastContent(b.Content); err != nil {
		return memory.Delivery{}, err
	}
	targets, err = parseTargets("target_mysis_ids", targets, false)
	if err != nil {
		return memory.Delivery{}, err
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return memory.Delivery{}, dbErr(err, "record broadcast")
	}
	defer rollback(ctx, tx)
	var stored memory.Broadcast
	err = tx.QueryRow(ctx, `
		INSERT INTO broadcasts AS b (id, sender_id, content) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO NOTHING
		RETURNING `+broadcastCols, b.ID, b.SenderID, b.Content).Scan(broadcastDest(&stored)...)
	if errors.Is(err, pgx.ErrNoRows) {
		// Recorded before: deliver what was recorded then, not this request's copy.
		err = tx.QueryRow(ctx, `SELECT `+broadcastCols+` FROM broadcasts b WHERE b.id = $1`, b.ID).Scan(broadcastDest(&stored)...)
	}
	if err != nil {
		return memory.Delivery{}, dbErr(err, "record broadcast")
	}
	d, err := deliver(ctx, tx, stored, targets)
	if err != nil {
		return memory.Delivery{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return memory.Delivery{}, dbErr(err, "record broadcast")
	}
	return d, nil
}

// DeliverBroadcast delivers an already recorded broadcast to more myses, idempotently per mysis.
func (s *Store) DeliverBroadcast(ctx context.Context, broadcastID string, mysisIDs []string) (memory.Delivery, error) {
	broadcastID, err := memory.ParseID("broadcast_id", broadcastID)
	if err != nil {
		return memory.Delivery{}, err
	}
	mysisIDs, err = parseTargets("mysis_ids", mysisIDs, true)
	if err != nil {
		return memory.Delivery{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return memory.Delivery{}, dbErr(err, "deliver broadcast")
	}
	defer rollback(ctx, tx)
	var stored memory.Broadcast
	err = tx.QueryRow(ctx, `SELECT `+broadcastCols+` FROM broadcasts b WHERE b.id = $1`, broadcastID).Scan(broadcastDest(&stored)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Delivery{}, errs.NotFoundf("broadcast %s not found", broadcastID)
	}
	if err != nil {
		return memory.Delivery{}, dbErr(err, "deliver broadcast")
	}
	d, err := deliver(ctx, tx, stored, mysisIDs)
	if err != nil {
		return memory.Delivery{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return memory.Delivery{}, dbErr(err, "deliver broadcast")
	}
	return d, nil
}

// parseTargets validates and de-duplicates target ids, keeping first-seen order.
func parseTargets(field string, ids []string, required bool) ([]string, error) {
	if required && len(ids) == 0 {
		return nil, errs.InvalidField(field, "at least one mysis id is required")
	}
	if len(ids) > memory.MaxDeliveryTargets {
		return nil, errs.InvalidField(field, "at most %d targets, got %d", memory.MaxDeliveryTargets, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		id, err := memory.ParseID(field+"["+strconv.Itoa(i)+"]", id)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// lockAllSQL locks every mysis except the sender, in id order, so concurrent deliveries never deadlock.
const lockAllSQL = `SELECT coalesce(array_agg(id::text), '{}') FROM (
	SELECT id FROM myses WHERE $1::uuid IS NULL OR id <> $1::uuid ORDER BY id FOR NO KEY UPDATE) t`

// lockSomeSQL locks the given myses in id order and returns those that exist.
const lockSomeSQL = `SELECT coalesce(array_agg(id::text), '{}') FROM (
	SELECT id FROM myses WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE) t`

// deliverSQL writes the broadcast into every locked target that does not have it yet, in one statement: each
// target's seq and turn advance by one (under the lock taken by the previous statement, whose snapshot this
// statement post-dates, so "already delivered" is judged on committed data), and the rows that already existed
// are returned next to the new ones.
const deliverSQL = `
WITH tgt AS (
	SELECT unnest($1::uuid[]) AS id
), existing AS (
	SELECT ` + memCols + ` FROM memories m JOIN tgt ON m.mysis_id = tgt.id WHERE m.idempotency_key = $2
), bumped AS (
	UPDATE myses y SET last_seq = y.last_seq + 1, current_turn = y.current_turn + 1, updated_at = now()
	FROM tgt
	WHERE y.id = tgt.id AND NOT EXISTS (SELECT 1 FROM existing e WHERE e.mysis_id = y.id)
	RETURNING y.id, y.last_seq, y.current_turn
), ins AS (
	INSERT INTO memories AS m (mysis_id, seq, turn, role, source, sender_id, content, idempotency_key, broadcast_id)
	SELECT bumped.id, bumped.last_seq, bumped.current_turn, 2, 2, $3, $4, $2, $5 FROM bumped
	RETURNING ` + memCols + `
)
SELECT true, ins.* FROM ins
UNION ALL
SELECT false, existing.* FROM existing`

func deliver(ctx context.Context, tx pgx.Tx, b memory.Broadcast, targets []string) (memory.Delivery, error) {
	d := memory.Delivery{Broadcast: b}
	var locked []string
	var err error
	if len(targets) == 0 {
		err = tx.QueryRow(ctx, lockAllSQL, nullable(b.SenderID)).Scan(&locked)
	} else {
		err = tx.QueryRow(ctx, lockSomeSQL, targets).Scan(&locked)
	}
	if err != nil {
		return d, dbErr(err, "deliver broadcast")
	}
	if len(targets) == 0 {
		targets = locked
	} else if len(locked) != len(targets) {
		have := make(map[string]bool, len(locked))
		for _, id := range locked {
			have[id] = true
		}
		for _, id := range targets {
			if !have[id] {
				return d, errMysisNotFound(id)
			}
		}
	}
	if len(targets) == 0 {
		return d, nil
	}
	rows, err := tx.Query(ctx, deliverSQL, targets, memory.BroadcastIdempotencyKey(b.ID), b.SenderID, b.Content, b.ID)
	if err != nil {
		return d, dbErr(err, "deliver broadcast")
	}
	defer rows.Close()
	byMysis := make(map[string]memory.Memory, len(targets))
	for rows.Next() {
		var isNew bool
		var r memRow
		if err := rows.Scan(append([]any{&isNew}, r.dest()...)...); err != nil {
			return d, dbErr(err, "deliver broadcast")
		}
		m, err := r.memory()
		if err != nil {
			return d, err
		}
		byMysis[m.MysisID] = m
		if isNew {
			d.Delivered++
		} else {
			d.AlreadyDelivered++
		}
	}
	if err := rows.Err(); err != nil {
		return d, dbErr(err, "deliver broadcast")
	}
	d.Memories = make([]memory.Memory, 0, len(targets))
	for _, id := range targets {
		if m, ok := byMysis[id]; ok {
			d.Memories = append(d.Memories, m)
		}
	}
	return d, nil
}
