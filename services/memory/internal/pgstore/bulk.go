package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Bulk loading for `memory seed`: COPY straight into the tables, bypassing the per-mysis lock that the online
// write path takes. It is only safe on a database nothing else writes to, and the caller must set each mysis's
// counters (SetCounters) to match what it loaded.

// CopyMyses loads myses with their ids, names and configuration as given.
func (s *Store) CopyMyses(ctx context.Context, ms []memory.Mysis) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"myses"},
		[]string{"id", "name", "provider", "model", "temperature", "system_prompt", "state", "created_at", "updated_at"},
		pgx.CopyFromSlice(len(ms), func(i int) ([]any, error) {
			m := ms[i]
			return []any{m.ID, m.Name, m.Provider, m.Model, m.Temperature, m.SystemPrompt, string(m.State), m.CreatedAt, m.CreatedAt}, nil
		}))
	return dbErr(err, "copy myses")
}

// CopyBroadcasts loads broadcasts as given.
func (s *Store) CopyBroadcasts(ctx context.Context, bs []memory.Broadcast) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"broadcasts"}, []string{"id", "sender_id", "content", "created_at"},
		pgx.CopyFromSlice(len(bs), func(i int) ([]any, error) {
			b := bs[i]
			return []any{b.ID, b.SenderID, b.Content, b.CreatedAt}, nil
		}))
	return dbErr(err, "copy broadcasts")
}

// CopyMemories streams memories from next (which returns false when done) into the table with one COPY. Each
// memory must carry MysisID, Seq, Turn and CreatedAt; IDs are assigned by the database.
func (s *Store) CopyMemories(ctx context.Context, next func() (memory.Memory, bool)) (int64, error) {
	src := &memorySource{next: next}
	n, err := s.pool.CopyFrom(ctx, pgx.Identifier{"memories"},
		[]string{"mysis_id", "seq", "turn", "role", "source", "sender_id", "content", "reasoning", "tool_calls",
			"tool_call_id", "tool_name", "idempotency_key", "broadcast_id", "created_at", "call_arguments_json",
			"call_key"}, src)
	if err == nil {
		err = src.err
	}
	return n, dbErr(err, "copy memories")
}

type memorySource struct {
	next func() (memory.Memory, bool)
	cur  memory.Memory
	err  error
}

func (m *memorySource) Next() bool {
	var ok bool
	m.cur, ok = m.next()
	return ok
}

func (m *memorySource) Values() ([]any, error) {
	c := m.cur
	tcs, err := toDBToolCalls(c.ToolCalls)
	if err != nil {
		m.err = err
		return nil, err
	}
	// Tool results get their call key as the online write path would compute it.
	var key *string
	if c.Role == memory.RoleTool {
		k := memory.CallKey(c.ToolName, c.CallArguments)
		key = &k
	}
	return []any{c.MysisID, c.Seq, c.Turn, int16(c.Role), int16(c.Source), c.SenderID, c.Content, c.Reasoning, tcs,
		c.ToolCallID, c.ToolName, nullable(c.IdempotencyKey), nullable(c.BroadcastID), c.CreatedAt,
		nullable(c.CallArguments), key}, nil
}

func (m *memorySource) Err() error { return m.err }

// SetCounters sets last_seq and current_turn of myses after a bulk load.
func (s *Store) SetCounters(ctx context.Context, ids []string, lastSeq, currentTurn []int64) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE myses y SET last_seq = u.last_seq, current_turn = u.turn
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS u(id, last_seq, turn)
		WHERE y.id = u.id`, ids, lastSeq, currentTurn)
	return dbErr(err, "set counters")
}

// IndexDef is a secondary index's name and its CREATE INDEX statement.
type IndexDef struct {
	Name, SQL string
}

// DropSecondaryIndexes drops the memories indexes that a bulk load can build faster afterwards (full-text,
// mission and idempotency indexes; the primary key and the (mysis_id, seq) constraint stay) and returns their
// definitions as Postgres reports them, so RecreateIndexes restores exactly what the migrations created.
func (s *Store) DropSecondaryIndexes(ctx context.Context) ([]IndexDef, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT i.relname, pg_get_indexdef(i.oid)
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
		WHERE x.indrelid = 'memories'::regclass
		  AND NOT x.indisprimary
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
		ORDER BY i.relname`)
	if err != nil {
		return nil, dbErr(err, "list indexes")
	}
	defs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (IndexDef, error) {
		var d IndexDef
		return d, r.Scan(&d.Name, &d.SQL)
	})
	if err != nil {
		return nil, dbErr(err, "list indexes")
	}
	for _, d := range defs {
		if _, err := s.pool.Exec(ctx, `DROP INDEX `+pgx.Identifier{d.Name}.Sanitize()); err != nil {
			return defs, dbErr(err, "drop index "+d.Name)
		}
	}
	return defs, nil
}

// RecreateIndexes builds indexes from their definitions on up to parallel connections at once, each with
// maintenance_work_mem set to workMem (e.g. "512MB") for its session.
func (s *Store) RecreateIndexes(ctx context.Context, defs []IndexDef, workMem string, parallel int) error {
	if parallel < 1 {
		parallel = 1
	}
	work := make(chan IndexDef, len(defs))
	for _, d := range defs {
		work <- d
	}
	close(work)
	errc := make(chan error, parallel)
	for range parallel {
		go func() {
			errc <- func() error {
				conn, err := s.pool.Acquire(ctx)
				if err != nil {
					return dbErr(err, "recreate indexes")
				}
				defer conn.Release()
				if workMem != "" {
					if _, err := conn.Exec(ctx, `SELECT set_config('maintenance_work_mem', $1, false)`, workMem); err != nil {
						return dbErr(err, "set maintenance_work_mem")
					}
				}
				for d := range work {
					if _, err := conn.Exec(ctx, d.SQL); err != nil {
						return dbErr(err, "create index "+d.Name)
					}
				}
				return nil
			}()
		}()
	}
	var first error
	for range parallel {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// SizeStats describes the on-disk size of the memories table.
type SizeStats struct {
	Rows       int64
	Total      int64 // heap + TOAST + every index
	Heap       int64
	Toast      int64
	Indexes    map[string]int64
	Myses      int64
	Broadcasts int64
}

// Sizes measures the memories table (exact row count, so it scans the table once).
func (s *Store) Sizes(ctx context.Context) (SizeStats, error) {
	st := SizeStats{Indexes: map[string]int64{}}
	err := s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM memories), pg_total_relation_size('memories'), pg_relation_size('memories'),
			coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
			(SELECT count(*) FROM myses), (SELECT count(*) FROM broadcasts)
		FROM pg_class c WHERE c.oid = 'memories'::regclass`).
		Scan(&st.Rows, &st.Total, &st.Heap, &st.Toast, &st.Myses, &st.Broadcasts)
	if err != nil {
		return st, dbErr(err, "sizes")
	}
	rows, err := s.pool.Query(ctx, `
		SELECT i.relname, pg_relation_size(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
		WHERE x.indrelid = 'memories'::regclass ORDER BY 1`)
	if err != nil {
		return st, dbErr(err, "sizes")
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return st, dbErr(err, "sizes")
		}
		st.Indexes[name] = n
	}
	return st, dbErr(rows.Err(), "sizes")
}
