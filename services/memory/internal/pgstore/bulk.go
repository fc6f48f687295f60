package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/callkey"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Bulk loading for `memorybench seed`: COPY straight into the tables, bypassing the per-mysis lock that the online
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

// memoryCopyCols are the columns CopyMemories loads.
var memoryCopyCols = []string{"mysis_id", "seq", "turn", "role", "source", "sender_id", "content", "reasoning",
	"tool_calls", "tool_call_id", "tool_name", "idempotency_key", "broadcast_id", "created_at", "call_arguments_json",
	"call_key"}

// CopyMemories streams memories from next (which returns false when done) into the table. Each memory must carry
// MysisID, Seq, Turn and CreatedAt; IDs are assigned by the database. Broadcast deliveries are stored as the
// online path stores them: without content (it is the broadcast's). Rows are COPYed into a temporary table and
// moved with one INSERT … SELECT that computes every content_tsv (seeded rows are fully indexed) and queues them for
// the term counts, all in one transaction; CountAllTerms (or a running memory server's indexer) counts them.
func (s *Store) CopyMemories(ctx context.Context, next func() (memory.Memory, bool)) (int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, dbErr(err, "copy memories")
	}
	defer rollback(ctx, tx)
	cols := strings.Join(memoryCopyCols, ", ")
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE seed_memories ON COMMIT DROP AS SELECT `+cols+` FROM memories WITH NO DATA`); err != nil {
		return 0, dbErr(err, "copy memories")
	}
	src := &memorySource{next: next}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"seed_memories"}, memoryCopyCols, src)
	if err == nil {
		err = src.err
	}
	if err != nil {
		return n, dbErr(err, "copy memories")
	}
	if _, err := tx.Exec(ctx, `WITH ins AS (INSERT INTO memories (`+cols+`, content_tsv)
		SELECT `+cols+`, zoea_memory_tsv(content, tool_calls) FROM seed_memories
		RETURNING id, mysis_id, content_tsv IS NOT NULL AS indexed)
		INSERT INTO memory_terms_queue (memory_id, mysis_id) SELECT id, mysis_id FROM ins WHERE indexed`); err != nil {
		return n, dbErr(err, "copy memories")
	}
	return n, dbErr(tx.Commit(ctx), "copy memories")
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
		k := callkey.Of(c.ToolName, c.CallArguments)
		key = &k
	}
	content := c.Content
	if c.BroadcastID != "" {
		content = "" // stored once, in broadcasts
	}
	return []any{c.MysisID, c.Seq, c.Turn, int16(c.Role), int16(c.Source), c.SenderID, content, c.Reasoning, tcs,
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
		err := r.Scan(&d.Name, &d.SQL)
		return d, err
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

// onOnly marks the definition of an index of a partitioned table (00008): "CREATE INDEX x ON ONLY memories …".
const onOnly = " ON ONLY "

// RecreateIndexes builds indexes from their definitions on up to parallel connections at once, each with
// maintenance_work_mem set to workMem (e.g. "512MB") for its session.
//
// An index of the partitioned table is built the way Postgres documents for large tables: the parent index ON ONLY
// the parent (instant, invalid), then one named index per partition, each attached to it (the parent becomes valid
// with the last). The partitions' copies are named here (<index>_pNN): left to Postgres, two indexes on the same
// columns built at once pick the same generated name for their partition copies and one build fails with
// "duplicate key value violates unique constraint pg_class_relname_nsp_index".
func (s *Store) RecreateIndexes(ctx context.Context, defs []IndexDef, workMem string, parallel int) error {
	if parallel < 1 {
		parallel = 1
	}
	parts, err := s.memoryPartitions(ctx)
	if err != nil {
		return err
	}
	var jobs []indexJob
	for _, d := range defs {
		i := strings.Index(d.SQL, onOnly)
		if i < 0 || len(parts) == 0 {
			jobs = append(jobs, indexJob{name: d.Name, sql: d.SQL})
			continue
		}
		// The parent first, on its own: the partition builds attach to it.
		if _, err := s.pool.Exec(ctx, d.SQL); err != nil {
			return dbErr(err, "create index "+d.Name)
		}
		head, tail := d.SQL[:i], d.SQL[i+len(onOnly):] // "CREATE INDEX name", "memories USING …"
		quoted := pgx.Identifier{d.Name}.Sanitize()
		if !strings.HasSuffix(head, " "+d.Name) && !strings.HasSuffix(head, " "+quoted) {
			return fmt.Errorf("recreate index %s: unexpected definition %q", d.Name, d.SQL)
		}
		verb := head[:strings.LastIndexByte(head, ' ')] // "CREATE [UNIQUE] INDEX"
		using := tail[strings.IndexByte(tail, ' '):]    // " USING …"
		for _, p := range parts {
			child := partitionIndexName(d.Name, p.suffix)
			jobs = append(jobs, indexJob{name: child,
				sql:    verb + " " + pgx.Identifier{child}.Sanitize() + " ON " + pgx.Identifier{p.schema, p.name}.Sanitize() + using,
				attach: `ALTER INDEX ` + quoted + ` ATTACH PARTITION ` + pgx.Identifier{p.schema, child}.Sanitize()})
		}
	}
	work := make(chan indexJob, len(jobs))
	for _, j := range jobs {
		work <- j
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
				for j := range work {
					if _, err := conn.Exec(ctx, j.sql); err != nil {
						return dbErr(err, "create index "+j.name)
					}
					if j.attach != "" {
						if _, err := conn.Exec(ctx, j.attach); err != nil {
							return dbErr(err, "attach index "+j.name)
						}
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
	if first != nil {
		return first
	}
	// Copies built by an older definition keep the <index>_pNN names error handling expects (00008).
	_, err = s.pool.Exec(ctx, `SELECT zoea_name_partition_indexes('memories'::regclass)`)
	return dbErr(err, "name partition indexes")
}

// indexJob is one index build; attach, when set, attaches the built partition index to its parent.
type indexJob struct {
	name, sql, attach string
}

// partition is one leaf of the memories table; suffix is the NN of memories_pNN.
type partition struct {
	schema, name, suffix string
}

// memoryPartitions lists the leaf partitions of memories (none when the table is not partitioned).
func (s *Store) memoryPartitions(ctx context.Context) ([]partition, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT n.nspname, c.relname, right(c.relname, 2)
		FROM pg_partition_tree('memories') t JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE t.isleaf AND t.level > 0 ORDER BY c.relname`)
	if err != nil {
		return nil, dbErr(err, "list partitions")
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (partition, error) {
		var p partition
		return p, r.Scan(&p.schema, &p.name, &p.suffix)
	})
	return ps, dbErr(err, "list partitions")
}

// partitionIndexName is the name zoea_name_partition_indexes (00008) gives a partition's copy of index.
func partitionIndexName(index, suffix string) string {
	if len(index) > 59 {
		index = index[:59]
	}
	return index + "_p" + suffix
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

// Sizes measures the memories table (exact row count, so it scans the table once). A partitioned table's sizes
// are the sums over its partitions.
func (s *Store) Sizes(ctx context.Context) (SizeStats, error) {
	st := SizeStats{Indexes: map[string]int64{}}
	err := s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM memories),
			coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8, coalesce(sum(pg_relation_size(c.oid)), 0)::int8,
			coalesce(sum(pg_total_relation_size(nullif(c.reltoastrelid, 0))), 0)::int8,
			(SELECT count(*) FROM myses), (SELECT count(*) FROM broadcasts)
		FROM pg_partition_tree('memories') t JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf`).
		Scan(&st.Rows, &st.Total, &st.Heap, &st.Toast, &st.Myses, &st.Broadcasts)
	if err != nil {
		return st, dbErr(err, "sizes")
	}
	rows, err := s.pool.Query(ctx, `
		SELECT i.relname, (SELECT coalesce(sum(pg_relation_size(t.relid)), 0)::int8
			FROM pg_partition_tree(i.oid) t WHERE t.isleaf)
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
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
