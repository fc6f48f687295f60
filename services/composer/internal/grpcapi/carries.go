package grpcapi

import (
	"slices"
	"strings"

	"github.com/maypok86/otter/v2"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// carries remembers the carried rows of each mysis's last whole window (those below its recent part's start: the
// newest result per call since the objective, pinned results, earlier replies, and their calls), so the next request
// can tell the memory service it holds them (CarryKnown) and the service skips reading them — the carry-over scan,
// whose cost grows with the time since the last commander order (docs/BENCHMARKS.md); when the compaction boundary
// has moved up since, the held rows' seqs let the service derive the new carried rows from them and the rows
// between the two starts instead of scanning again (the whole window comes back, and is held in their place). It is
// exact: every carried row
// lies below the recent part's start and memories are append-only, so while the objective, that start and the
// policy fields that decide the carried set stay the same, the carried rows are the same rows, byte for byte. The
// memory service compares the objective and the start; the policy fields are compared here (a request can override
// them). Like boundaries, it is a cache: a mysis it forgot (a restart, another replica, eviction) costs one whole
// window, never correctness. Bounded by the rows' bytes (otter, W-TinyLFU: the entries least likely to be used
// again go first).
type carries struct {
	c *otter.Cache[string, *carry]
}

// carry is one mysis's held carried rows and what they were read under.
type carry struct {
	known  CarryKnown
	policy carryPolicy
	rows   []compose.Memory
}

// carryPolicy is the part of a policy that decides the carried set (and the cut of its results): what the memory
// service is asked for besides the objective and the recent part's start.
type carryPolicy struct {
	carryLimit, replyLimit, resultCap int
	snapshot, pinned                  string // tool names joined by NUL: comparable
}

// DefaultCarryCacheBytes bounds the carried rows the composer holds (ZOEA_COMPOSE_CARRY_CACHE_BYTES): a mysis's
// carried rows are typically 10–200 KB (64 calls with their results, 3 replies), so this holds a few hundred to a
// few thousand myses.
const DefaultCarryCacheBytes = 64 << 20

// carryRowOverhead is what one held row costs besides its text (the compose.Memory and its slice slot), so a
// carry of many empty rows still weighs something.
const carryRowOverhead = 256

func newCarries(maxBytes int64) *carries {
	return &carries{c: otter.Must(&otter.Options[string, *carry]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(_ string, v *carry) uint32 { return v.weight() },
	})}
}

func policyOfCarry(p compose.Policy) carryPolicy {
	return carryPolicy{carryLimit: p.CarryLimit, replyLimit: p.ReplyLimit, resultCap: p.ToolResultCap,
		snapshot: strings.Join(p.SnapshotTools, "\x00"), pinned: strings.Join(p.PinnedTools, "\x00")}
}

// get returns the mysis's held carry when it was read under the same policy fields, else nil.
func (cs *carries) get(id string, p compose.Policy) *carry {
	if cs == nil {
		return nil
	}
	c, ok := cs.c.GetIfPresent(id)
	if !ok || c.policy != policyOfCarry(p) {
		return nil
	}
	return c
}

// put holds the carried rows of a whole window read under p (in.Window is ordered by seq), with their size as the
// memory service reported it (carry_bytes). A window without a recent part (a v1 memory service, no memories) or one
// whose carried rows the byte bound cut holds nothing.
func (cs *carries) put(id string, p compose.Policy, in compose.Input, r Relayed) {
	if cs == nil {
		return
	}
	if in.RecentStartSeq <= 0 || r.CarryCut {
		cs.c.Invalidate(id)
		return
	}
	n := slices.IndexFunc(in.Window, func(m compose.Memory) bool { return m.Seq >= in.RecentStartSeq })
	if n < 0 {
		n = len(in.Window)
	}
	rows := slices.Clone(in.Window[:n])
	seqs := make([]int64, len(rows))
	for i, m := range rows {
		seqs[i] = m.Seq
	}
	cs.c.Set(id, &carry{policy: policyOfCarry(p), rows: rows,
		known: CarryKnown{ObjectiveSeq: in.ObjectiveSeq, RecentStartSeq: in.RecentStartSeq, Bytes: r.CarryBytes, Seqs: seqs}})
}

// splice puts the held rows back before a window read without them: the whole window, as a full read returns it
// (ordered by seq: every held row lies below the recent part's start, every returned row at or above it).
func (c *carry) splice(recent []compose.Memory) []compose.Memory {
	return append(slices.Clip(c.rows), recent...)
}

func (c *carry) weight() uint32 {
	return uint32(min(c.known.Bytes+int64(len(c.rows)+1)*carryRowOverhead, 1<<32-1))
}
