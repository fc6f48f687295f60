package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// AppendMemoriesIf is AppendMemories with a condition decided in the same transaction, under the mysis lock that
// serialises every writer of the mysis: when a commander prompt arrived after c.IfNoPromptAfterSeq it writes
// nothing and fails with Conflict, reason memory.ReasonPromptArrived; c.State is applied with the rows (its Expected
// failing the whole call with a plain Conflict). Both checks see every row committed before the lock was granted,
// so a prompt delivered concurrently either lands before (and refuses the append) or after the appended rows.
// A full retry returns the stored rows without checking anything, so the call stays idempotent.
func (s *Store) AppendMemoriesIf(ctx context.Context, mysisID string, ms []memory.NewMemory, c memory.AppendCondition) ([]memory.Memory, error) {
	return s.appendMemories(ctx, mysisID, ms, func(ctx context.Context, tx guardConn, id string) error {
		if c.IfNoPromptAfterSeq != nil {
			if err := promptAfter(ctx, tx, id, *c.IfNoPromptAfterSeq); err != nil {
				return err
			}
		}
		if c.State != nil {
			return setStateTx(ctx, tx, id, *c.State)
		}
		return nil
	})
}

// promptAfter fails with ReasonPromptArrived when the mysis has a direct or broadcast user memory after seq.
func promptAfter(ctx context.Context, tx guardConn, id string, seq int64) error {
	var at int64
	err := tx.QueryRow(ctx, `
		SELECT m.seq FROM memories m
		WHERE m.mysis_id = $1 AND m.seq > $2 AND m.role = $3 AND m.source IN ($4, $5)
		ORDER BY m.seq DESC LIMIT 1`,
		id, seq, int16(memory.RoleUser), int16(memory.SourceDirect), int16(memory.SourceBroadcast)).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return dbErr(err, "append memories")
	}
	return &errs.Error{Kind: errs.Conflict, Reason: memory.ReasonPromptArrived,
		Msg: fmt.Sprintf("mysis %s: a prompt arrived at seq %d, after seq %d: nothing appended", id, at, seq)}
}

// setStateTx applies a state change to the mysis row the transaction has locked.
func setStateTx(ctx context.Context, tx guardConn, id string, c memory.StateChange) error {
	var cur memory.State
	err := tx.QueryRow(ctx, `SELECT state FROM myses WHERE id = $1`, id).Scan(&cur)
	if err != nil {
		return dbErr(err, "append memories")
	}
	if c.Expected != memory.StateAny && cur != c.Expected {
		return errs.Conflictf("mysis %s is %s, not %s: nothing appended, state unchanged", id, cur, c.Expected)
	}
	_, err = tx.Exec(ctx, `
		UPDATE myses y SET state = $2, state_reason = $3, encouragement_count = coalesce($4, y.encouragement_count),
			updated_at = now()
		WHERE y.id = $1`,
		id, string(c.State), c.Reason, c.EncouragementCount)
	if err != nil {
		return dbErr(err, "append memories")
	}
	return nil
}
