package memoryrules

import (
	"fmt"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/text"
)

// Compose-window limits.
const (
	MaxCarryLimit      = 1000
	MaxReplyLimit      = 100
	DefaultMaxTurnRows = 2000
	MaxMaxTurnRows     = 10000
	MaxWindowToolNames = 100
	// CarryScanRows bounds the carry-over scan: distinct calls are looked for among the tool results since the
	// objective in the CarryScanRows memories before the recent part's start (a seq range, about 5,000 tool results
	// at one call per loop), so a mission that is 100,000 rows old does not make every compose read 100,000 index
	// entries. At SpaceMolt's pace that is several hours of play. A range rather than a count of results is what
	// lets a later start's carried rows be derived from an earlier start's (CarryKnown.Seqs): results leave the range
	// by their seq alone.
	CarryScanRows = 10000
	// MaxCarryKnownSeqs bounds CarryKnown.Seqs: more than every carried row a window can hold (MaxCarryLimit results
	// and their calls, MaxWindowToolNames pinned ones and theirs, MaxReplyLimit replies).
	MaxCarryKnownSeqs = 4096
	// CallLookback is how far back (in seq) the assistant memory that made a call is looked for, from a result
	// stored without its arguments or carried into a window. A loop has at most MaxToolCallsPerMsg results, and
	// broadcast deliveries may interleave with them.
	CallLookback = 256
)

// Compose-window byte bounds: a window of 50 rows of 2 MiB tool results, or one 20 MiB result, must still compose
// (the composer receives at most ZOEA_COMPOSE_MAX_WINDOW_BYTES, 64 MiB by default), never loop on an error.
const (
	// MaxResponseBytes bounds the text one read of recent memories returns. Rows count alone is no bound: 1000 rows
	// of 8 MiB tool results once made a single ListRecentMemories answer hundreds of MB (memory RSS 84 → 531 MB), and
	// a window of 50 such rows can never be composed. The newest row is always returned, whatever its size (at most
	// MaxContentBytes per field), so a reader always makes progress.
	MaxResponseBytes = 16 << 20
	// DefaultMaxResultBytes is the tool-result cut when the request names none: far above any composer's own
	// result cap (a few thousand tokens), so the composer's cap still decides what the model sees.
	DefaultMaxResultBytes = 256 << 10
	// MinMaxResultBytes is the smallest cut a request may ask for: enough to show what kind of result it was.
	MinMaxResultBytes = 1 << 10
)

// WindowQuery is a GetComposeWindow request. With only MysisID, Window and GlobalFallback set it is the v1 window:
// the newest Window memories. Setting any of CarryLimit, ReplyLimit, PinnedTools or MaxTurnRows asks for the v2
// window: the recent part grows back to the start of the current turn and onto a loop boundary, and carried rows
// are added before it.
type WindowQuery struct {
	MysisID        string
	Window         int
	GlobalFallback bool
	CarryLimit     int
	SnapshotTools  []string
	PinnedTools    []string
	ReplyLimit     int
	MaxTurnRows    int
	// MaxResultBytes cuts longer tool results (CutResult); 0 means DefaultMaxResultBytes. It does not make the
	// window v2.
	MaxResultBytes int
	// RecentFrom extends the recent part back to this seq (the composer's previous boundary); 0 = none.
	RecentFrom int64
	// Known is the carried part the caller holds (carry_known): when the window's objective and recent start equal
	// it, the rows below the start are not read (ComposeWindow.CarryOmitted). Zero = none held.
	Known CarryKnown
}

// CarryKnown names the carried rows a caller holds: those below RecentStartSeq of an earlier, whole window with this
// ObjectiveSeq, read under the same carry limit, snapshot and pinned tools, reply limit and result cut, and their
// size as Memory.Bytes counts it (that window's CarryBytes). RecentStartSeq 0 means none. Seqs, when given, are
// those rows' seqs: a window with the same objective whose recent part starts later derives its carried rows from
// them and the memories between the two starts (see pgstore's windowSQL) instead of scanning the span again.
//
// RecentThrough, when above 0, says the caller also holds that window's recent rows from RecentStartSeq through it,
// of size RecentBytes (that window's RecentBytes): while the objective and the start stay the same, they are left
// out with the carried rows (ComposeWindow.RecentOmittedThrough) and only the rows stored since are read.
type CarryKnown struct {
	ObjectiveSeq, RecentStartSeq, Bytes int64
	Seqs                                []int64
	RecentThrough, RecentBytes          int64
}

// V2 reports whether q asks for more than the v1 window.
func (q WindowQuery) V2() bool {
	return q.CarryLimit > 0 || q.ReplyLimit > 0 || len(q.PinnedTools) > 0 || q.MaxTurnRows > 0
}

// Normalize validates q and applies defaults and caps (larger values are lowered to the maximum, like every other
// limit of the service); errors name the API field.
func (q WindowQuery) Normalize() (WindowQuery, error) {
	var err error
	if q.MysisID, err = ParseID("mysis_id", q.MysisID); err != nil {
		return q, err
	}
	if q.Window, err = Limit("window", q.Window, DefaultWindow, MaxWindow); err != nil {
		return q, err
	}
	if q.CarryLimit, err = capped("carry_limit", q.CarryLimit, MaxCarryLimit); err != nil {
		return q, err
	}
	if q.ReplyLimit, err = capped("reply_limit", q.ReplyLimit, MaxReplyLimit); err != nil {
		return q, err
	}
	switch {
	case q.MaxResultBytes == 0:
		q.MaxResultBytes = DefaultMaxResultBytes
	case q.MaxResultBytes < MinMaxResultBytes:
		return q, errs.InvalidField("max_result_bytes", "must be 0 (the server default) or at least %d, got %d", MinMaxResultBytes, q.MaxResultBytes)
	case q.MaxResultBytes > MaxContentBytes:
		q.MaxResultBytes = MaxContentBytes
	}
	if q.MaxTurnRows < 0 {
		return q, errs.InvalidField("max_turn_rows", "must not be negative")
	}
	if q.RecentFrom < 0 {
		return q, errs.InvalidField("recent_from_seq", "must not be negative (0 means none), got %d", q.RecentFrom)
	}
	if err := q.Known.validate(); err != nil {
		return q, err
	}
	for _, l := range []struct {
		field string
		names []string
	}{{"snapshot_tools", q.SnapshotTools}, {"pinned_tools", q.PinnedTools}} {
		if len(l.names) > MaxWindowToolNames {
			return q, errs.InvalidField(l.field, "at most %d tool names, got %d", MaxWindowToolNames, len(l.names))
		}
		for i, n := range l.names {
			f := fmt.Sprintf("%s[%d]", l.field, i)
			if n == "" {
				return q, errs.InvalidField(f, "must not be empty")
			}
			if err := CheckText(f, n, MaxShortFieldBytes); err != nil {
				return q, err
			}
		}
	}
	return q, nil
}

// TurnRows is the bound on the recent part: max_turn_rows (default DefaultMaxTurnRows, capped at MaxMaxTurnRows),
// never below the window.
func (q WindowQuery) TurnRows() int {
	n := q.MaxTurnRows
	if n == 0 {
		n = DefaultMaxTurnRows
	}
	return max(min(n, MaxMaxTurnRows), q.Window)
}

// capped is Limit without a default: 0 stays 0 (off).
func capped(field string, v, max int) (int, error) {
	if v < 0 {
		return 0, errs.InvalidField(field, "must not be negative")
	}
	return min(v, max), nil
}

// For returns q for another mysis.
func (q WindowQuery) For(mysisID string) WindowQuery {
	q.MysisID = mysisID
	return q
}

// validate checks the held carry's fields, naming them as the API does.
func (k CarryKnown) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"carry_known.objective_seq", k.ObjectiveSeq}, {"carry_known.recent_start_seq", k.RecentStartSeq}, {"carry_known.bytes", k.Bytes},
		{"carry_known.recent_through_seq", k.RecentThrough}, {"carry_known.recent_bytes", k.RecentBytes}} {
		if f.v < 0 {
			return errs.InvalidField(f.name, "must not be negative, got %d", f.v)
		}
	}
	if k.RecentThrough > 0 && k.RecentThrough < k.RecentStartSeq {
		return errs.InvalidField("carry_known.recent_through_seq",
			"must be 0 (none held) or at least carry_known.recent_start_seq (%d), got %d", k.RecentStartSeq, k.RecentThrough)
	}
	if len(k.Seqs) > MaxCarryKnownSeqs {
		return errs.InvalidField("carry_known.seqs", "at most %d seqs, got %d", MaxCarryKnownSeqs, len(k.Seqs))
	}
	for i, seq := range k.Seqs {
		if seq <= 0 || seq >= k.RecentStartSeq {
			return errs.InvalidField(fmt.Sprintf("carry_known.seqs[%d]", i),
				"must be a held row's seq: positive and below carry_known.recent_start_seq (%d), got %d", k.RecentStartSeq, seq)
		}
	}
	return nil
}

// CutResult is a tool result's content as a window returns it: whole when it is at most max bytes, otherwise its
// first max bytes (on a rune boundary) and a marker saying how much was left out and which memory (id) holds all of
// it. The memory service and its fake both cut with it, so their windows are byte-identical.
func CutResult(content string, max int, id int64) string {
	if len(content) <= max {
		return content
	}
	kept := text.Cut(content, max)
	return kept + fmt.Sprintf("…[cut: %d bytes more; full result is memory #%d, search for it]", len(content)-len(kept), id)
}
