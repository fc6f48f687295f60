package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// AppendMemories appends a batch to one mysis atomically and returns the stored rows in request order.
//
// The call runs in a transaction that locks the mysis row first (FOR NO KEY UPDATE), which serialises every writer
// of that mysis: seq numbers are taken from myses.last_seq under the lock, so they are gapless and strictly
// increasing however many appenders race, and the idempotency-key lookup that follows sees every row committed
// before the lock was granted, so a retry returns the rows stored the first time instead of writing them again. A key
// sent again with other content is no retry: the call is refused (rules.PayloadMismatch) and writes nothing.
//
// Concurrent small appends to different myses share that transaction (group commit, group.go): a lone call runs
// in one of its own at once, two round trips on one connection (BEGIN in the lock batch, COMMIT at the end of the
// write batch). A call returns after the COMMIT that holds its rows.
func (s *Store) AppendMemories(ctx context.Context, mysisID string, ms []memory.NewMemory) ([]memory.Memory, error) {
	return s.groups.submit(&appendCall{ctx: ctx, mysisID: mysisID, ms: ms})
}

// appendSQL inserts new rows, of one mysis or of a group's myses, from arrays. The full-text vector (zoea_memory_tsv,
// migration 00009: the content, and an assistant memory's tool calls with it) is computed here for every row except
// tool results when $15 (asynchronous indexing) is set: those are left NULL for
// the background indexer (IndexPending), which takes the most expensive part of a write — tool results are most of
// the indexed text — off the append's critical path. Every row given a vector here is queued for the term counts
// (terms.go) in the same statement.
const appendSQL = `
WITH ins AS (
INSERT INTO memories (mysis_id, seq, turn, role, source, sender_id, content, reasoning, tool_calls,
	tool_call_id, tool_name, idempotency_key, call_arguments_json, call_key, content_tsv)
SELECT u.mysis_id, u.seq, u.turn, u.role, u.source, u.sender_id, u.content, u.reasoning, u.tool_calls::jsonb,
	u.tool_call_id, u.tool_name, u.idem, u.call_args, u.call_key,
	CASE WHEN u.role = 4 AND $15::boolean THEN NULL ELSE zoea_memory_tsv(u.content, u.tool_calls::jsonb) END
FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::smallint[], $5::smallint[], $6::text[], $7::text[], $8::text[],
	$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
	AS u(mysis_id, seq, turn, role, source, sender_id, content, reasoning, tool_calls, tool_call_id, tool_name, idem,
		call_args, call_key)
RETURNING mysis_id, seq, id, created_at, content_tsv IS NOT NULL AS indexed
), queued AS (
	INSERT INTO memory_terms_queue (memory_id, mysis_id) SELECT id, mysis_id FROM ins WHERE indexed
)
SELECT mysis_id, seq, id, created_at FROM ins`

// appendState is what an append reads under the mysis lock.
type appendState struct {
	lastSeq, turn int64
	existing      map[string]memory.Memory // rows stored before under the batch's idempotency keys
	storedCalls   []memory.ToolCall        // the newest stored assistant tool calls, when the batch needs them
}

// planAppend assigns seq and turn to the batch's new rows (advancing st's counters) and returns every row of the
// batch as it will be stored — a retried row as stored the first time — and the new rows as insert arrays, which
// point at their rows of the result to fill in the ids and creation times.
func planAppend(mysisID string, ms []memory.NewMemory, st *appendState) ([]memory.Memory, insertBatch, error) {
	cArgs, cKeys := callArgs(ms, st.storedCalls)
	out := make([]memory.Memory, len(ms))
	var ins insertBatch
	for i, n := range ms {
		if m, ok := st.existing[n.IdempotencyKey]; ok && n.IdempotencyKey != "" {
			// A retry returns the stored row; the same key with other content is refused, the whole call with it.
			if field := rules.PayloadMismatch(n, storedPayload(m)); field != "" {
				return nil, ins, rules.KeyReused(i, n.IdempotencyKey, field)
			}
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
		out[i] = memory.Memory{
			MysisID: mysisID, Seq: st.lastSeq, Turn: st.turn, Role: n.Role, Source: n.Source, SenderID: n.SenderID,
			Content: n.Content, Reasoning: n.Reasoning, ToolCalls: n.ToolCalls, ToolCallID: n.ToolCallID,
			ToolName: n.ToolName, IdempotencyKey: n.IdempotencyKey, CallArguments: deref(cArgs[i]),
			CallKey: deref(cKeys[i]),
		}
		ins.add(&out[i], n, tcs, cArgs[i], cKeys[i])
	}
	return out, ins, nil
}

// storedPayload is what a stored memory holds of what its appender chose, for rules.PayloadMismatch.
func storedPayload(m memory.Memory) memory.NewMemory {
	return memory.NewMemory{
		Role: m.Role, Source: m.Source, SenderID: m.SenderID, Content: m.Content, Reasoning: m.Reasoning,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName, CallArguments: m.CallArguments,
	}
}

// insertBatch holds the columns of the rows to insert, as arrays for one unnest() INSERT, and where each row's id
// and creation time go.
type insertBatch struct {
	dst                                              []*memory.Memory
	mysis                                            []string
	seq, turn                                        []int64
	role, source                                     []int16
	sender, content, reasoning, toolCallID, toolName []string
	toolCalls, key, callArgs, callKey                []*string
}

// add adds row m (planned from n, with its seq, turn and mysis set) to the batch.
func (b *insertBatch) add(m *memory.Memory, n memory.NewMemory, toolCalls, callArgs, callKey *string) {
	b.dst = append(b.dst, m)
	b.mysis = append(b.mysis, m.MysisID)
	b.seq = append(b.seq, m.Seq)
	b.turn = append(b.turn, m.Turn)
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

// merge adds o's rows to the batch.
func (b *insertBatch) merge(o *insertBatch) {
	b.dst = append(b.dst, o.dst...)
	b.mysis = append(b.mysis, o.mysis...)
	b.seq = append(b.seq, o.seq...)
	b.turn = append(b.turn, o.turn...)
	b.role = append(b.role, o.role...)
	b.source = append(b.source, o.source...)
	b.sender = append(b.sender, o.sender...)
	b.content = append(b.content, o.content...)
	b.reasoning = append(b.reasoning, o.reasoning...)
	b.toolCalls = append(b.toolCalls, o.toolCalls...)
	b.toolCallID = append(b.toolCallID, o.toolCallID...)
	b.toolName = append(b.toolName, o.toolName...)
	b.key = append(b.key, o.key...)
	b.callArgs = append(b.callArgs, o.callArgs...)
	b.callKey = append(b.callKey, o.callKey...)
}

// readReturning reads appendSQL's RETURNING rows from br into the rows they belong to (matched by mysis and seq:
// RETURNING promises no order).
func (b *insertBatch) readReturning(br pgx.BatchResults) error {
	type rowKey struct {
		mysis string
		seq   int64
	}
	at := make(map[rowKey]*memory.Memory, len(b.dst))
	for _, m := range b.dst {
		at[rowKey{m.MysisID, m.Seq}] = m
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k rowKey
		var m memory.Memory
		if err := rows.Scan(&k.mysis, &k.seq, &m.ID, &m.CreatedAt); err != nil {
			return err
		}
		if d := at[k]; d != nil {
			d.ID, d.CreatedAt = m.ID, m.CreatedAt
		}
	}
	return rows.Err()
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
