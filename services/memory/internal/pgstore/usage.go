package pgstore

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// swarmShards is the number of swarm_spend rows per window (see 00004_llm_usage.sql).
const swarmShards = 16

// addUsageSums adds an insert's sums to an existing row (aliased r): the running totals, the per-mysis and the
// swarm rollups keep the same columns.
const addUsageSums = `
		calls = r.calls + excluded.calls,
		failed_calls = r.failed_calls + excluded.failed_calls,
		prompt_tokens = r.prompt_tokens + excluded.prompt_tokens,
		cached_prompt_tokens = r.cached_prompt_tokens + excluded.cached_prompt_tokens,
		completion_tokens = r.completion_tokens + excluded.completion_tokens,
		reasoning_tokens = r.reasoning_tokens + excluded.reasoning_tokens,
		composed_tokens = r.composed_tokens + excluded.composed_tokens,
		latency_ms = r.latency_ms + excluded.latency_ms,
		retries = r.retries + excluded.retries,
		cost_nanos = r.cost_nanos + excluded.cost_nanos,
		first_call_at = least(r.first_call_at, excluded.first_call_at),
		last_call_at = greatest(r.last_call_at, excluded.last_call_at)
`

// recordCallsSQL stores calls and keeps the running totals, the hourly and daily rollups (per mysis, and the
// swarm's per shard) and the spend counters current, in one statement: the data-modifying CTEs run exactly once
// whether or not the final SELECT reads them, and only calls that were new (not a retried call_id) reach the totals
// and counters. Per window only the newest window's calls are added; a row of an older window restarts at them.
const recordCallsSQL = `
WITH c AS (
	INSERT INTO llm_calls (call_id, mysis_id, memory_seq, started_at, provider, model, prompt_tokens,
		cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, error, cost_nanos)
	SELECT u.call_id, $1, u.memory_seq, coalesce(u.started_at, now()), u.provider, u.model, u.prompt_tokens,
		u.cached_prompt_tokens, u.completion_tokens, u.reasoning_tokens, u.composed_tokens, u.latency_ms, u.retries,
		u.error, u.cost_nanos
	FROM unnest($2::uuid[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
		$9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::int[], $14::text[], $15::bigint[])
		AS u(call_id, memory_seq, started_at, provider, model, prompt_tokens, cached_prompt_tokens, completion_tokens,
			reasoning_tokens, composed_tokens, latency_ms, retries, error, cost_nanos)
	ON CONFLICT (call_id) DO NOTHING
	RETURNING mysis_id, started_at, provider, model, prompt_tokens, cached_prompt_tokens, completion_tokens,
		reasoning_tokens, composed_tokens, latency_ms, retries, error, cost_nanos
), totals AS (
	INSERT INTO llm_usage_totals AS r (mysis_id, provider, model, calls, failed_calls, prompt_tokens,
		cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos,
		first_call_at, last_call_at)
	SELECT mysis_id, provider, model, count(*), count(*) FILTER (WHERE error <> ''), sum(prompt_tokens),
		sum(cached_prompt_tokens), sum(completion_tokens), sum(reasoning_tokens), sum(composed_tokens),
		sum(latency_ms), sum(retries), sum(cost_nanos), min(started_at), max(started_at)
	FROM c GROUP BY mysis_id, provider, model
	ON CONFLICT (mysis_id, provider, model) DO UPDATE SET` + addUsageSums + `	RETURNING 1
), rollup AS (
	INSERT INTO llm_usage_rollup AS r (mysis_id, span, start, provider, model, calls, failed_calls, prompt_tokens,
		cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos,
		first_call_at, last_call_at)
	SELECT c.mysis_id, s.span, s.start, c.provider, c.model, count(*), count(*) FILTER (WHERE c.error <> ''),
		sum(c.prompt_tokens), sum(c.cached_prompt_tokens), sum(c.completion_tokens), sum(c.reasoning_tokens),
		sum(c.composed_tokens), sum(c.latency_ms), sum(c.retries), sum(c.cost_nanos), min(c.started_at), max(c.started_at)
	FROM c CROSS JOIN LATERAL (VALUES
		(1::smallint, date_trunc('hour', c.started_at, 'UTC')),
		(2::smallint, date_trunc('day', c.started_at, 'UTC'))) AS s(span, start)
	GROUP BY c.mysis_id, s.span, s.start, c.provider, c.model
	ON CONFLICT (mysis_id, span, start, provider, model) DO UPDATE SET
` + addUsageSums + `
	RETURNING 1
), mcost AS (
	INSERT INTO llm_usage_mysis_cost AS r (mysis_id, span, start, cost_nanos, calls)
	SELECT c.mysis_id, s.span, s.start, sum(c.cost_nanos), count(*)
	FROM c CROSS JOIN LATERAL (VALUES
		(1::smallint, date_trunc('hour', c.started_at, 'UTC')),
		(2::smallint, date_trunc('day', c.started_at, 'UTC')),
		(3::smallint, 'epoch'::timestamptz)) AS s(span, start)
	GROUP BY c.mysis_id, s.span, s.start
	ORDER BY s.span, s.start
	ON CONFLICT (mysis_id, span, start) DO UPDATE SET
		cost_nanos = r.cost_nanos + excluded.cost_nanos, calls = r.calls + excluded.calls
	RETURNING 1
), swarm AS (
	INSERT INTO llm_usage_swarm_rollup AS r (span, start, provider, model, shard, calls, failed_calls, prompt_tokens,
		cached_prompt_tokens, completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos,
		first_call_at, last_call_at)
	SELECT s.span, s.start, c.provider, c.model, (get_byte(uuid_send(c.mysis_id), 15) & 15)::smallint, count(*),
		count(*) FILTER (WHERE c.error <> ''), sum(c.prompt_tokens), sum(c.cached_prompt_tokens), sum(c.completion_tokens),
		sum(c.reasoning_tokens), sum(c.composed_tokens), sum(c.latency_ms), sum(c.retries), sum(c.cost_nanos),
		min(c.started_at), max(c.started_at)
	FROM c CROSS JOIN LATERAL (VALUES
		(1::smallint, date_trunc('hour', c.started_at, 'UTC')),
		(2::smallint, date_trunc('day', c.started_at, 'UTC')),
		(3::smallint, 'epoch'::timestamptz)) AS s(span, start)
	GROUP BY s.span, s.start, c.provider, c.model, c.mysis_id
	-- One order for every writer, so two writers of one shard lock its rows in the same order.
	ORDER BY s.span, s.start, c.provider, c.model
	ON CONFLICT (span, start, provider, model, shard) DO UPDATE SET
` + addUsageSums + `
	RETURNING 1
), win AS (
	SELECT DISTINCT ON (w.win) w.win, w.start, sum(c.prompt_tokens + c.completion_tokens) AS tokens,
		sum(c.cost_nanos) AS cost_nanos
	FROM c CROSS JOIN LATERAL (VALUES
		(1::smallint, date_trunc('hour', c.started_at, 'UTC')),
		(2::smallint, date_trunc('day', c.started_at, 'UTC')),
		(3::smallint, 'epoch'::timestamptz)) AS w(win, start)
	GROUP BY w.win, w.start
	ORDER BY w.win, w.start DESC
), ms AS (
	INSERT INTO mysis_spend AS s (mysis_id, win, start, tokens, cost_nanos)
	SELECT $1, win, start, tokens, cost_nanos FROM win
	ON CONFLICT (mysis_id, win) DO UPDATE SET
		tokens = CASE WHEN s.start = excluded.start THEN s.tokens + excluded.tokens
			WHEN s.start < excluded.start THEN excluded.tokens ELSE s.tokens END,
		cost_nanos = CASE WHEN s.start = excluded.start THEN s.cost_nanos + excluded.cost_nanos
			WHEN s.start < excluded.start THEN excluded.cost_nanos ELSE s.cost_nanos END,
		start = greatest(s.start, excluded.start)
	RETURNING 1
), ss AS (
	INSERT INTO swarm_spend AS s (shard, win, start, tokens, cost_nanos)
	SELECT $16, win, start, tokens, cost_nanos FROM win
	ON CONFLICT (shard, win) DO UPDATE SET
		tokens = CASE WHEN s.start = excluded.start THEN s.tokens + excluded.tokens
			WHEN s.start < excluded.start THEN excluded.tokens ELSE s.tokens END,
		cost_nanos = CASE WHEN s.start = excluded.start THEN s.cost_nanos + excluded.cost_nanos
			WHEN s.start < excluded.start THEN excluded.cost_nanos ELSE s.cost_nanos END,
		start = greatest(s.start, excluded.start)
	RETURNING 1
)
SELECT count(*) FROM c`

// swarmShard spreads myses over the swarm_spend rows.
func swarmShard(mysisID string) int16 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(mysisID))
	return int16(h.Sum32() % swarmShards)
}

// recordCallsArgs are recordCallsSQL's parameters; seqs[i] is the memory seq of calls[i] (0: none).
func recordCallsArgs(mysisID string, calls []memory.LlmCall, seqs []int64) []any {
	n := len(calls)
	var (
		ids, providers, models, errTexts                         = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		memSeq                                                   = make([]*int64, n)
		started                                                  = make([]*time.Time, n)
		prompt, cached, completion, reasoning, composed, latency = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		cost                                                     = make([]int64, n)
		retries                                                  = make([]int32, n)
	)
	for i, c := range calls {
		ids[i], providers[i], models[i], errTexts[i] = c.CallID, c.Provider, c.Model, c.Error
		if seqs != nil && seqs[i] > 0 {
			memSeq[i] = &seqs[i]
		}
		if !c.StartedAt.IsZero() {
			t := c.StartedAt
			started[i] = &t
		}
		prompt[i], cached[i], completion[i] = c.PromptTokens, c.CachedPromptTokens, c.CompletionTokens
		reasoning[i], composed[i], latency[i] = c.ReasoningTokens, c.ComposedTokens, c.LatencyMS
		retries[i], cost[i] = c.Retries, c.CostNanos
	}
	return []any{mysisID, ids, memSeq, started, providers, models, prompt, cached, completion, reasoning, composed,
		latency, retries, errTexts, cost, swarmShard(mysisID)}
}

// callsOf collects the LLM calls that travel with memories, with the seq each memory was stored under.
func callsOf(ms []memory.NewMemory, stored []memory.Memory) ([]memory.LlmCall, []int64) {
	var calls []memory.LlmCall
	var seqs []int64
	for i, n := range ms {
		if n.LlmCall != nil {
			calls = append(calls, *n.LlmCall)
			seqs = append(seqs, stored[i].Seq)
		}
	}
	return calls, seqs
}

// markDiscardedSQL sets a mysis's reply_discarded for discarded calls ($2) not stored yet: a retried record of a call
// already stored (perhaps before a final answer cleared the flag) sets nothing.
const markDiscardedSQL = `
UPDATE myses SET reply_discarded = true, updated_at = now()
WHERE id = $1 AND NOT reply_discarded AND NOT EXISTS (SELECT 1 FROM llm_calls WHERE call_id = ANY($2::uuid[]))`

// RecordLlmCalls stores calls that produced no memory (failed or discarded); a call_id already stored is skipped.
// It returns how many calls were new. A new discarded call sets the mysis's reply_discarded in the same
// transaction; the mysis row is locked before the spend rows, the order every append takes too.
func (s *Store) RecordLlmCalls(ctx context.Context, mysisID string, calls []memory.LlmCall) (int, error) {
	var discarded []string
	for _, c := range calls {
		if c.Discarded {
			discarded = append(discarded, c.CallID)
		}
	}
	var n int
	if len(discarded) == 0 {
		if err := s.pool.QueryRow(ctx, recordCallsSQL, recordCallsArgs(mysisID, calls, nil)...).Scan(&n); err != nil {
			return 0, dbErr(err, "record llm calls")
		}
		return n, nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, markDiscardedSQL, mysisID, discarded); err != nil {
			return err
		}
		return tx.QueryRow(ctx, recordCallsSQL, recordCallsArgs(mysisID, calls, nil)...).Scan(&n)
	})
	if err != nil {
		return 0, dbErr(err, "record llm calls")
	}
	return n, nil
}

// Aggregates over the running totals (all time) and over a range's rollup rows and calls (usageFilterOf).
const (
	totalsAggs = `coalesce(sum(u.calls), 0)::bigint AS calls, coalesce(sum(u.failed_calls), 0)::bigint AS failed,
		coalesce(sum(u.prompt_tokens), 0)::bigint AS prompt, coalesce(sum(u.cached_prompt_tokens), 0)::bigint AS cached,
		coalesce(sum(u.completion_tokens), 0)::bigint AS completion, coalesce(sum(u.reasoning_tokens), 0)::bigint AS reasoning,
		coalesce(sum(u.composed_tokens), 0)::bigint AS composed, coalesce(sum(u.latency_ms), 0)::bigint AS latency,
		coalesce(sum(u.retries), 0)::bigint AS retries, coalesce(sum(u.cost_nanos), 0)::bigint AS cost,
		min(u.first_call_at) AS first_at, max(u.last_call_at) AS last_at`
)

func totalsDest(t *memory.UsageTotals, first, last **time.Time) []any {
	return []any{&t.Calls, &t.FailedCalls, &t.PromptTokens, &t.CachedPromptTokens, &t.CompletionTokens,
		&t.ReasoningTokens, &t.ComposedTokens, &t.LatencyMS, &t.Retries, &t.CostNanos, first, last}
}

func setTimes(t *memory.UsageTotals, first, last *time.Time) {
	if first != nil {
		t.FirstCallAt = first.UTC()
	}
	if last != nil {
		t.LastCallAt = last.UTC()
	}
}

// GetUsage sums calls: all time from the running totals, a time range from the rollups and the call log's ragged
// edges (usageFilterOf). The total and one page of groups travel in one batch.
func (s *Store) GetUsage(ctx context.Context, q memory.UsageQuery) (memory.Usage, error) {
	f := usageFilterOf(q)
	b := &pgx.Batch{}
	b.Queue(`SELECT `+f.aggs+` FROM `+f.src+` WHERE `+f.cond, f.args...)
	switch q.GroupBy {
	case memory.GroupMysis:
		if q.Top > 0 && f.idsArg == "" {
			return s.topByCost(ctx, q, f)
		} else if q.Top > 0 {
			f.queueTop(b, q)
		} else {
			f.queueByMysis(b, q)
		}
	case memory.GroupModel:
		f.queueByModel(b, q)
	}
	br := s.pool.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()

	var out memory.Usage
	var first, last *time.Time
	if err := br.QueryRow().Scan(totalsDest(&out.Total, &first, &last)...); err != nil {
		return memory.Usage{}, dbErr(err, "get usage")
	}
	setTimes(&out.Total, first, last)
	if q.GroupBy == memory.GroupNone {
		return out, nil
	}
	rows, err := scanUsageRows(br)
	if err != nil {
		return memory.Usage{}, err
	}
	out.Rows = rows
	if len(out.Rows) > q.PageSize {
		out.Rows, out.More = out.Rows[:q.PageSize], true
	}
	return out, nil
}

// usageFilter is what GetUsage sums over: the source of the total and the by-model sums (the swarm rollup when
// the query names no mysis; otherwise the per-mysis running totals, or for a time range the per-mysis rollup and
// the call log's edges), its aggregates, and the condition on it with the condition's arguments ($1…$len(args)).
type usageFilter struct {
	src, aggs, cond string
	// walkSrc is the source for one mysis, m.id, of an outer walk over myses (by mysis).
	walkSrc string
	// mysisSrc is the selection's rows with their mysis (never the swarm rollup), conditions included: what a
	// ranking of myses sums.
	mysisSrc string
	args     []any
	ranged   bool
	// idsArg is the placeholder of the mysis ids ("" when the query names none).
	idsArg string
}

// rollupCols are the columns every part of a source has, in this order.
const rollupCols = `provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens, completion_tokens,
	reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at`

// usageFilterOf builds the filter for q. All time reads the running totals (per mysis, or the swarm rollup's all-time
// rows). A range reads whole days and whole hours from a rollup and the call log only for its edges (see
// rangeSegments), so it sums at most two hours of calls however long it is; each part carries its own conditions so
// each reads through its own index. Without named myses the total and by-model sums read the swarm rollup, a few
// rows per hour or day whatever the swarm's size.
func usageFilterOf(q memory.UsageQuery) usageFilter {
	f := usageFilter{aggs: totalsAggs, args: []any{}, cond: "TRUE", ranged: !q.From.IsZero() || !q.To.IsZero()}
	arg := func(v any) string {
		f.args = append(f.args, v)
		return "$" + strconv.Itoa(len(f.args))
	}
	const cols = ` AS u (mysis_id, provider, model, calls, failed_calls, prompt_tokens, cached_prompt_tokens,
		completion_tokens, reasoning_tokens, composed_tokens, latency_ms, retries, cost_nanos, first_call_at, last_call_at)`
	if len(q.MysisIDs) > 0 {
		f.idsArg = arg(q.MysisIDs)
	}
	if !f.ranged {
		f.walkSrc = `(SELECT mysis_id, ` + rollupCols + ` FROM llm_usage_totals WHERE mysis_id = m.id)` + cols
		f.mysisSrc = `(SELECT mysis_id, cost_nanos, calls FROM llm_usage_totals)`
		if f.idsArg != "" {
			f.src, f.cond = "llm_usage_totals u", "u.mysis_id = ANY("+f.idsArg+"::uuid[])"
			f.mysisSrc = `(SELECT mysis_id, cost_nanos, calls FROM llm_usage_totals WHERE mysis_id = ANY(` + f.idsArg + `::uuid[]))`
		} else {
			f.src = `(SELECT NULL::uuid, ` + rollupCols + ` FROM llm_usage_swarm_rollup WHERE span = 3)` + cols
		}
		return f
	}
	var parts, walk, ranked []string
	for _, seg := range rangeSegments(q.From, q.To) {
		col, where := "u.start", []string{"u.span = " + strconv.Itoa(int(seg.span))}
		sel := `SELECT u.mysis_id, u.provider, u.model, u.calls, u.failed_calls, u.prompt_tokens, u.cached_prompt_tokens,
			u.completion_tokens, u.reasoning_tokens, u.composed_tokens, u.latency_ms, u.retries, u.cost_nanos,
			u.first_call_at, u.last_call_at FROM llm_usage_rollup u WHERE `
		swarmSel := `SELECT NULL::uuid, ` + rollupCols + ` FROM llm_usage_swarm_rollup u WHERE `
		if seg.span == spanCalls {
			col, where = "u.started_at", nil
			sel = `SELECT u.mysis_id, u.provider, u.model, 1::bigint, (u.error <> '')::int::bigint, u.prompt_tokens,
				u.cached_prompt_tokens, u.completion_tokens, u.reasoning_tokens, u.composed_tokens, u.latency_ms,
				u.retries::bigint, u.cost_nanos, u.started_at, u.started_at FROM llm_calls u WHERE `
			swarmSel = sel
		}
		if !seg.from.IsZero() {
			where = append(where, col+" >= "+arg(seg.from))
		}
		if !seg.to.IsZero() {
			where = append(where, col+" < "+arg(seg.to))
		}
		walk = append(walk, sel+strings.Join(append(slices.Clone(where), "u.mysis_id = m.id"), " AND "))
		if f.idsArg != "" {
			where = append(where, "u.mysis_id = ANY("+f.idsArg+"::uuid[])")
		}
		rankWhere := " WHERE TRUE"
		if len(where) > 0 {
			rankWhere = " WHERE " + strings.Join(where, " AND ")
		}
		if seg.span == spanCalls {
			ranked = append(ranked, `SELECT u.mysis_id, u.cost_nanos, 1::bigint FROM llm_calls u`+rankWhere)
		} else {
			ranked = append(ranked, `SELECT u.mysis_id, u.cost_nanos, u.calls FROM llm_usage_rollup u`+rankWhere)
		}
		if f.idsArg == "" {
			sel = swarmSel
		}
		if len(where) == 0 {
			where = append(where, "TRUE")
		}
		parts = append(parts, sel+strings.Join(where, " AND "))
	}
	f.mysisSrc = `(` + strings.Join(ranked, "\n\t\tUNION ALL ") + `)`
	f.src = `(` + strings.Join(parts, "\n\t\tUNION ALL ") + `)` + cols
	f.walkSrc = `(` + strings.Join(walk, "\n\t\tUNION ALL ") + `)` + cols
	return f
}

// rollupSpan is where a segment of a range is summed from: the call log, or the rollup's hours or days (the
// numbers are llm_usage_rollup.span).
type rollupSpan int16

const (
	spanCalls rollupSpan = 0
	spanHour  rollupSpan = 1
	spanDay   rollupSpan = 2
)

// segment is the part [from, to) of a range summed from one source; a zero bound is open.
type segment struct {
	span     rollupSpan
	from, to time.Time
}

// rangeSegments splits [from, to) (a zero bound is open) into disjoint segments that cover it exactly: the
// ragged edges shorter than an hour from the call log, whole UTC hours up to the first and from the last whole day
// from the hourly rollup, and the whole UTC days between from the daily rollup. Every boundary inside the range is
// a whole hour or day, which is what the rollups are keyed by, so the sums are exact.
func rangeSegments(from, to time.Time) []segment {
	var out []segment
	hf, ht := from, to // the whole hours
	if !from.IsZero() {
		hf = ceilTo(from, time.Hour)
	}
	if !to.IsZero() {
		ht = to.Truncate(time.Hour)
	}
	if !from.IsZero() && !to.IsZero() && !hf.Before(ht) {
		return []segment{{spanCalls, from, to}}
	}
	if !from.IsZero() && from.Before(hf) {
		out = append(out, segment{spanCalls, from, hf})
	}
	if !to.IsZero() && ht.Before(to) {
		out = append(out, segment{spanCalls, ht, to})
	}
	df, dt := hf, ht // the whole days
	if !hf.IsZero() {
		df = ceilTo(hf, 24*time.Hour)
	}
	if !ht.IsZero() {
		dt = ht.Truncate(24 * time.Hour)
	}
	if !hf.IsZero() && !ht.IsZero() && !df.Before(dt) {
		return append(out, segment{spanHour, hf, ht})
	}
	if !hf.IsZero() && hf.Before(df) {
		out = append(out, segment{spanHour, hf, df})
	}
	if !ht.IsZero() && dt.Before(ht) {
		out = append(out, segment{spanHour, dt, ht})
	}
	return append(out, segment{spanDay, df, dt})
}

// ceilTo rounds t up to a multiple of d (counted from the zero time, so whole UTC hours and days).
func ceilTo(t time.Time, d time.Duration) time.Time {
	if tr := t.Truncate(d); !tr.Equal(t) {
		return tr.Add(d)
	}
	return t
}

// param is the placeholder of the filter's i-th extra argument (1-based), after its own.
func (f usageFilter) param(i int) string { return "$" + strconv.Itoa(len(f.args)+i) }

// queueByMysis queues one page of per-mysis sums, in name order after q.AfterName.
func (f usageFilter) queueByMysis(b *pgx.Batch, q memory.UsageQuery) {
	rowArgs := append(slices.Clone(f.args), q.AfterName, q.PageSize+1)
	// Walk myses in name order (its unique index) and sum each one's rows through the mysis-first index: a page
	// reads its own myses' rows, not the swarm's; myses without calls are skipped.
	mysisCond := "TRUE"
	if f.idsArg != "" {
		mysisCond = "m.id = ANY(" + f.idsArg + "::uuid[])"
	}
	// Each part of the range (edges, hours, days) is probed through its mysis-first index.
	b.Queue(`SELECT m.id::text, m.name, '', '', t.* FROM myses m
			CROSS JOIN LATERAL (SELECT `+f.aggs+` FROM `+f.walkSrc+`) t
			WHERE `+mysisCond+` AND m.name > `+f.param(1)+` AND t.calls > 0
			ORDER BY m.name LIMIT `+f.param(2), rowArgs...)
}

// queueTop queues the q.Top myses with the highest cost among the named myses (q.MysisIDs; over the whole swarm
// topByCost ranks instead, top.go), equal costs in name order: the selection's rows are summed per mysis by cost and
// calls alone to rank them (through the named myses' primary keys), only the myses at or above the Top-th highest
// cost are looked up for their names (ties at the cut included, so the order by name is exact), and only the
// winners' full sums are read, each through its mysis-first indexes.
func (f usageFilter) queueTop(b *pgx.Batch, q memory.UsageQuery) {
	rowArgs := append(slices.Clone(f.args), q.Top)
	b.Queue(`WITH ranked AS (
			SELECT r.mysis_id, sum(r.cost_nanos) AS cost FROM `+f.mysisSrc+` AS r (mysis_id, cost_nanos, calls)
			GROUP BY r.mysis_id HAVING sum(r.calls) > 0),
		cut AS (SELECT cost FROM ranked ORDER BY cost DESC OFFSET `+f.param(1)+` - 1 LIMIT 1),
		top AS (
			SELECT m.id, m.name, ranked.cost FROM ranked JOIN myses m ON m.id = ranked.mysis_id
			WHERE ranked.cost >= ALL (SELECT cost FROM cut)
			ORDER BY ranked.cost DESC, m.name LIMIT `+f.param(1)+`)
		SELECT m.id::text, m.name, '', '', t.* FROM top m
			CROSS JOIN LATERAL (SELECT `+f.aggs+` FROM `+f.walkSrc+`) t
			ORDER BY m.cost DESC, m.name`, rowArgs...)
}

// queueByModel queues one page of per-(provider, model) sums, in that order after (q.AfterProvider, q.AfterModel).
func (f usageFilter) queueByModel(b *pgx.Batch, q memory.UsageQuery) {
	rowArgs := append(slices.Clone(f.args), q.AfterProvider, q.AfterModel, q.PageSize+1)
	b.Queue(`SELECT '', '', u.provider, u.model, `+f.aggs+` FROM `+f.src+`
			WHERE `+f.cond+` AND (u.provider, u.model) > (`+f.param(1)+`, `+f.param(2)+`)
			GROUP BY u.provider, u.model ORDER BY u.provider, u.model LIMIT `+f.param(3), rowArgs...)
}

// scanUsageRows reads the batch's page of groups.
func scanUsageRows(br pgx.BatchResults) ([]memory.UsageRow, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, dbErr(err, "get usage")
	}
	defer rows.Close()
	var out []memory.UsageRow
	for rows.Next() {
		var r memory.UsageRow
		var first, last *time.Time
		dest := append([]any{&r.MysisID, &r.MysisName, &r.Provider, &r.Model}, totalsDest(&r.Totals, &first, &last)...)
		if err := rows.Scan(dest...); err != nil {
			return nil, dbErr(err, "get usage")
		}
		setTimes(&r.Totals, first, last)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "get usage")
	}
	return out, nil
}

// GetSpend returns the mysis's own limits and the mysis's and the swarm's counts in the windows containing at,
// in one batch.
func (s *Store) GetSpend(ctx context.Context, mysisID string, at time.Time) (memory.Spend, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM myses WHERE id = $1)`, mysisID)
	b.Queue(`SELECT win, unit, amount FROM spend_limits WHERE mysis_id = $1 ORDER BY win, unit`, mysisID)
	b.Queue(`SELECT win, start, tokens, cost_nanos FROM mysis_spend WHERE mysis_id = $1`, mysisID)
	b.Queue(`SELECT win, start, sum(tokens)::bigint, sum(cost_nanos)::bigint FROM swarm_spend GROUP BY win, start`)
	br := s.pool.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()

	var ok bool
	if err := br.QueryRow().Scan(&ok); err != nil {
		return memory.Spend{}, dbErr(err, "get spend")
	}
	if !ok {
		return memory.Spend{}, errMysisNotFound(mysisID)
	}
	var out memory.Spend
	rows, err := br.Query()
	if err != nil {
		return memory.Spend{}, dbErr(err, "get spend")
	}
	for rows.Next() {
		var l memory.SpendLimit
		if err := rows.Scan(&l.Window, &l.Unit, &l.Amount); err != nil {
			rows.Close()
			return memory.Spend{}, dbErr(err, "get spend")
		}
		out.Limits = append(out.Limits, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return memory.Spend{}, dbErr(err, "get spend")
	}
	if out.Mysis, err = scanCounts(br, at); err != nil {
		return memory.Spend{}, err
	}
	if out.Swarm, err = scanCounts(br, at); err != nil {
		return memory.Spend{}, err
	}
	return out, nil
}

// scanCounts reads (win, start, tokens, cost) rows and keeps, per window, the ones of the window containing at.
func scanCounts(br pgx.BatchResults, at time.Time) ([]memory.SpendCount, error) {
	out := []memory.SpendCount{
		{Window: memory.WindowHour, Start: memory.WindowHour.Start(at)},
		{Window: memory.WindowDay, Start: memory.WindowDay.Start(at)},
		{Window: memory.WindowTotal, Start: memory.TotalStart},
	}
	rows, err := br.Query()
	if err != nil {
		return nil, dbErr(err, "get spend")
	}
	defer rows.Close()
	for rows.Next() {
		var w memory.SpendWindow
		var start time.Time
		var tokens, cost int64
		if err := rows.Scan(&w, &start, &tokens, &cost); err != nil {
			return nil, dbErr(err, "get spend")
		}
		for i := range out {
			if out[i].Window == w && out[i].Start.Equal(start) {
				out[i].Tokens += tokens
				out[i].CostNanos += cost
			}
		}
	}
	return out, dbErr(rows.Err(), "get spend")
}

// SetSpendLimits replaces a mysis's own limits and returns them ordered by window and unit.
func (s *Store) SetSpendLimits(ctx context.Context, mysisID string, limits []memory.SpendLimit) ([]memory.SpendLimit, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, dbErr(err, "set spend limits")
	}
	defer rollback(ctx, tx)
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1 FROM myses WHERE id = $1 FOR KEY SHARE`, mysisID).Scan(&one); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, errMysisNotFound(mysisID)
		}
		return nil, dbErr(err, "set spend limits")
	}
	wins, units, amounts := make([]int16, len(limits)), make([]int16, len(limits)), make([]int64, len(limits))
	for i, l := range limits {
		wins[i], units[i], amounts[i] = int16(l.Window), int16(l.Unit), l.Amount
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM spend_limits WHERE mysis_id = $1`, mysisID)
	b.Queue(`INSERT INTO spend_limits (mysis_id, win, unit, amount)
		SELECT $1, w, u, a FROM unnest($2::smallint[], $3::smallint[], $4::bigint[]) AS x(w, u, a)`, mysisID, wins, units, amounts)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, dbErr(err, "set spend limits")
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, dbErr(err, "set spend limits")
	}
	out := slices.Clone(limits)
	slices.SortFunc(out, func(a, b memory.SpendLimit) int {
		if a.Window != b.Window {
			return int(a.Window) - int(b.Window)
		}
		return int(a.Unit) - int(b.Unit)
	})
	return out, nil
}
