// Package window is how the composer reads a mysis's compose window: the Windows port it declares (the
// memoryclient adapter implements it over the memory service's GetComposeWindow) and the cache in front of it, the
// carried rows of each mysis's last whole window (carries.go), which a restart may lose at the price of some work,
// never of correctness. Its per-request Relaying implements the composing use case's Windows port; the compose
// package (the pure algorithm) never sees it.
//
// The relay types carry zoea.memory.v1 messages the composer passes between the runner and the memory service
// unread: this is an application package, not the domain, and the import-rule test allows it that.
package window

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/composing"
)

// Windows reads what composing a mysis's next request needs (memoryclient.Client implements it over the memory
// service). Errors are libs/errs errors.
type Windows interface {
	// Window reads the compose window; recentFrom is the mysis's previous compaction boundary (0: unknown); known,
	// when not nil, names the carried rows the caller holds (Relayed.CarryOmitted: they were left out). The relay
	// travels in the same round trip: its rows are stored before the window is read.
	Window(ctx context.Context, mysisID string, p compose.Policy, recentFrom int64, known *CarryKnown, relay Relay) (compose.Input, Relayed, error)
}

// CarryKnown names the carried rows of an earlier whole window a caller holds (memory's carry_known): that window's
// objective and recent part's start, the rows' size as that window reported it (carry_bytes) and their seqs (from
// which the memory service derives the carried rows when the start has moved up, instead of scanning for them), and
// the recent rows held with them.
type CarryKnown struct {
	ObjectiveSeq, RecentStartSeq, Bytes int64
	Seqs                                []int64
	// RecentThrough and RecentBytes name the recent rows held with them: from RecentStartSeq through RecentThrough,
	// of that size as the window reported it (recent_bytes).
	RecentThrough, RecentBytes int64
}

// Relay is what the runner sends the memory service through the composer, which passes it on unread: memories to
// store before the window is read (the last tool result of a tool-loop iteration) and the time whose spend counts
// to read with it (issue 16: one memory round trip per iteration for all three).
type Relay struct {
	Append  []*memoryv1.NewMemory
	SpendAt *timestamppb.Timestamp
}

// Relayed is what comes back with the window besides the compose input: for the runner, the appended rows as stored,
// the mysis record and the spend (nil unless Relay.SpendAt was set); for the carry cache, what the memory service did
// with the carried rows.
type Relayed struct {
	Appended []*memoryv1.Memory
	Mysis    *memoryv1.Mysis
	Spend    *memoryv1.GetSpendResponse
	// CarryOmitted: the window's rows below its recent start were left out, as the known carry holds them.
	CarryOmitted bool
	// CarryCut: the memory service's byte bound left out some of the window's carried rows.
	CarryCut bool
	// CarryBytes: the carried rows' size as the memory service's byte bound counts it (carry_bytes), sent back as
	// CarryKnown.Bytes when they are held.
	CarryBytes int64
	// RecentOmittedThrough: when above 0, the recent rows through it were left out too (the known carry holds them).
	RecentOmittedThrough int64
	// RecentBytes: the recent part's size as the byte bound counts it (recent_bytes), sent back as
	// CarryKnown.RecentBytes when its rows are held.
	RecentBytes int64
}

// Reader reads windows through the Windows port and the carry cache. It is safe for concurrent use.
type Reader struct {
	memory  Windows
	carries *carries // nil: none held
}

// NewReader reads through memory, holding up to carryCacheBytes of carried rows over all myses (0 or less: none,
// every window is read whole).
func NewReader(memory Windows, carryCacheBytes int64) *Reader {
	r := &Reader{memory: memory}
	if carryCacheBytes > 0 {
		r.carries = newCarries(carryCacheBytes)
	}
	return r
}

// Read reads the compose window through the carry cache: it names the rows held for the mysis (when read under the
// same policy fields), splices them back when the memory service left them out, and holds every window it composes
// from instead.
func (r *Reader) Read(ctx context.Context, id string, p compose.Policy, recentFrom int64, relay Relay) (compose.Input, Relayed, error) {
	held := r.carries.get(id, p)
	var known *CarryKnown
	if held != nil {
		known = &held.known
	}
	in, relayed, err := r.memory.Window(ctx, id, p, recentFrom, known, relay)
	switch {
	case err != nil:
		return in, relayed, err
	case relayed.CarryOmitted && (held == nil || relayed.RecentOmittedThrough > 0 && relayed.RecentOmittedThrough != held.known.RecentThrough):
		return in, relayed, fmt.Errorf("memory GetComposeWindow for mysis %s left out rows it was not told the composer holds", id)
	case relayed.CarryOmitted:
		in.Window = held.splice(in.Window, relayed.RecentOmittedThrough > 0)
	}
	r.carries.put(id, p, in, relayed)
	return in, relayed, nil
}

// Relaying is one request's read through a Reader: it implements composing.Windows, passing the request's relay on
// in the same round trip, and keeps what came back with the window for the transport to return.
type Relaying struct {
	r     *Reader
	relay Relay
	// Relayed is what came back with the window, once Read has run.
	Relayed Relayed
}

// Relaying returns the reader for one request that relays relay.
func (r *Reader) Relaying(relay Relay) *Relaying { return &Relaying{r: r, relay: relay} }

// Read implements composing.Windows.
func (c *Relaying) Read(ctx context.Context, id string, p compose.Policy, recentFrom int64) (compose.Input, composing.Mysis, error) {
	in, relayed, err := c.r.Read(ctx, id, p, recentFrom, c.relay)
	c.Relayed = relayed
	m := relayed.Mysis
	return in, composing.Mysis{Known: m != nil, Provider: m.GetProvider(), Model: m.GetModel()}, err
}

// HeldWeight is the cache weight of the carried rows held for the mysis (0: none).
func (r *Reader) HeldWeight(id string) uint32 {
	if r.carries == nil {
		return 0
	}
	if c, ok := r.carries.c.GetIfPresent(id); ok {
		return c.weight()
	}
	return 0
}

// Held is how many myses' carried rows are held, once the cache's pending evictions are done.
func (r *Reader) Held() int {
	if r.carries == nil {
		return 0
	}
	r.carries.c.CleanUp()
	return r.carries.c.EstimatedSize()
}

// Fill is the carry cache's weight in bytes against its bound, and the myses it holds (no bound of their own: as
// many as fit); none when it holds nothing by design (stateless, or a bound of 0).
func (r *Reader) Fill() []composing.Fill {
	if r.carries == nil {
		return nil
	}
	c := r.carries.c
	return []composing.Fill{
		{Name: "composer.carries", Unit: "bytes", Size: int64(c.WeightedSize()), Bound: int64(c.GetMaximum())},
		{Name: "composer.carries.myses", Unit: "myses", Size: int64(c.EstimatedSize())},
	}
}
