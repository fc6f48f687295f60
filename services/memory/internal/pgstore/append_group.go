package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// runAppendGroup runs a group of appends (group.go) in one transaction and gives each call its own result. A call
// whose mysis does not exist, whose tool calls cannot be stored or whose condition fails gets its own error and
// writes nothing; the others commit.
//
// If the group's transaction fails in the database (a row that breaks a constraint the Service does not check, a
// deadlock, a lost connection), nothing of it is stored and its calls run again one by one, each in a transaction
// of its own: one bad call cannot fail its neighbours, and each call gets the error its own transaction meets.
func (s *Store) runAppendGroup(ctx context.Context, calls []*appendCall) {
	err := s.appendGroup(ctx, calls)
	if err == nil {
		return
	}
	if len(calls) == 1 {
		calls[0].res = appendResult{err: err}
		return
	}
	for _, c := range calls {
		s.groups.runGroup(c.ctx, []*appendCall{c})
	}
}

// appendGroup runs the group's transaction on one pooled connection and rolls it back on any failure, so the
// connection returns to the pool idle.
func (s *Store) appendGroup(ctx context.Context, calls []*appendCall) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return dbErr(err, "append memories")
	}
	defer conn.Release()
	err = s.groupOn(ctx, conn, calls)
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return err
}

// groupOn is the group's transaction in two round trips: BEGIN travels in the lock batch (lockGroup), COMMIT at
// the end of the write batch (groupWrite.send). Between them every call is planned in Go from what the lock batch
// read.
func (s *Store) groupOn(ctx context.Context, conn *pgxpool.Conn, calls []*appendCall) error {
	locked, err := lockGroup(ctx, conn, calls)
	if err != nil {
		return err
	}
	w := groupWrite{asyncFTS: s.asyncFTS}
	for _, c := range calls {
		c.res = w.plan(c, locked)
	}
	return w.send(ctx, conn)
}

// lockMysesSQL locks the group's mysis rows in id order — the order RecordBroadcast locks in too — so two
// transactions that lock several myses cannot deadlock on them. FOR NO KEY UPDATE serialises every writer of a
// mysis: seq numbers are taken from last_seq under the lock, gapless and strictly increasing however many
// appenders race.
const lockMysesSQL = `SELECT id::text, last_seq, current_turn, state FROM myses WHERE id = ANY($1::uuid[])
	ORDER BY id FOR NO KEY UPDATE`

// genericPlansSQL makes the transaction's statements run on their cached generic plans. The hot statements (an
// append's, the compose window) name their mysis by parameter, and on the partitioned memories table a generic plan
// keeps all 16 partitions, pruned when it starts; Postgres prices that plan above a custom one, so it planned every
// such statement afresh on every call — ~30 % of the server's CPU on 1-2-row appends, 1.4–1.6 ms per compose window
// (docs/benchmarks/2026-11-25-small-appends-generic-plans.md;
// docs/benchmarks/2026-11-25-composecontext-derived-carry.md, "The window statement on its generic plan"). Pruning at
// executor start costs microseconds.
const genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`

// queueGenericTx queues BEGIN and genericPlansSQL at the head of a batch: the statements queued after them run in
// one transaction on their generic plans, in the batch's one round trip (the caller queues the COMMIT).
func queueGenericTx(b *pgx.Batch) {
	b.Queue(`BEGIN`)
	b.Queue(genericPlansSQL)
}

// readGenericTx reads the results of what queueGenericTx queued; what names the operation in errors.
func readGenericTx(br pgx.BatchResults, what string) error {
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return dbErr(err, what)
		}
	}
	return nil
}

// idempotentRowsSQL reads the rows stored under the group's idempotency keys, each (mysis, key) pair probing its own
// mysis's partition (a nested loop whose inner scan is pruned per pair; two arrays compared with ANY could not be
// pruned and would probe every partition for every combination).
const idempotentRowsSQL = `SELECT ` + memCols + ` FROM unnest($1::uuid[], $2::text[]) AS k(mysis_id, idempotency_key)
	JOIN memories m ON m.mysis_id = k.mysis_id AND m.idempotency_key = k.idempotency_key`

// promptAfterSQL finds the newest direct or broadcast user memory of a mysis after a seq (a conditional append's
// IfNoPromptAfterSeq).
const promptAfterSQL = `
SELECT m.seq FROM memories m
WHERE m.mysis_id = $1 AND m.seq > $2 AND m.role = $3 AND m.source IN ($4, $5)
ORDER BY m.seq DESC LIMIT 1`

// lockedMysis is what a group reads for one of its myses under the row lock: what planAppend needs, and what the
// call's condition is decided on.
type lockedMysis struct {
	appendState
	state    memory.State
	promptAt int64 // the newest prompt after the condition's seq; 0: none
}

// lockGroup locks the group's myses and reads, in the same pipelined batch, the rows already stored under the
// calls' idempotency keys, the newest stored tool calls of each mysis with a tool result that comes without its
// call's arguments and without that call earlier in its batch, and the prompts the conditions ask about. The
// statements run one after another, so the reads' snapshots are taken after the locks are granted and see what a
// concurrent retry or prompt committed meanwhile.
func lockGroup(ctx context.Context, conn *pgxpool.Conn, calls []*appendCall) (map[string]*lockedMysis, error) {
	ids := make([]string, len(calls)) // distinct: a group holds one call per mysis
	var keyMyses, keys []string
	for i, c := range calls {
		ids[i] = c.mysisID
		for _, m := range c.ms {
			if m.IdempotencyKey != "" {
				keyMyses, keys = append(keyMyses, c.mysisID), append(keys, m.IdempotencyKey)
			}
		}
	}
	b := &pgx.Batch{}
	queueGenericTx(b)
	b.Queue(lockMysesSQL, ids)
	if len(keys) > 0 {
		b.Queue(idempotentRowsSQL, keyMyses, keys)
	}
	for _, c := range calls {
		if needsStoredCalls(c.ms) {
			b.Queue(lastCallsSQL, c.mysisID, memory.CallLookback)
		}
		if c.cond != nil && c.cond.IfNoPromptAfterSeq != nil {
			b.Queue(promptAfterSQL, c.mysisID, *c.cond.IfNoPromptAfterSeq, int16(memory.RoleUser),
				int16(memory.SourceDirect), int16(memory.SourceBroadcast))
		}
	}
	br := conn.SendBatch(ctx, b)
	locked, err := readLocked(br, calls, len(keys) > 0)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = dbErr(cerr, "append memories")
	}
	return locked, err
}

// readLocked reads lockGroup's batch results. A mysis that does not exist is missing from the map.
func readLocked(br pgx.BatchResults, calls []*appendCall, keys bool) (map[string]*lockedMysis, error) {
	if err := readGenericTx(br, "append memories"); err != nil {
		return nil, err
	}
	locked, err := readLocks(br)
	if err != nil {
		return nil, err
	}
	if keys {
		rows, err := br.Query()
		if err != nil {
			return nil, dbErr(err, "append memories")
		}
		found, err := collectMemories(rows, "append memories")
		if err != nil {
			return nil, err
		}
		for _, m := range found {
			if l := locked[m.MysisID]; l != nil {
				l.existing[m.IdempotencyKey] = m
			}
		}
	}
	for _, c := range calls {
		if err := readCallLookups(br, c, locked[c.mysisID]); err != nil {
			return nil, err
		}
	}
	return locked, nil
}

// readLocks reads the locked mysis rows.
func readLocks(br pgx.BatchResults) (map[string]*lockedMysis, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, dbErr(err, "append memories")
	}
	defer rows.Close()
	locked := map[string]*lockedMysis{}
	for rows.Next() {
		var id string
		l := &lockedMysis{appendState: appendState{existing: map[string]memory.Memory{}}}
		if err := rows.Scan(&id, &l.lastSeq, &l.turn, &l.state); err != nil {
			return nil, dbErr(err, "append memories")
		}
		locked[id] = l
	}
	return locked, dbErr(rows.Err(), "append memories")
}

// readCallLookups reads the stored tool calls and the prompt check lockGroup queued for c into l (nil: the mysis
// does not exist, the results are read and dropped).
func readCallLookups(br pgx.BatchResults, c *appendCall, l *lockedMysis) error {
	if l == nil {
		l = &lockedMysis{}
	}
	if needsStoredCalls(c.ms) {
		var raw []byte
		if err := br.QueryRow().Scan(&raw); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return dbErr(err, "append memories")
		}
		var err error
		if l.storedCalls, err = fromDBToolCalls(raw); err != nil {
			return err
		}
	}
	if c.cond != nil && c.cond.IfNoPromptAfterSeq != nil {
		if err := br.QueryRow().Scan(&l.promptAt); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return dbErr(err, "append memories")
		}
	}
	return nil
}

// groupWrite collects what a group writes: the new rows of every call that passed, the counters (and state
// changes) of their myses, and the LLM calls that travel with the rows.
type groupWrite struct {
	asyncFTS bool
	ins      insertBatch
	myses    mysesUpdate
	records  []callRecord
}

// callRecord is one call's LLM call accounting (recordCallsSQL).
type callRecord struct {
	mysisID string
	calls   []memory.LlmCall
	seqs    []int64
}

// plan plans call c against its locked mysis and adds what it writes to w, or returns the call's own error (then
// it writes nothing).
func (w *groupWrite) plan(c *appendCall, locked map[string]*lockedMysis) appendResult {
	l, ok := locked[c.mysisID]
	if !ok {
		return appendResult{err: errMysisNotFound(c.mysisID)}
	}
	st := l.appendState // planAppend advances st's counters, not the locked row's
	out, ins, err := planAppend(c.mysisID, c.ms, &st)
	if err != nil {
		return appendResult{err: err}
	}
	// A full retry returns the stored rows without checking the condition, so the call stays idempotent.
	if len(ins.seq) > 0 {
		if err := checkCondition(c, l); err != nil {
			return appendResult{err: err}
		}
		w.ins.merge(&ins)
		w.myses.add(c.mysisID, st.lastSeq, st.turn, c.cond, hasFinalAnswer(ins.dst))
	}
	// A full retry still records an LLM call that is not stored yet: a replica that raced for the same reply paid
	// for its call.
	if calls, seqs := callsOf(c.ms, out); len(calls) > 0 {
		w.records = append(w.records, callRecord{mysisID: c.mysisID, calls: calls, seqs: seqs})
	}
	return appendResult{out: out}
}

// checkCondition decides c's condition against its locked mysis (see Store.AppendMemoriesIf).
func checkCondition(c *appendCall, l *lockedMysis) error {
	if c.cond == nil {
		return nil
	}
	if p := c.cond.IfNoPromptAfterSeq; p != nil && l.promptAt > 0 {
		return &errs.Error{Kind: errs.Conflict, Reason: memory.ReasonPromptArrived,
			Msg: fmt.Sprintf("mysis %s: a prompt arrived at seq %d, after seq %d: nothing appended", c.mysisID, l.promptAt, *p)}
	}
	if sc := c.cond.State; sc != nil && sc.Expected != memory.StateAny && l.state != sc.Expected {
		return errs.Conflictf("mysis %s is %s, not %s: nothing appended, state unchanged", c.mysisID, l.state, sc.Expected)
	}
	return nil
}

// send runs the write batch — the rows, the myses' counters, the LLM calls, COMMIT — and fills in the ids and
// creation times of the inserted rows.
func (w *groupWrite) send(ctx context.Context, conn *pgxpool.Conn) error {
	b := &pgx.Batch{}
	rows := len(w.ins.seq) > 0
	if rows {
		b.Queue(appendSQL, w.ins.mysis, w.ins.seq, w.ins.turn, w.ins.role, w.ins.source, w.ins.sender, w.ins.content,
			w.ins.reasoning, w.ins.toolCalls, w.ins.toolCallID, w.ins.toolName, w.ins.key, w.ins.callArgs,
			w.ins.callKey, w.asyncFTS)
		b.Queue(updateMysesSQL, w.myses.args()...)
	}
	// Each statement locks its mysis's swarm_spend shard rows until COMMIT: in shard order, so two transactions
	// that record calls of several myses cannot deadlock on them.
	slices.SortFunc(w.records, func(a, b callRecord) int {
		return cmp.Or(cmp.Compare(swarmShard(a.mysisID), swarmShard(b.mysisID)), cmp.Compare(a.mysisID, b.mysisID))
	})
	for _, r := range w.records {
		b.Queue(recordCallsSQL, recordCallsArgs(r.mysisID, r.calls, r.seqs)...)
	}
	b.Queue(`COMMIT`)
	br := conn.SendBatch(ctx, b)
	execs := b.Len()
	var err error
	if rows {
		err = w.ins.readReturning(br)
		execs--
	}
	for i := 0; err == nil && i < execs; i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return dbErr(err, "append memories")
}

// updateMysesSQL advances the counters of a group's myses and applies the state changes of their conditions; a
// NULL state leaves state, reason and encouragement count as they are. A final answer among the rows clears
// reply_discarded (see migration 00011).
const updateMysesSQL = `
UPDATE myses y SET last_seq = u.last_seq, current_turn = u.turn,
	state = coalesce(u.state, y.state),
	state_reason = CASE WHEN u.state IS NULL THEN y.state_reason ELSE u.reason END,
	encouragement_count = coalesce(u.encouragement, y.encouragement_count),
	reply_discarded = y.reply_discarded AND NOT u.final,
	updated_at = now()
FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::int[], $7::boolean[])
	AS u(id, last_seq, turn, state, reason, encouragement, final)
WHERE y.id = u.id`

// mysesUpdate holds updateMysesSQL's columns.
type mysesUpdate struct {
	id, state, reason []*string
	lastSeq, turn     []int64
	encouragement     []*int32
	final             []bool
}

// hasFinalAnswer reports whether rows hold a final answer: an assistant message without tool calls.
func hasFinalAnswer(rows []*memory.Memory) bool {
	for _, m := range rows {
		if m.Role == memory.RoleAssistant && len(m.ToolCalls) == 0 {
			return true
		}
	}
	return false
}

func (u *mysesUpdate) add(id string, lastSeq, turn int64, c *memory.AppendCondition, final bool) {
	u.id = append(u.id, &id)
	u.final = append(u.final, final)
	u.lastSeq, u.turn = append(u.lastSeq, lastSeq), append(u.turn, turn)
	var state, reason *string
	var enc *int32
	if c != nil && c.State != nil {
		st := string(c.State.State)
		state, reason, enc = &st, &c.State.Reason, c.State.EncouragementCount
	}
	u.state, u.reason, u.encouragement = append(u.state, state), append(u.reason, reason), append(u.encouragement, enc)
}

func (u *mysesUpdate) args() []any {
	return []any{u.id, u.lastSeq, u.turn, u.state, u.reason, u.encouragement, u.final}
}
