package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// mysisCols is the column list every mysis read returns, in mysisRow.dest order. The account username comes from
// the accounts table's unique mysis_id index.
const mysisCols = `y.id, y.name, y.provider, y.model, y.temperature, y.system_prompt, y.state, y.state_reason,
	y.encouragement_count, y.current_turn, y.last_seq,
	coalesce((SELECT a.username FROM accounts a WHERE a.mysis_id = y.id), ''), y.created_at, y.updated_at,
	y.reply_discarded, y.spacemolt_endpoint`

func mysisDest(m *memory.Mysis) []any {
	return []any{&m.ID, &m.Name, &m.Provider, &m.Model, &m.Temperature, &m.SystemPrompt, &m.State, &m.StateReason,
		&m.EncouragementCount, &m.CurrentTurn, &m.LastSeq, &m.AccountUsername, &m.CreatedAt, &m.UpdatedAt,
		&m.ReplyDiscarded, &m.SpaceMoltEndpoint}
}

func errMysisNotFound(id string) error { return errs.NotFoundf("mysis %s not found", id) }

// CreateMysis stores a new idle mysis with a fresh id.
func (s *Store) CreateMysis(ctx context.Context, n memory.NewMysis) (memory.Mysis, error) {
	var m memory.Mysis
	err := s.pool.QueryRow(ctx, `
		INSERT INTO myses AS y (id, name, provider, model, temperature, system_prompt, spacemolt_endpoint)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+mysisCols,
		memory.NewID(), n.Name, n.Provider, n.Model, n.Temperature, n.SystemPrompt, n.SpaceMoltEndpoint).Scan(mysisDest(&m)...)
	if err != nil {
		return memory.Mysis{}, dbErr(err, "create mysis")
	}
	return m, nil
}

// GetMysis returns one mysis by id.
func (s *Store) GetMysis(ctx context.Context, id string) (memory.Mysis, error) {
	var m memory.Mysis
	err := s.pool.QueryRow(ctx, `SELECT `+mysisCols+` FROM myses y WHERE y.id = $1`, id).Scan(mysisDest(&m)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Mysis{}, errMysisNotFound(id)
	}
	return m, dbErr(err, "get mysis")
}

// GetMysisByName returns one mysis by its unique name.
func (s *Store) GetMysisByName(ctx context.Context, name string) (memory.Mysis, error) {
	var m memory.Mysis
	err := s.pool.QueryRow(ctx, `SELECT `+mysisCols+` FROM myses y WHERE y.name = $1`, name).Scan(mysisDest(&m)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Mysis{}, errs.NotFoundf("no mysis named %q", name)
	}
	return m, dbErr(err, "get mysis by name")
}

// ListMyses returns up to f.PageSize myses ordered by name after f.AfterName, and whether more follow.
func (s *Store) ListMyses(ctx context.Context, f memory.ListFilter) ([]memory.Mysis, bool, error) {
	size := f.PageSize
	rows, err := s.pool.Query(ctx, `
		SELECT `+mysisCols+` FROM myses y
		WHERE ($1 = '' OR y.state = $1) AND y.name > $2
		ORDER BY y.name
		LIMIT $3`, string(f.State), f.AfterName, size+1)
	if err != nil {
		return nil, false, dbErr(err, "list myses")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Mysis, error) {
		var m memory.Mysis
		return m, r.Scan(mysisDest(&m)...)
	})
	if err != nil {
		return nil, false, dbErr(err, "list myses")
	}
	more := len(out) > size
	if more {
		out = out[:size]
	}
	return out, more, nil
}

// UpdateMysisConfig reads the mysis's configuration under the row lock, passes it to apply (the domain's patch,
// which validates the result as a whole) and stores what apply returns; an error from apply is returned as is.
func (s *Store) UpdateMysisConfig(ctx context.Context, id string, apply func(memory.NewMysis) (memory.NewMysis, error)) (memory.Mysis, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return memory.Mysis{}, dbErr(err, "update mysis")
	}
	defer rollback(ctx, tx)
	var cur memory.NewMysis
	err = tx.QueryRow(ctx, `SELECT name, provider, model, temperature, system_prompt, spacemolt_endpoint FROM myses WHERE id = $1 FOR NO KEY UPDATE`, id).
		Scan(&cur.Name, &cur.Provider, &cur.Model, &cur.Temperature, &cur.SystemPrompt, &cur.SpaceMoltEndpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Mysis{}, errMysisNotFound(id)
	}
	if err != nil {
		return memory.Mysis{}, dbErr(err, "update mysis")
	}
	next, err := apply(cur)
	if err != nil {
		return memory.Mysis{}, err
	}
	var m memory.Mysis
	err = tx.QueryRow(ctx, `
		UPDATE myses y SET provider = $2, model = $3, temperature = $4, system_prompt = $5, spacemolt_endpoint = $6,
			updated_at = now()
		WHERE y.id = $1
		RETURNING `+mysisCols, id, next.Provider, next.Model, next.Temperature, next.SystemPrompt, next.SpaceMoltEndpoint).Scan(mysisDest(&m)...)
	if err != nil {
		return memory.Mysis{}, dbErr(err, "update mysis")
	}
	if err := tx.Commit(ctx); err != nil {
		return memory.Mysis{}, dbErr(err, "update mysis")
	}
	return m, nil
}

// SetMysisState changes the lifecycle state and returns the mysis with its previous state. With c.Expected set it
// is a compare-and-set: a different stored state fails with Conflict and changes nothing.
func (s *Store) SetMysisState(ctx context.Context, id string, c memory.StateChange) (memory.Mysis, memory.State, error) {
	// One statement: lock the row, compare, update. The locked row is the newest version, so the comparison
	// cannot race another writer.
	var m memory.Mysis
	var prev memory.State
	err := s.pool.QueryRow(ctx, `
		WITH old AS (SELECT id, state FROM myses WHERE id = $1 FOR NO KEY UPDATE)
		UPDATE myses y SET state = $2, state_reason = $3,
			encouragement_count = coalesce($4, y.encouragement_count), updated_at = now()
		FROM old
		WHERE y.id = old.id AND ($5 = '' OR old.state = $5)
		RETURNING old.state, `+mysisCols,
		id, string(c.State), c.Reason, c.EncouragementCount, string(c.Expected)).
		Scan(append([]any{&prev}, mysisDest(&m)...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		var cur memory.State
		err = s.pool.QueryRow(ctx, `SELECT state FROM myses WHERE id = $1`, id).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.Mysis{}, "", errMysisNotFound(id)
		}
		if err != nil {
			return memory.Mysis{}, "", dbErr(err, "set mysis state")
		}
		return memory.Mysis{}, "", &errs.Error{Kind: errs.Conflict, Reason: errs.ReasonStateChanged,
			Msg: fmt.Sprintf("mysis %s is %s, not %s: state unchanged", id, cur, c.Expected)}
	}
	if err != nil {
		return memory.Mysis{}, "", dbErr(err, "set mysis state")
	}
	return m, prev, nil
}

// DeleteMysis removes a mysis; its memories go with it (ON DELETE CASCADE) and its account is released
// (ON DELETE SET NULL). Its calls leave the swarm's usage rollup in the same transaction (takeOutOfSwarmSQL), so
// the rollup keeps equalling the call log.
func (s *Store) DeleteMysis(ctx context.Context, id string) error {
	var found bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The mysis row first: no call of it commits after this, so its rows read below are all it has.
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM myses WHERE id = $1 FOR UPDATE)`, id).Scan(&found); err != nil || !found {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(lockSwarmRowsSQL, id)
		b.Queue(takeOutOfSwarmSQL, id)
		b.Queue(dropEmptySwarmRowsSQL, id)
		b.Queue(deleteTermsSQL, id)
		b.Queue(`DELETE FROM myses WHERE id = $1`, id)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return dbErr(err, "delete mysis")
	}
	if !found {
		return errMysisNotFound(id)
	}
	return nil
}

// mysisRollupRows is a mysis's rows as the swarm rollup keys them ($1 the mysis): its hours and days
// (llm_usage_rollup) and its all time (llm_usage_totals).
const mysisRollupRows = `SELECT span, start, provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
		completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
	FROM llm_usage_rollup WHERE mysis_id = $1
	UNION ALL
	SELECT 3::smallint, 'epoch'::timestamptz, provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
		completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at
	FROM llm_usage_totals WHERE mysis_id = $1`

// lockSwarmRowsSQL locks the swarm rollup rows a mysis's calls are in, in the order every writer locks them
// (recordCallsSQL), so a deletion and the writers of other myses of its shard cannot deadlock.
const lockSwarmRowsSQL = `SELECT 1 FROM llm_usage_swarm_rollup r
	WHERE r.shard = get_byte(uuid_send($1::uuid), 15) & 15
		AND (r.span, r.start, r.provider, r.model) IN (SELECT span, start, provider, model FROM (` + mysisRollupRows + `) d)
	ORDER BY r.span, r.start, r.provider, r.model FOR UPDATE`

// takeOutOfSwarmSQL subtracts a mysis's ($1) rows from its shard of the swarm rollup and, where the mysis held a
// row's first or last call, recomputes them from the shard's other myses.
const takeOutOfSwarmSQL = `
WITH d AS (` + mysisRollupRows + `)
UPDATE llm_usage_swarm_rollup r SET
		calls = r.calls - d.calls,
		failed_calls = r.failed_calls - d.failed_calls,
		prompt_tokens = r.prompt_tokens - d.prompt_tokens,
		cached_prompt_tokens = r.cached_prompt_tokens - d.cached_prompt_tokens,
		completion_tokens = r.completion_tokens - d.completion_tokens,
		reasoning_tokens = r.reasoning_tokens - d.reasoning_tokens,
		composed_tokens = r.composed_tokens - d.composed_tokens,
		latency_ms = r.latency_ms - d.latency_ms,
		retries = r.retries - d.retries,
		cost_nanos = r.cost_nanos - d.cost_nanos,
		first_call_at = CASE WHEN r.first_call_at < d.first_call_at THEN r.first_call_at ELSE (
			SELECT coalesce(min(o.first_call_at), r.first_call_at) FROM (
				SELECT mysis_id, first_call_at FROM llm_usage_rollup
				WHERE r.span < 3 AND span = r.span AND start = r.start AND provider = r.provider AND model = r.model
				UNION ALL
				SELECT mysis_id, first_call_at FROM llm_usage_totals
				WHERE r.span = 3 AND provider = r.provider AND model = r.model) o
			WHERE o.mysis_id <> $1 AND get_byte(uuid_send(o.mysis_id), 15) & 15 = r.shard) END,
		last_call_at = CASE WHEN r.last_call_at > d.last_call_at THEN r.last_call_at ELSE (
			SELECT coalesce(max(o.last_call_at), r.last_call_at) FROM (
				SELECT mysis_id, last_call_at FROM llm_usage_rollup
				WHERE r.span < 3 AND span = r.span AND start = r.start AND provider = r.provider AND model = r.model
				UNION ALL
				SELECT mysis_id, last_call_at FROM llm_usage_totals
				WHERE r.span = 3 AND provider = r.provider AND model = r.model) o
			WHERE o.mysis_id <> $1 AND get_byte(uuid_send(o.mysis_id), 15) & 15 = r.shard) END
	FROM d
	WHERE r.shard = get_byte(uuid_send($1::uuid), 15) & 15
		AND r.span = d.span AND r.start = d.start AND r.provider = d.provider AND r.model = d.model`

// dropEmptySwarmRowsSQL deletes the rows of a mysis's ($1) shard that takeOutOfSwarmSQL left with no call (a row
// is written only with calls, so no other row has none).
const dropEmptySwarmRowsSQL = `DELETE FROM llm_usage_swarm_rollup r
	WHERE r.shard = get_byte(uuid_send($1::uuid), 15) & 15 AND r.calls = 0
		AND (r.span, r.start, r.provider, r.model) IN (SELECT span, start, provider, model FROM (` + mysisRollupRows + `) d)`
