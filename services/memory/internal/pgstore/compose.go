package pgstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// composeSQL answers GetComposeWindow in one statement, so one round trip and one snapshot: the mysis, its newest
// $2 memories, its current mission and, when it has none and $3 is set, the swarm's latest commander broadcast.
// Rows are told apart by the first column (0 mysis, 1 window, 2 mission, 3 global fallback); the columns of the
// other kinds are typed NULLs.
//
// Every part is an index probe whose cost does not depend on how long the mysis has played: the window walks the
// (mysis_id, seq) unique index backwards, the mission is the first entry of the partial index
// memories_mission_idx (its predicate is repeated here verbatim so the planner can use it), and the fallback is
// the first entry of broadcasts_commander_idx.
const composeSQL = `
WITH y AS (
	SELECT ` + mysisCols + ` FROM myses y WHERE y.id = $1
), w AS (
	SELECT ` + memCols + ` FROM memories m WHERE m.mysis_id = $1 ORDER BY m.seq DESC LIMIT $2
), mi AS (
	SELECT ` + memCols + ` FROM memories m
	WHERE m.mysis_id = $1 AND m.role = 2 AND m.source IN (1, 2) AND m.sender_id = ''
	ORDER BY m.seq DESC LIMIT 1
), g AS (
	SELECT b.id, b.content, b.created_at FROM broadcasts b
	WHERE $3::boolean AND b.sender_id = '' AND NOT EXISTS (SELECT 1 FROM mi)
	ORDER BY b.created_at DESC, b.id DESC LIMIT 1
)
SELECT 0, y.*, ` + nullMem + ` FROM y
UNION ALL SELECT 1, ` + nullMysis + `, w.* FROM w
UNION ALL SELECT 2, ` + nullMysis + `, mi.* FROM mi
UNION ALL SELECT 3, ` + nullMysis + `, 0::int8, $1::uuid, 0::int8, 0::int8, 2::int2, 2::int2, '', g.content, '',
	NULL::jsonb, '', '', NULL::text, g.id, g.created_at FROM g`

const nullMysis = `NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::float8, NULL::text, NULL::text, NULL::text,
	NULL::int4, NULL::int8, NULL::int8, NULL::text, NULL::timestamptz, NULL::timestamptz`

const nullMem = `NULL::int8, NULL::uuid, NULL::int8, NULL::int8, NULL::int2, NULL::int2, NULL::text, NULL::text,
	NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::text, NULL::uuid, NULL::timestamptz`

// composeRow receives one row of composeSQL; every column is nullable because each kind fills only its own.
type composeRow struct {
	kind int32
	// mysis
	yID, yName, yProvider, yModel, yPrompt, yState, yReason, yAccount *string
	yTemp                                                             *float64
	yEnc                                                              *int32
	yTurn, yLast                                                      *int64
	yCreated, yUpdated                                                *time.Time
	// memory
	mID, mSeq, mTurn                                                            *int64
	mMysis, mSender, mContent, mReasoning, mCallID, mToolName, mKey, mBroadcast *string
	mRole, mSource                                                              *int16
	mToolCalls                                                                  []byte
	mCreated                                                                    *time.Time
}

func (r *composeRow) dest() []any {
	return []any{&r.kind,
		&r.yID, &r.yName, &r.yProvider, &r.yModel, &r.yTemp, &r.yPrompt, &r.yState, &r.yReason, &r.yEnc, &r.yTurn,
		&r.yLast, &r.yAccount, &r.yCreated, &r.yUpdated,
		&r.mID, &r.mMysis, &r.mSeq, &r.mTurn, &r.mRole, &r.mSource, &r.mSender, &r.mContent, &r.mReasoning,
		&r.mToolCalls, &r.mCallID, &r.mToolName, &r.mKey, &r.mBroadcast, &r.mCreated}
}

func (r *composeRow) mysis() memory.Mysis {
	return memory.Mysis{
		ID: deref(r.yID), Name: deref(r.yName), Provider: deref(r.yProvider), Model: deref(r.yModel),
		Temperature: deref(r.yTemp), SystemPrompt: deref(r.yPrompt), State: memory.State(deref(r.yState)),
		StateReason: deref(r.yReason), EncouragementCount: deref(r.yEnc), CurrentTurn: deref(r.yTurn),
		LastSeq: deref(r.yLast), AccountUsername: deref(r.yAccount), CreatedAt: deref(r.yCreated),
		UpdatedAt: deref(r.yUpdated),
	}
}

func (r *composeRow) memory() (memory.Memory, error) {
	tcs, err := fromDBToolCalls(r.mToolCalls)
	if err != nil {
		return memory.Memory{}, err
	}
	return memory.Memory{
		ID: deref(r.mID), MysisID: deref(r.mMysis), Seq: deref(r.mSeq), Turn: deref(r.mTurn),
		Role: memory.Role(deref(r.mRole)), Source: memory.Source(deref(r.mSource)), SenderID: deref(r.mSender),
		Content: deref(r.mContent), Reasoning: deref(r.mReasoning), ToolCalls: tcs, ToolCallID: deref(r.mCallID),
		ToolName: deref(r.mToolName), IdempotencyKey: deref(r.mKey), BroadcastID: deref(r.mBroadcast),
		CreatedAt: deref(r.mCreated),
	}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// GetComposeWindow returns the mysis, its newest window memories (oldest first) and its current mission.
func (s *Store) GetComposeWindow(ctx context.Context, mysisID string, window int, globalFallback bool) (memory.ComposeWindow, error) {
	mysisID, err := memory.ParseID("mysis_id", mysisID)
	if err != nil {
		return memory.ComposeWindow{}, err
	}
	if window, err = memory.Limit("window", window, memory.DefaultWindow, memory.MaxWindow); err != nil {
		return memory.ComposeWindow{}, err
	}
	rows, err := s.pool.Query(ctx, composeSQL, mysisID, window, globalFallback)
	if err != nil {
		return memory.ComposeWindow{}, dbErr(err, "compose window")
	}
	defer rows.Close()
	var out memory.ComposeWindow
	found := false
	out.Memories = make([]memory.Memory, 0, window)
	for rows.Next() {
		var r composeRow
		if err := rows.Scan(r.dest()...); err != nil {
			return memory.ComposeWindow{}, dbErr(err, "compose window")
		}
		if r.kind == 0 {
			out.Mysis, found = r.mysis(), true
			continue
		}
		m, err := r.memory()
		if err != nil {
			return memory.ComposeWindow{}, err
		}
		switch r.kind {
		case 1:
			out.Memories = append(out.Memories, m)
		case 2:
			out.Mission = &memory.Mission{Memory: m}
		case 3:
			out.Mission = &memory.Mission{Memory: m, GlobalFallback: true}
		}
	}
	if err := rows.Err(); err != nil {
		return memory.ComposeWindow{}, dbErr(err, "compose window")
	}
	if !found {
		return memory.ComposeWindow{}, errMysisNotFound(mysisID)
	}
	// The window was read newest first to use the index backwards; the composer wants it chronological.
	slices.SortFunc(out.Memories, func(a, b memory.Memory) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}
