package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// AppendMemories appends a batch to one mysis atomically and returns the stored rows in request order.
//
// The mysis row is locked first (FOR NO KEY UPDATE), which serialises every writer of that mysis: seq numbers are
// taken from myses.last_seq under the lock, so they are gapless and strictly increasing however many appenders
// race, and the idempotency-key lookup that follows sees every row committed before the lock was granted, so a
// retry returns the rows stored the first time instead of writing them again.
//
// Two round trips on one connection: BEGIN travels in the lock batch (lockForAppend) and COMMIT at the end of the
// write batch (writeAppend), so a 1-row append pays two network and scheduling waits, not four. Any failure rolls
// the transaction back before the connection returns to the pool.
func (s *Store) AppendMemories(ctx context.Context, mysisID string, ms []memory.NewMemory) ([]memory.Memory, error) {
	return s.appendMemories(ctx, mysisID, ms, nil)
}

// appendGuard runs inside an append's transaction, after the mysis row is locked and before anything is written
// (never for a full retry); an error aborts the append. See AppendMemoriesIf (append_cond.go). It costs the append
// one more round trip.
type appendGuard func(ctx context.Context, q guardConn, mysisID string) error

// guardConn is what a guard may run statements on: the append's connection, inside its transaction.
type guardConn interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (s *Store) appendMemories(ctx context.Context, mysisID string, ms []memory.NewMemory, guard appendGuard) ([]memory.Memory, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, dbErr(err, "append memories")
	}
	defer conn.Release()
	out, err := s.appendOn(ctx, conn, mysisID, ms, guard)
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return out, err
}

// appendOn runs AppendMemories' transaction on conn, from the BEGIN in the lock batch to the COMMIT in the write
// batch; on an error the caller rolls back.
func (s *Store) appendOn(ctx context.Context, conn *pgxpool.Conn, mysisID string, ms []memory.NewMemory, guard appendGuard) ([]memory.Memory, error) {
	st, err := lockForAppend(ctx, conn, mysisID, ms)
	if err != nil {
		return nil, err
	}
	out, ins, err := planAppend(mysisID, ms, &st)
	if err != nil {
		return nil, err
	}
	if guard != nil && len(ins.idx) > 0 {
		if err := guard(ctx, conn, mysisID); err != nil {
			return nil, err
		}
	}
	// LLM call accounting travels in the same transaction (and the same batch): no extra round trip.
	calls, callSeqs := callsOf(ms, out)
	b := &pgx.Batch{}
	if len(ins.idx) == 0 {
		// A full retry: nothing to write, unless a call that is not yet stored (a replica that raced for the same
		// reply still paid for its call) came with it.
		if len(calls) > 0 {
			b.Queue(recordCallsSQL, recordCallsArgs(mysisID, calls, callSeqs)...)
		}
		b.Queue(`COMMIT`)
		return out, closeBatch(conn.SendBatch(ctx, b), b.Len())
	}
	b.Queue(appendSQL, mysisID, ins.seq, ins.turn, ins.role, ins.source, ins.sender, ins.content, ins.reasoning,
		ins.toolCalls, ins.toolCallID, ins.toolName, ins.key, ins.callArgs, ins.callKey, s.asyncFTS)
	b.Queue(`UPDATE myses SET last_seq = $2, current_turn = $3, updated_at = now() WHERE id = $1`, mysisID, st.lastSeq, st.turn)
	if len(calls) > 0 {
		b.Queue(recordCallsSQL, recordCallsArgs(mysisID, calls, callSeqs)...)
	}
	b.Queue(`COMMIT`)
	if err := writeAppend(conn.SendBatch(ctx, b), &ins, out, b.Len()-1); err != nil {
		return nil, err
	}
	return out, nil
}

// closeBatch runs the n statements of a batch that returns no rows and closes it.
func closeBatch(br pgx.BatchResults, n int) error {
	var err error
	for range n {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return dbErr(err, "append memories")
}

// appendSQL inserts a batch's new rows from arrays. The content's full-text vector is computed here for every row
// except tool results when $15 (asynchronous indexing) is set: those are left NULL for the background indexer
// (IndexPending), which takes the most expensive part of a write — tool results are most of the indexed text — off
// the append's critical path.
const appendSQL = `
INSERT INTO memories (mysis_id, seq, turn, role, source, sender_id, content, reasoning, tool_calls,
	tool_call_id, tool_name, idempotency_key, call_arguments_json, call_key, content_tsv)
SELECT $1, u.seq, u.turn, u.role, u.source, u.sender_id, u.content, u.reasoning, u.tool_calls::jsonb,
	u.tool_call_id, u.tool_name, u.idem, u.call_args, u.call_key,
	CASE WHEN u.role = 4 AND $15::boolean THEN NULL ELSE to_tsvector('english', zoea_fts_text(u.content)) END
FROM unnest($2::bigint[], $3::bigint[], $4::smallint[], $5::smallint[], $6::text[], $7::text[], $8::text[],
	$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
	AS u(seq, turn, role, source, sender_id, content, reasoning, tool_calls, tool_call_id, tool_name, idem,
		call_args, call_key)
RETURNING seq, id, created_at`

// appendState is what an append reads under the mysis lock.
type appendState struct {
	lastSeq, turn int64
	existing      map[string]memory.Memory // rows stored before under the batch's idempotency keys
	storedCalls   []memory.ToolCall        // the newest stored assistant tool calls, when the batch needs them
}

// lockForAppend locks the mysis row and reads, in the same pipelined batch, the rows already stored under the
// batch's idempotency keys and — when a tool result of the batch comes without its call's arguments and without
// that call earlier in the batch — the newest stored tool calls. The statements still run one after another, so
// the lookups' snapshots are taken after the lock is granted and see what a concurrent retry committed meanwhile.
func lockForAppend(ctx context.Context, conn *pgxpool.Conn, mysisID string, ms []memory.NewMemory) (appendState, error) {
	st := appendState{existing: map[string]memory.Memory{}}
	var keys []string
	for _, m := range ms {
		if m.IdempotencyKey != "" {
			keys = append(keys, m.IdempotencyKey)
		}
	}
	lookupCalls := needsStoredCalls(ms)
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT last_seq, current_turn FROM myses WHERE id = $1 FOR NO KEY UPDATE`, mysisID)
	if len(keys) > 0 {
		b.Queue(`SELECT `+memCols+` FROM memories m WHERE m.mysis_id = $1 AND m.idempotency_key = ANY($2)`, mysisID, keys)
	}
	if lookupCalls {
		b.Queue(lastCallsSQL, mysisID, memory.CallLookback)
	}
	br := conn.SendBatch(ctx, b)
	err := readAppendState(br, mysisID, len(keys) > 0, lookupCalls, &st)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = dbErr(cerr, "append memories")
	}
	return st, err
}

// readAppendState reads lockForAppend's batch results into st.
func readAppendState(br pgx.BatchResults, mysisID string, keys, calls bool, st *appendState) error {
	if _, err := br.Exec(); err != nil { // BEGIN
		return dbErr(err, "append memories")
	}
	err := br.QueryRow().Scan(&st.lastSeq, &st.turn)
	if errors.Is(err, pgx.ErrNoRows) {
		return errMysisNotFound(mysisID)
	}
	if err != nil {
		return dbErr(err, "append memories")
	}
	if keys {
		rows, err := br.Query()
		if err != nil {
			return dbErr(err, "append memories")
		}
		found, err := collectMemories(rows, "append memories")
		if err != nil {
			return err
		}
		for _, m := range found {
			st.existing[m.IdempotencyKey] = m
		}
	}
	if calls {
		var raw []byte
		if err := br.QueryRow().Scan(&raw); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return dbErr(err, "append memories")
		}
		if st.storedCalls, err = fromDBToolCalls(raw); err != nil {
			return err
		}
	}
	return nil
}

// planAppend assigns seq and turn to the batch's new rows (advancing st's counters) and returns every row of the
// batch as it will be stored — a retried row as stored the first time — and the new rows as insert arrays.
func planAppend(mysisID string, ms []memory.NewMemory, st *appendState) ([]memory.Memory, insertBatch, error) {
	cArgs, cKeys := callArgs(ms, st.storedCalls)
	out := make([]memory.Memory, len(ms))
	var ins insertBatch
	for i, n := range ms {
		if m, ok := st.existing[n.IdempotencyKey]; ok && n.IdempotencyKey != "" {
			out[i] = m
			continue
		}
		st.lastSeq++
		if memory.OpensTurn(n.Role, n.Source) {
			st.turn++
		}
		tcs, err := toDBToolCalls(n.ToolCalls)
		if err != nil {
			return nil, ins, err
		}
		ins.add(i, st.lastSeq, st.turn, n, tcs, cArgs[i], cKeys[i])
		out[i] = memory.Memory{
			MysisID: mysisID, Seq: st.lastSeq, Turn: st.turn, Role: n.Role, Source: n.Source, SenderID: n.SenderID,
			Content: n.Content, Reasoning: n.Reasoning, ToolCalls: n.ToolCalls, ToolCallID: n.ToolCallID,
			ToolName: n.ToolName, IdempotencyKey: n.IdempotencyKey, CallArguments: deref(cArgs[i]),
			CallKey: deref(cKeys[i]),
		}
	}
	return out, ins, nil
}

// writeAppend reads the results of the write batch (the insert, then execs statements: counters, optional call
// accounting, COMMIT), filling in the ids and creation times of the inserted rows, and closes it.
func writeAppend(br pgx.BatchResults, ins *insertBatch, out []memory.Memory, execs int) error {
	err := func() error {
		rows, err := br.Query()
		if err != nil {
			return dbErr(err, "append memories")
		}
		bySeq := make(map[int64]int, len(ins.idx))
		for j, i := range ins.idx {
			bySeq[ins.seq[j]] = i
		}
		for rows.Next() {
			var seq int64
			var m memory.Memory
			if err := rows.Scan(&seq, &m.ID, &m.CreatedAt); err != nil {
				rows.Close()
				return dbErr(err, "append memories")
			}
			i := bySeq[seq]
			out[i].ID, out[i].CreatedAt = m.ID, m.CreatedAt
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return dbErr(err, "append memories")
		}
		for range execs {
			if _, err := br.Exec(); err != nil {
				return dbErr(err, "append memories")
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = dbErr(cerr, "append memories")
	}
	return err
}

// insertBatch holds the columns of the rows to insert, as arrays for one unnest() INSERT.
type insertBatch struct {
	idx                                              []int
	seq, turn                                        []int64
	role, source                                     []int16
	sender, content, reasoning, toolCallID, toolName []string
	toolCalls, key, callArgs, callKey                []*string
}

func (b *insertBatch) add(i int, seq, turn int64, n memory.NewMemory, toolCalls, callArgs, callKey *string) {
	b.idx = append(b.idx, i)
	b.seq = append(b.seq, seq)
	b.turn = append(b.turn, turn)
	b.role = append(b.role, int16(n.Role))
	b.source = append(b.source, int16(n.Source))
	b.sender = append(b.sender, n.SenderID)
	b.content = append(b.content, n.Content)
	b.reasoning = append(b.reasoning, n.Reasoning)
	b.toolCalls = append(b.toolCalls, toolCalls)
	b.toolCallID = append(b.toolCallID, n.ToolCallID)
	b.toolName = append(b.toolName, n.ToolName)
	b.key = append(b.key, nullable(n.IdempotencyKey))
	b.callArgs = append(b.callArgs, callArgs)
	b.callKey = append(b.callKey, callKey)
}

// ListRecentMemories returns the newest limit memories of a mysis, oldest first.
func (s *Store) ListRecentMemories(ctx context.Context, mysisID string, limit int) ([]memory.Memory, error) {
	// Bounded by bytes as well as rows (memory.MaxResponseBytes): the newest rows whose running size stays within
	// the budget, and always the newest one. Sizes come from octet_length, which reads the stored length without
	// decompressing large values.
	rows, err := s.pool.Query(ctx, `
		SELECT * FROM (SELECT `+memCols+` FROM memories m WHERE m.mysis_id = $1 AND m.seq >= (
			SELECT coalesce(min(w.seq), 0) FROM (
				SELECT x.seq, sum(x.size) OVER (ORDER BY x.seq DESC) AS upto, row_number() OVER (ORDER BY x.seq DESC) AS n
				FROM (SELECT m2.seq, `+rowBytesSQL+` AS size
					FROM memories m2 WHERE m2.mysis_id = $1 ORDER BY m2.seq DESC LIMIT $2) x
			) w WHERE w.upto <= $3 OR w.n = 1
		) ORDER BY m.seq DESC LIMIT $2) w
		ORDER BY seq`, mysisID, limit, memory.MaxResponseBytes)
	if err != nil {
		return nil, dbErr(err, "list recent memories")
	}
	out, err := collectMemories(rows, "list recent memories")
	if err == nil && len(out) == 0 {
		err = s.mustExist(ctx, mysisID)
	}
	return out, err
}

// ListMemoriesRange returns memories with fromSeq <= seq <= toSeq (toSeq 0: no upper bound), oldest first.
func (s *Store) ListMemoriesRange(ctx context.Context, mysisID string, fromSeq, toSeq int64, limit int) ([]memory.Memory, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+memCols+` FROM memories m
		WHERE m.mysis_id = $1 AND m.seq >= $2 AND ($3::bigint = 0 OR m.seq <= $3::bigint)
		ORDER BY m.seq LIMIT $4`, mysisID, fromSeq, toSeq, limit)
	if err != nil {
		return nil, dbErr(err, "list memories range")
	}
	out, err := collectMemories(rows, "list memories range")
	if err == nil && len(out) == 0 {
		err = s.mustExist(ctx, mysisID)
	}
	return out, err
}

// GetMemory returns one memory of one mysis.
func (s *Store) GetMemory(ctx context.Context, mysisID string, id int64) (memory.Memory, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+memCols+` FROM memories m WHERE m.id = $1 AND m.mysis_id = $2`, id, mysisID)
	if err != nil {
		return memory.Memory{}, dbErr(err, "get memory")
	}
	out, err := collectMemories(rows, "get memory")
	if err != nil {
		return memory.Memory{}, err
	}
	if len(out) == 0 {
		return memory.Memory{}, errs.NotFoundf("memory %d of mysis %s not found", id, mysisID)
	}
	return out[0], nil
}

// mustExist returns NotFound when the mysis does not exist; an empty result for an unknown mysis must not look
// like an empty history.
func (s *Store) mustExist(ctx context.Context, mysisID string) error {
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM myses WHERE id = $1)`, mysisID).Scan(&ok); err != nil {
		return dbErr(err, "get mysis")
	}
	if !ok {
		return errMysisNotFound(mysisID)
	}
	return nil
}

// rowBytesSQL is a memory row's text size as memory.Memory.Bytes counts it, for byte-bounded reads of memories m2.
// The compose window can bound its rows with the same expression (or with memory.KeepNewestWithin in Go).
const rowBytesSQL = `octet_length(CASE WHEN m2.broadcast_id IS NULL THEN m2.content
	ELSE coalesce((SELECT bc.content FROM broadcasts bc WHERE bc.id = m2.broadcast_id), m2.content) END)
	+ octet_length(m2.reasoning) + coalesce((
	SELECT sum(octet_length(c->>'id') + octet_length(c->>'name') + octet_length(c->>'arguments'))
	FROM jsonb_array_elements(m2.tool_calls) c), 0)`
