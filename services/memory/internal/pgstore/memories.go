package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// AppendMemories appends a batch to one mysis atomically and returns the stored rows in request order.
//
// The mysis row is locked first (FOR NO KEY UPDATE), which serialises every writer of that mysis: seq numbers are
// taken from myses.last_seq under the lock, so they are gapless and strictly increasing however many appenders
// race, and the idempotency-key lookup that follows sees every row committed before the lock was granted, so a
// retry returns the rows stored the first time instead of writing them again.
func (s *Store) AppendMemories(ctx context.Context, mysisID string, ms []memory.NewMemory) ([]memory.Memory, error) {
	return s.appendMemories(ctx, mysisID, ms, nil)
}

// appendGuard runs inside an append's transaction, after the mysis row is locked and before anything is written
// (never for a full retry); an error aborts the append. See AppendMemoriesIf (append_cond.go).
type appendGuard func(ctx context.Context, tx pgx.Tx, mysisID string) error

func (s *Store) appendMemories(ctx context.Context, mysisID string, ms []memory.NewMemory, guard appendGuard) ([]memory.Memory, error) {
	mysisID, err := memory.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if err := memory.ValidateNewMemories(ms); err != nil {
		return nil, err
	}
	var keys []string
	for _, m := range ms {
		if m.IdempotencyKey != "" {
			keys = append(keys, m.IdempotencyKey)
		}
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, dbErr(err, "append memories")
	}
	defer rollback(ctx, tx)

	// The lock and the key lookup travel in one pipelined batch; they still run as two statements, so the lookup's
	// snapshot is taken after the lock is granted and sees what a concurrent retry committed meanwhile.
	var lastSeq, turn int64
	existing := map[string]memory.Memory{}
	lock := &pgx.Batch{}
	lock.Queue(`SELECT last_seq, current_turn FROM myses WHERE id = $1 FOR NO KEY UPDATE`, mysisID)
	if len(keys) > 0 {
		lock.Queue(`SELECT `+memCols+` FROM memories m WHERE m.mysis_id = $1 AND m.idempotency_key = ANY($2)`, mysisID, keys)
	}
	// A tool result sent without its call's arguments (an older client) takes them from the assistant memory that
	// made the call; only when that memory is not in the batch is it read, in the same round trip as the lock.
	lookupCalls := needsStoredCalls(ms)
	if lookupCalls {
		lock.Queue(lastCallsSQL, mysisID, memory.CallLookback)
	}
	br := tx.SendBatch(ctx, lock)
	err = br.QueryRow().Scan(&lastSeq, &turn)
	if errors.Is(err, pgx.ErrNoRows) {
		_ = br.Close()
		return nil, errMysisNotFound(mysisID)
	}
	if err != nil {
		_ = br.Close()
		return nil, dbErr(err, "append memories")
	}
	if len(keys) > 0 {
		rows, err := br.Query()
		if err != nil {
			_ = br.Close()
			return nil, dbErr(err, "append memories")
		}
		found, err := collectMemories(rows, "append memories")
		if err != nil {
			_ = br.Close()
			return nil, err
		}
		for _, m := range found {
			existing[m.IdempotencyKey] = m
		}
	}
	var storedCalls []memory.ToolCall
	if lookupCalls {
		var raw []byte
		if err := br.QueryRow().Scan(&raw); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			_ = br.Close()
			return nil, dbErr(err, "append memories")
		}
		if storedCalls, err = fromDBToolCalls(raw); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	cArgs, cKeys := callArgs(ms, storedCalls)
	if err := br.Close(); err != nil {
		return nil, dbErr(err, "append memories")
	}

	out := make([]memory.Memory, len(ms))
	var ins insertBatch
	for i, n := range ms {
		if m, ok := existing[n.IdempotencyKey]; ok && n.IdempotencyKey != "" {
			out[i] = m
			continue
		}
		lastSeq++
		if memory.OpensTurn(n.Role, n.Source) {
			turn++
		}
		tcs, err := toDBToolCalls(n.ToolCalls)
		if err != nil {
			return nil, err
		}
		ins.add(i, lastSeq, turn, n, tcs, cArgs[i], cKeys[i])
		out[i] = memory.Memory{
			MysisID: mysisID, Seq: lastSeq, Turn: turn, Role: n.Role, Source: n.Source, SenderID: n.SenderID,
			Content: n.Content, Reasoning: n.Reasoning, ToolCalls: n.ToolCalls, ToolCallID: n.ToolCallID,
			ToolName: n.ToolName, IdempotencyKey: n.IdempotencyKey, CallArguments: deref(cArgs[i]),
			CallKey: deref(cKeys[i]),
		}
	}
	// LLM call accounting travels in the same transaction (and, below, the same batch): no extra round trip.
	calls, callSeqs := callsOf(ms, out)
	if len(ins.idx) == 0 {
		// A full retry: nothing to write, unless a call that is not yet stored (a replica that raced for the same
		// reply still paid for its call) came with it.
		if len(calls) > 0 {
			if _, err := tx.Exec(ctx, recordCallsSQL, recordCallsArgs(mysisID, calls, callSeqs)...); err != nil {
				return nil, dbErr(err, "append memories")
			}
		}
		return out, tx.Commit(ctx)
	}
	if guard != nil {
		if err := guard(ctx, tx, mysisID); err != nil {
			return nil, err
		}
	}

	b := &pgx.Batch{}
	b.Queue(`
		INSERT INTO memories (mysis_id, seq, turn, role, source, sender_id, content, reasoning, tool_calls,
			tool_call_id, tool_name, idempotency_key, call_arguments_json, call_key)
		SELECT $1, u.seq, u.turn, u.role, u.source, u.sender_id, u.content, u.reasoning, u.tool_calls::jsonb,
			u.tool_call_id, u.tool_name, u.idem, u.call_args, u.call_key
		FROM unnest($2::bigint[], $3::bigint[], $4::smallint[], $5::smallint[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
			AS u(seq, turn, role, source, sender_id, content, reasoning, tool_calls, tool_call_id, tool_name, idem,
				call_args, call_key)
		RETURNING seq, id, created_at`,
		mysisID, ins.seq, ins.turn, ins.role, ins.source, ins.sender, ins.content, ins.reasoning, ins.toolCalls,
		ins.toolCallID, ins.toolName, ins.key, ins.callArgs, ins.callKey)
	b.Queue(`UPDATE myses SET last_seq = $2, current_turn = $3, updated_at = now() WHERE id = $1`, mysisID, lastSeq, turn)
	if len(calls) > 0 {
		b.Queue(recordCallsSQL, recordCallsArgs(mysisID, calls, callSeqs)...)
	}
	br = tx.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, dbErr(err, "append memories")
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
			_ = br.Close()
			return nil, dbErr(err, "append memories")
		}
		i := bySeq[seq]
		out[i].ID, out[i].CreatedAt = m.ID, m.CreatedAt
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		_ = br.Close()
		return nil, dbErr(err, "append memories")
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, dbErr(err, "append memories")
	}
	if len(calls) > 0 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, dbErr(err, "append memories")
		}
	}
	if err := br.Close(); err != nil {
		return nil, dbErr(err, "append memories")
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, dbErr(err, "append memories")
	}
	return out, nil
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
	mysisID, err := memory.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if limit, err = memory.Limit("limit", limit, memory.DefaultWindow, memory.MaxWindow); err != nil {
		return nil, err
	}
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
	mysisID, err := memory.ParseID("mysis_id", mysisID)
	if err != nil {
		return nil, err
	}
	if fromSeq < 0 {
		return nil, errs.InvalidField("from_seq", "must not be negative")
	}
	if toSeq < 0 {
		return nil, errs.InvalidField("to_seq", "must not be negative")
	}
	if toSeq != 0 && toSeq < fromSeq {
		return nil, errs.InvalidField("to_seq", "must be 0 or at least from_seq")
	}
	if limit, err = memory.Limit("limit", limit, memory.DefaultRangeLimit, memory.MaxRangeLimit); err != nil {
		return nil, err
	}
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
	mysisID, err := memory.ParseID("mysis_id", mysisID)
	if err != nil {
		return memory.Memory{}, err
	}
	if id <= 0 {
		return memory.Memory{}, errs.InvalidField("memory_id", "required")
	}
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
const rowBytesSQL = `octet_length(m2.content) + octet_length(m2.reasoning) + coalesce((
	SELECT sum(octet_length(c->>'id') + octet_length(c->>'name') + octet_length(c->>'arguments'))
	FROM jsonb_array_elements(m2.tool_calls) c), 0)`
