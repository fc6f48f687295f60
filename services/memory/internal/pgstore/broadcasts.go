package pgstore

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

const broadcastCols = `b.id, b.sender_id, b.content, b.created_at`

func broadcastDest(b *memory.Broadcast) []any {
	return []any{&b.ID, &b.SenderID, &b.Content, &b.CreatedAt}
}

// RecordBroadcast stores b once (idempotent on b.ID, which the caller has set) and delivers the stored broadcast in
// the same transaction to targets (distinct canonical ids), or to every mysis except the sender when targets is
// empty. A retry returns the broadcast as first recorded and delivers only where it is missing; the same id with a
// different content or sender is refused (errs.ReasonIdempotencyKeyReused) and changes nothing.
func (s *Store) RecordBroadcast(ctx context.Context, b memory.Broadcast, targets []string) (memory.Delivery, error) {
	return s.withDeliveryRetry(ctx, "record broadcast", func(tx pgx.Tx) (memory.Delivery, error) {
		var stored memory.Broadcast
		// A mysis sender must exist when the broadcast is first recorded (a retry after its deletion still gets
		// the recorded broadcast back).
		err := tx.QueryRow(ctx, `
			INSERT INTO broadcasts AS b (id, sender_id, content)
			SELECT $1::uuid, $2::text, $3::text WHERE $2::text = '' OR EXISTS (SELECT 1 FROM myses WHERE id = NULLIF($2::text, '')::uuid)
			ON CONFLICT (id) DO NOTHING
			RETURNING `+broadcastCols, b.ID, b.SenderID, b.Content).Scan(broadcastDest(&stored)...)
		if errors.Is(err, pgx.ErrNoRows) {
			// Recorded before: a retry delivers what was recorded then; the same id with other content is refused.
			err = tx.QueryRow(ctx, `SELECT `+broadcastCols+` FROM broadcasts b WHERE b.id = $1`, b.ID).Scan(broadcastDest(&stored)...)
			if errors.Is(err, pgx.ErrNoRows) {
				return memory.Delivery{}, &errs.Error{Kind: errs.NotFound, Field: "sender_id", Msg: "no mysis has this id"}
			}
			if err == nil {
				if field := rules.BroadcastMismatch(b.SenderID, b.Content, stored.SenderID, stored.Content); field != "" {
					return memory.Delivery{}, rules.BroadcastKeyReused(b.ID, field)
				}
			}
		}
		if err != nil {
			return memory.Delivery{}, dbErr(err, "record broadcast")
		}
		return deliver(ctx, tx, stored, targets)
	})
}

// DeliverBroadcast delivers an already recorded broadcast to more myses, idempotently per mysis.
func (s *Store) DeliverBroadcast(ctx context.Context, broadcastID string, mysisIDs []string) (memory.Delivery, error) {
	return s.withDeliveryRetry(ctx, "deliver broadcast", func(tx pgx.Tx) (memory.Delivery, error) {
		var stored memory.Broadcast
		err := tx.QueryRow(ctx, `SELECT `+broadcastCols+` FROM broadcasts b WHERE b.id = $1`, broadcastID).Scan(broadcastDest(&stored)...)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.Delivery{}, errs.NotFoundf("broadcast %s not found", broadcastID)
		}
		if err != nil {
			return memory.Delivery{}, dbErr(err, "deliver broadcast")
		}
		return deliver(ctx, tx, stored, mysisIDs)
	})
}

// A broadcast is stored once: its row in broadcasts holds the content and the only full-text vector of it. A
// delivery is a light memory row (role user, source broadcast, broadcast_id set, empty content) that takes the
// mysis's next seq and opens a turn; reads resolve its content from the broadcast (memContentSQL), and message search
// finds it through the broadcast's vector (searchMessagesSQL). So a fan-out to 10,000 myses writes 10,000 small rows,
// not 10,000 copies of the text and its tsvector.
//
// Delivery is two statements. The first reads which targets exist and which already hold the broadcast; the
// second locks the remaining targets in id order (so concurrent deliveries never deadlock), advances each one's seq
// and turn on the newest row version (so seq stays gapless next to concurrent appends) and inserts its row, all in
// one statement. If a concurrent delivery of the same broadcast to the
// same mysis commits between the two statements, the insert hits the (broadcast_id, mysis_id) unique index, the
// transaction rolls back and is retried; the retry's first statement then sees that delivery.

// targetsAllSQL lists every mysis except the sender with whether it already has the broadcast.
const targetsAllSQL = `
SELECT y.id::text, m.id IS NOT NULL FROM myses y
LEFT JOIN memories m ON m.broadcast_id = $2 AND m.mysis_id = y.id
WHERE $1::uuid IS NULL OR y.id <> $1::uuid`

// targetsSomeSQL does the same for the given myses (those that exist).
const targetsSomeSQL = `
SELECT y.id::text, m.id IS NOT NULL FROM myses y
LEFT JOIN memories m ON m.broadcast_id = $2 AND m.mysis_id = y.id
WHERE y.id = ANY($1::uuid[])`

const deliverSQL = `
WITH locked AS (
	SELECT id FROM myses WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE
), bumped AS (
	UPDATE myses y SET last_seq = y.last_seq + 1, current_turn = y.current_turn + 1, updated_at = now()
	FROM locked WHERE y.id = locked.id
	RETURNING y.id, y.last_seq, y.current_turn
)
INSERT INTO memories AS m (mysis_id, seq, turn, role, source, sender_id, content, broadcast_id)
SELECT bumped.id, bumped.last_seq, bumped.current_turn, 2, 2, $3, '', $2 FROM bumped
RETURNING ` + memColsHead + `$4::text AS content, ` + memColsTail

// errRetryDelivery marks a delivery that raced a concurrent delivery of the same broadcast.
var errRetryDelivery = errors.New("concurrent delivery of the same broadcast")

// withDeliveryRetry runs fn in a transaction, retrying a few times when it raced a concurrent delivery.
func (s *Store) withDeliveryRetry(ctx context.Context, what string, fn func(pgx.Tx) (memory.Delivery, error)) (memory.Delivery, error) {
	for attempt := 0; ; attempt++ {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return memory.Delivery{}, dbErr(err, what)
		}
		d, err := fn(tx)
		if err == nil {
			err = tx.Commit(ctx)
			if err == nil {
				return d, nil
			}
			err = dbErr(err, what)
		}
		rollback(ctx, tx)
		if !errors.Is(err, errRetryDelivery) || attempt >= 3 {
			if errors.Is(err, errRetryDelivery) {
				return memory.Delivery{}, errs.Unavailablef(err, "%s: retry", what)
			}
			return memory.Delivery{}, err
		}
	}
}

// deliver delivers b to targets (none: every mysis but the sender) in tx: it reads which targets exist and which
// already hold b, inserts the missing deliveries and reads the existing ones, and returns the targets' delivery
// memories in target order (every mysis's: in id order).
func deliver(ctx context.Context, tx pgx.Tx, b memory.Broadcast, targets []string) (memory.Delivery, error) {
	d := memory.Delivery{Broadcast: b}
	t, err := deliveryTargets(ctx, tx, b, targets)
	if err != nil {
		return d, err
	}
	byMysis := make(map[string]memory.Memory, len(t.targets))
	if len(t.todo) > 0 {
		fresh, err := insertDeliveries(ctx, tx, b, t.todo)
		if err != nil {
			return d, err
		}
		for _, m := range fresh {
			byMysis[m.MysisID] = m
		}
		d.Delivered = len(fresh)
	}
	if len(t.done) > 0 {
		old, err := readDeliveries(ctx, tx, b, t.done)
		if err != nil {
			return d, err
		}
		for _, m := range old {
			byMysis[m.MysisID] = m
		}
		d.AlreadyDelivered = len(old)
	}
	d.Memories = make([]memory.Memory, 0, len(t.targets))
	for _, id := range t.targets {
		if m, ok := byMysis[id]; ok {
			d.Memories = append(d.Memories, m)
		}
	}
	return d, nil
}

// delivery is who a broadcast goes to: every target in answer order, and which of them still need it (todo) and
// which already hold it (done).
type delivery struct {
	targets, todo, done []string
}

// deliveryTargets reads the targets of b: the given myses, every one of which must exist, or (none given) every
// mysis but the sender, in id order.
func deliveryTargets(ctx context.Context, tx pgx.Tx, b memory.Broadcast, targets []string) (delivery, error) {
	var rows pgx.Rows
	var err error
	explicit := len(targets) > 0
	if explicit {
		rows, err = tx.Query(ctx, targetsSomeSQL, targets, b.ID) // deliveries are unique per (broadcast_id, mysis_id)
	} else {
		rows, err = tx.Query(ctx, targetsAllSQL, nullable(b.SenderID), b.ID)
	}
	if err != nil {
		return delivery{}, dbErr(err, "deliver broadcast")
	}
	var t delivery
	var all []string
	have := map[string]bool{}
	for rows.Next() {
		var id string
		var delivered bool
		if err := rows.Scan(&id, &delivered); err != nil {
			rows.Close()
			return delivery{}, dbErr(err, "deliver broadcast")
		}
		have[id] = true
		all = append(all, id)
		if delivered {
			t.done = append(t.done, id)
		} else {
			t.todo = append(t.todo, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return delivery{}, dbErr(err, "deliver broadcast")
	}
	if !explicit {
		slices.Sort(all)
		t.targets = all
		return t, nil
	}
	for _, id := range targets {
		if !have[id] {
			return delivery{}, errMysisNotFound(id)
		}
	}
	t.targets = targets
	return t, nil
}

// insertDeliveries inserts b's delivery to each mysis of todo (deliverSQL); it returns errRetryDelivery when a
// concurrent delivery of b to one of them committed first.
func insertDeliveries(ctx context.Context, tx pgx.Tx, b memory.Broadcast, todo []string) ([]memory.Memory, error) {
	slices.Sort(todo)
	rows, err := tx.Query(ctx, deliverSQL, todo, b.ID, b.SenderID, b.Content)
	if err != nil {
		return nil, dbErr(err, "deliver broadcast")
	}
	fresh, err := collectMemories(rows, "deliver broadcast")
	var pe *pgconn.PgError
	// On the partitioned table (00008) the violated index is a partition's copy, named <index>_pNN.
	if errors.As(err, &pe) && pe.Code == pgerrcode.UniqueViolation && strings.HasPrefix(pe.ConstraintName, "memories_broadcast_delivery_key") {
		return nil, errRetryDelivery
	}
	return fresh, err
}

// readDeliveries reads the deliveries of b that the myses of done already hold.
func readDeliveries(ctx context.Context, tx pgx.Tx, b memory.Broadcast, done []string) ([]memory.Memory, error) {
	rows, err := tx.Query(ctx, `SELECT `+memCols+` FROM memories m WHERE m.broadcast_id = $2 AND m.mysis_id = ANY($1::uuid[])`, done, b.ID)
	if err != nil {
		return nil, dbErr(err, "deliver broadcast")
	}
	return collectMemories(rows, "deliver broadcast")
}
