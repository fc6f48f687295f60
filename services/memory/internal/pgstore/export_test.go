package pgstore

import (
	"time"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// WindowSQL exposes the compose-window statement to the plan test.
func WindowSQL() string { return windowSQL }

// WindowArgs exposes its parameters for a query (normalised first).
func WindowArgs(q memory.WindowQuery) ([]any, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	return windowArgs(q), nil
}

// MaxGroupsInFlight is how many append groups run at once (group.go): a test holds that many leaders to make
// later calls queue.
const MaxGroupsInFlight = maxGroupsInFlight

// WithGroupHooks sets the group committer's test hooks: queued runs after a call joined the queue (with the
// queue's length), group before each group's transaction (with its myses, in the group's order) and may block it.
func WithGroupHooks(queued func(n int), group func(myses []string)) Option {
	return func(s *Store) { s.groups.hooks = groupHooks{queued: queued, group: group} }
}

// HeadlineOpts and SnippetInputChars let the search reference test compute snippets the way the service does.
const (
	HeadlineOpts      = headlineOpts
	SnippetInputChars = snippetInputChars
)

// RangeSegment is one part of a usage range as GetUsage sums it: span 0 the call log, 1 hours, 2 days.
type RangeSegment struct {
	Span     int
	From, To time.Time
}

// RangeSegments exposes how GetUsage splits a range.
func RangeSegments(from, to time.Time) []RangeSegment {
	var out []RangeSegment
	for _, s := range rangeSegments(from, to) {
		out = append(out, RangeSegment{int(s.span), s.from, s.to})
	}
	return out
}

// WithTopTrace has the store tell trace how each top-by-cost ranking over the whole swarm ended.
func WithTopTrace(trace func(how TopHow)) Option { return func(s *Store) { s.topTrace = trace } }

// WithSnapshotBuilt has the snapshotter tell built of every build it ran and its error.
func WithSnapshotBuilt(u *UsageSnapshotter, built func(start time.Time, err error)) *UsageSnapshotter {
	u.built = built
	return u
}

// MaxBeforeMarks is how many usage snapshots pruning keeps.
const MaxBeforeMarks = maxBeforeMarks
