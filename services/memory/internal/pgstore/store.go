// Package pgstore keeps the memory service's data in Postgres. Its SQL lives next to the methods that run it, is
// always parameterised, and every Postgres failure leaves here as an errs kind (unique violation → Exists, unknown
// reference → NotFound, a lost serialization race or deadlock → Aborted, unreachable server → Unavailable), so
// callers never see pgx types. Store implements memory.Store: its arguments come validated and normalised from
// memory.Service, so it checks only what needs the data (existence, uniqueness, conditions under a row lock).
package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Sealer encrypts account passwords for storage; secretbox.Box implements it.
type Sealer interface {
	Seal(plain, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

// Store is the Postgres implementation of the memory service's storage (memory.Store).
type Store struct {
	pool     *pgxpool.Pool
	box      Sealer
	asyncFTS bool
	groups   *committer // group commit of small appends (group.go)
	// topTrace, when set (tests), is told how each top-by-cost ranking ended (top.go).
	topTrace func(how TopHow)
	// snapWant carries the hours whose cost snapshot a ranking asked for to the UsageSnapshotter (before.go).
	snapWant chan time.Time
}

var _ memory.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithAsyncFTS makes appends leave the full-text vector of tool results to the background indexer (Indexer,
// IndexPending): a tool result becomes searchable within one indexer interval instead of at once, and the append
// skips the most expensive part of its work. Without it every row is indexed in its own append.
func WithAsyncFTS() Option {
	return func(s *Store) { s.asyncFTS = true }
}

// New returns a Store on pool. box may be nil: then account creation and reads fail with a Conflict
// (FailedPrecondition) that names ZOEA_SECRET_KEY, and everything else works.
func New(pool *pgxpool.Pool, box Sealer, opts ...Option) *Store {
	s := &Store{pool: pool, box: box, snapWant: make(chan time.Time, 16)}
	s.groups = &committer{run: s.runAppendGroup}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Ping checks that Postgres answers; it is the service's readiness check.
func (s *Store) Ping(ctx context.Context) error {
	return s.pool.Ping(ctx)
}

// dbErr classifies a Postgres error. what names the object the statement was about, for messages.
func dbErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgerrcode.UniqueViolation:
			switch pe.ConstraintName {
			case "myses_name_key":
				return &errs.Error{Kind: errs.Exists, Msg: "a mysis with this name already exists", Err: err, Reason: errs.ReasonMysisNameTaken}
			case "accounts_pkey":
				return &errs.Error{Kind: errs.Exists, Msg: "an account with this username already exists", Err: err, Reason: errs.ReasonAccountUsernameTaken}
			case "accounts_mysis_id_key":
				return &errs.Error{Kind: errs.Conflict, Msg: "the mysis already holds an account", Err: err, Reason: errs.ReasonAccountAlreadyBound}
			case "broadcasts_pkey":
				return &errs.Error{Kind: errs.Exists, Msg: "broadcast already exists", Err: err}
			}
			return &errs.Error{Kind: errs.Exists, Msg: what + " already exists", Err: err}
		case pgerrcode.ForeignKeyViolation: // the only references are to myses
			return &errs.Error{Kind: errs.NotFound, Msg: "mysis not found", Err: err}
		case pgerrcode.CharacterNotInRepertoire, pgerrcode.UntranslatableCharacter:
			return &errs.Error{Kind: errs.Invalid, Msg: "text Postgres cannot store (NUL byte or invalid UTF-8)", Err: err}
		case pgerrcode.InvalidTextRepresentation: // a malformed uuid that slipped past validation
			return &errs.Error{Kind: errs.Invalid, Msg: "malformed value", Err: err}
		case pgerrcode.SerializationFailure, pgerrcode.DeadlockDetected:
			// A concurrent transaction won: the same call retried at once will usually succeed.
			return errs.Abortedf(err, "%s: concurrent update, retry", what)
		case pgerrcode.LockNotAvailable: // a lock wait timed out: the other holder may take a while
			return errs.Unavailablef(err, "%s: busy, retry later", what)
		case pgerrcode.InternalError:
			// The one internal error a caller can cause: a search with too many operators for the parser.
			if strings.Contains(pe.Message, "tsquery stack too small") {
				return &errs.Error{Kind: errs.Invalid, Field: "query", Msg: "too many operators (such as -word) to search for", Err: err}
			}
		}
	}
	// Connection exceptions, shutdowns, restarts and dropped connections ("unexpected EOF" in an immediate stop)
	// are worth a retry: Unavailable, not Internal.
	if pgutil.Retryable(err) {
		return errs.Unavailablef(err, "database unavailable")
	}
	return fmt.Errorf("%s: %w", what, err)
}

// rollback ends tx when the function did not commit; its error is irrelevant then.
func rollback(ctx context.Context, tx pgx.Tx) {
	_ = tx.Rollback(context.WithoutCancel(ctx))
}

// toolCallJSON is the stored shape of one tool call. Arguments is kept as a JSON string so its bytes survive.
type toolCallJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toDBToolCalls encodes tool calls for the jsonb column; nil (SQL NULL) when there are none.
func toDBToolCalls(tcs []memory.ToolCall) (*string, error) {
	if len(tcs) == 0 {
		return nil, nil
	}
	out := make([]toolCallJSON, len(tcs))
	for i, tc := range tcs {
		out[i] = toolCallJSON(tc)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

func fromDBToolCalls(b []byte) ([]memory.ToolCall, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var in []toolCallJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("decode tool_calls: %w", err)
	}
	out := make([]memory.ToolCall, len(in))
	for i, tc := range in {
		out[i] = memory.ToolCall(tc)
	}
	return out, nil
}

// memCols is the column list every memory read returns, in memRow.dest order: memColsHead, the content, then
// memColsTail.
const memCols = memColsHead + memContentSQL + ` AS content, ` + memColsTail

const (
	memColsHead = `m.id, m.mysis_id, m.seq, m.turn, m.role, m.source, m.sender_id, `
	memColsTail = `m.reasoning, m.tool_calls, m.tool_call_id, m.tool_name, m.idempotency_key, m.broadcast_id,
	m.created_at, m.call_arguments_json, m.call_key`
)

// memContentSQL is the content of memory m. A broadcast is stored once, in broadcasts (migration 00005): its
// deliveries are light memory rows (role user, source broadcast, broadcast_id set) with empty content and no
// full-text vector of their own, and every read resolves their content from the broadcast row by primary key. A
// delivery whose broadcast row is missing (none today: broadcasts are never deleted) falls back to its own column.
const memContentSQL = `CASE WHEN m.broadcast_id IS NULL THEN m.content
	ELSE coalesce((SELECT bc.content FROM broadcasts bc WHERE bc.id = m.broadcast_id), m.content) END`

// memRow receives one memory row.
type memRow struct {
	m         memory.Memory
	toolCalls []byte
	key       *string
	bid       *string
	callArgs  *string
	callKey   *string
}

func (r *memRow) dest() []any {
	return []any{&r.m.ID, &r.m.MysisID, &r.m.Seq, &r.m.Turn, &r.m.Role, &r.m.Source, &r.m.SenderID, &r.m.Content,
		&r.m.Reasoning, &r.toolCalls, &r.m.ToolCallID, &r.m.ToolName, &r.key, &r.bid, &r.m.CreatedAt, &r.callArgs, &r.callKey}
}

func (r *memRow) memory() (memory.Memory, error) {
	m := r.m
	if r.key != nil {
		m.IdempotencyKey = *r.key
	}
	if r.bid != nil {
		m.BroadcastID = *r.bid
	}
	m.CallArguments, m.CallKey = deref(r.callArgs), deref(r.callKey)
	tcs, err := fromDBToolCalls(r.toolCalls)
	if err != nil {
		return memory.Memory{}, err
	}
	m.ToolCalls = tcs
	return m, nil
}

// collectMemories reads every row of rows as a memory, with extra destinations appended after the memory columns.
func collectMemories(rows pgx.Rows, what string) ([]memory.Memory, error) {
	defer rows.Close()
	var out []memory.Memory
	for rows.Next() {
		var r memRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, dbErr(err, what)
		}
		m, err := r.memory()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, what)
	}
	return out, nil
}

// nullable turns "" into SQL NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
