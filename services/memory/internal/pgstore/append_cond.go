package pgstore

import (
	"context"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// AppendMemoriesIf is AppendMemories with a condition decided in the same transaction, under the mysis lock that
// serialises every writer of the mysis: when a commander prompt arrived after c.IfNoPromptAfterSeq it writes
// nothing and fails with Conflict, reason memory.ReasonPromptArrived; c.State is applied with the rows (its Expected
// failing the whole call with a plain Conflict). Both checks see every row committed before the lock was granted,
// so a prompt delivered concurrently either lands before (and refuses the append) or after the appended rows.
// A full retry returns the stored rows without checking anything, so the call stays idempotent.
//
// The condition is decided in the lock batch (the prompt lookup runs after the lock, the state comes with the locked
// row) and the state change travels with the counters in the write batch, so a conditional append takes the same two
// round trips as a plain one and joins groups like one (group.go): a call whose condition fails gets its own error,
// the others of its group commit.
func (s *Store) AppendMemoriesIf(ctx context.Context, mysisID string, ms []memory.NewMemory, c memory.AppendCondition) ([]memory.Memory, error) {
	return s.groups.submit(&appendCall{ctx: ctx, mysisID: mysisID, ms: ms, cond: &c})
}
