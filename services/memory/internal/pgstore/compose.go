package pgstore

import (
	"time"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// The compose-window statement (window.go) returns rows of several kinds in one result; these typed NULLs fill the
// columns of the kinds a row is not.
const nullMysis = `NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::float8, NULL::text, NULL::text, NULL::text,
	NULL::int4, NULL::int8, NULL::int8, NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::boolean, NULL::text`

const nullMem = `NULL::int8, NULL::uuid, NULL::int8, NULL::int8, NULL::int2, NULL::int2, NULL::text, NULL::text,
	NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::text, NULL::uuid, NULL::timestamptz, NULL::text, NULL::text`

// nullBounds fills the window-bounds columns (the last five) of every row but the mysis row.
const nullBounds = `NULL::int8, NULL::int8, NULL::boolean, NULL::boolean, NULL::int8`

// composeRow receives one row of composeSQL; every column is nullable because each kind fills only its own.
type composeRow struct {
	kind int32
	// mysis
	yID, yName, yProvider, yModel, yPrompt, yState, yReason, yAccount *string
	yTemp                                                             *float64
	yEnc                                                              *int32
	yTurn, yLast                                                      *int64
	yCreated, yUpdated                                                *time.Time
	yDiscarded                                                        *bool
	yEndpoint                                                         *string
	// memory
	mID, mSeq, mTurn                                                            *int64
	mMysis, mSender, mContent, mReasoning, mCallID, mToolName, mKey, mBroadcast *string
	mRole, mSource                                                              *int16
	mToolCalls                                                                  []byte
	mCreated                                                                    *time.Time
	mCallArgs, mCallKey                                                         *string
	// window bounds, on the mysis row only: the recent part's start, the objective, whether the turn was truncated,
	// and what the statement left out because the caller holds it (the carried rows; the recent rows through wHeld)
	wStart, wObjective, wHeld *int64
	wTruncated, wSkip         *bool
}

func (r *composeRow) dest() []any {
	return []any{&r.kind,
		&r.yID, &r.yName, &r.yProvider, &r.yModel, &r.yTemp, &r.yPrompt, &r.yState, &r.yReason, &r.yEnc, &r.yTurn,
		&r.yLast, &r.yAccount, &r.yCreated, &r.yUpdated, &r.yDiscarded, &r.yEndpoint,
		&r.mID, &r.mMysis, &r.mSeq, &r.mTurn, &r.mRole, &r.mSource, &r.mSender, &r.mContent, &r.mReasoning,
		&r.mToolCalls, &r.mCallID, &r.mToolName, &r.mKey, &r.mBroadcast, &r.mCreated, &r.mCallArgs, &r.mCallKey,
		&r.wStart, &r.wObjective, &r.wTruncated, &r.wSkip, &r.wHeld}
}

func (r *composeRow) mysis() memory.Mysis {
	return memory.Mysis{
		ID: deref(r.yID), Name: deref(r.yName), Provider: deref(r.yProvider), Model: deref(r.yModel),
		Temperature: deref(r.yTemp), SystemPrompt: deref(r.yPrompt), State: memory.State(deref(r.yState)),
		StateReason: deref(r.yReason), EncouragementCount: deref(r.yEnc), CurrentTurn: deref(r.yTurn),
		LastSeq: deref(r.yLast), AccountUsername: deref(r.yAccount), CreatedAt: deref(r.yCreated),
		UpdatedAt: deref(r.yUpdated), ReplyDiscarded: deref(r.yDiscarded), SpaceMoltEndpoint: deref(r.yEndpoint),
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
		CreatedAt: deref(r.mCreated), CallArguments: deref(r.mCallArgs), CallKey: deref(r.mCallKey),
	}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
