package window

import (
	"slices"
	"strings"

	"github.com/maypok86/otter/v2"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// carries remembers each mysis's last window: its carried rows (those below its recent part's start: the newest
// result per call since the objective, pinned results, earlier replies, and their calls) and its recent rows, so the
// next request can tell the memory service what it holds (CarryKnown) and the service skips reading it — the
// carry-over scan, whose cost grows with the time since the last commander order (docs/BENCHMARKS.md), and the
// recent rows already seen, so a request that extends the previous one reads only the rows stored since. When the
// compaction boundary has moved up since, the held rows' seqs let the service derive the new carried rows from them
// and the rows between the two starts instead of scanning again (the whole window comes back, and is held in their
// place). It is exact: memories are append-only, every carried row lies below the recent part's start, and the
// recent part is the contiguous rows from that start, so while the objective, that start and the policy fields that
// decide the window stay the same, the held rows are the same rows, byte for byte. The memory service compares the
// objective and the start; the policy fields are compared here (a request can override them). Like boundaries, it
// is a cache: a mysis it forgot (a restart, another replica, eviction) costs one whole window, never correctness.
// Bounded by the rows' bytes (otter, W-TinyLFU: the entries least likely to be used again go first).
type carries struct {
	c *otter.Cache[string, *carry]
}

// carry is one mysis's held window and what it was read under: rows[:recent] are its carried rows, rows[recent:]
// its recent rows. The rows are never written after they are held (compose copies its input).
type carry struct {
	known  CarryKnown
	policy carryPolicy
	rows   []compose.Memory
	recent int
}

// carryPolicy is the part of a policy that decides the carried set (and the cut of its results): what the memory
// service is asked for besides the objective and the recent part's start.
type carryPolicy struct {
	carryLimit, replyLimit, resultCap int
	snapshot, pinned                  string // tool names joined by NUL: comparable
}

// DefaultCarryCacheBytes bounds the windows the composer holds (ZOEA_COMPOSE_CARRY_CACHE_BYTES): a mysis's window
// is typically 20–300 KB (64 carried calls with their results, 3 replies, the recent part up to the high-water
// mark), so this holds a few hundred to a few thousand myses.
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

// put holds the window the mysis's request was composed from (in.Window: the whole window, ordered by seq, read
// under p, with the sizes the memory service reported in r). A window without a recent part (a v1 memory service,
// no memories) or one whose carried rows the byte bound cut holds nothing.
func (cs *carries) put(id string, p compose.Policy, in compose.Input, r Relayed) {
	if cs == nil {
		return
	}
	if in.RecentStartSeq <= 0 || r.CarryCut || len(in.Window) == 0 {
		cs.c.Invalidate(id)
		return
	}
	n := slices.IndexFunc(in.Window, func(m compose.Memory) bool { return m.Seq >= in.RecentStartSeq })
	if n < 0 {
		cs.c.Invalidate(id)
		return
	}
	seqs := make([]int64, n)
	for i, m := range in.Window[:n] {
		seqs[i] = m.Seq
	}
	cs.c.Set(id, &carry{policy: policyOfCarry(p), rows: in.Window, recent: n,
		known: CarryKnown{ObjectiveSeq: in.ObjectiveSeq, RecentStartSeq: in.RecentStartSeq, Bytes: r.CarryBytes, Seqs: seqs,
			RecentThrough: in.Window[len(in.Window)-1].Seq, RecentBytes: r.RecentBytes}})
}

// splice puts the held rows back before a window read without them: the carried rows, then, when the memory service
// left them out too (withRecent), the held recent rows, then the rows it returned — the whole window, as a full read
// returns it (every held carried row lies below the recent part's start, every held recent row below the rows
// returned).
func (c *carry) splice(returned []compose.Memory, withRecent bool) []compose.Memory {
	held := c.rows[:c.recent]
	if withRecent {
		held = c.rows
	}
	out := make([]compose.Memory, 0, len(held)+len(returned))
	return append(append(out, held...), returned...)
}

func (c *carry) weight() uint32 {
	return uint32(min(c.known.Bytes+c.known.RecentBytes+int64(len(c.rows)+1)*carryRowOverhead, 1<<32-1))
}
