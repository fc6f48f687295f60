package compose

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The carried index (composition v3). Below the compaction boundary the carry bound keeps the newest result of as
// many calls as fit; v2 dropped the others without a trace, so a fact seen once (a price at a station, a route, a
// catalog entry) vanished from the request at the next compaction. Under priced compaction those results are named
// instead, in one user line before the live part: the call with its arguments (the words zoea_search_messages finds
// it by) and its memory id. The line is decided with the compacted past (by the compaction seq) and so stays byte
// for byte the same until the boundary moves again.

// IndexLimit is how many results the carried index names, newest first.
const IndexLimit = 32

// indexArgsBytes bounds the arguments an index entry quotes.
const indexArgsBytes = 64

// indexEntry is one result the carried index names.
type indexEntry struct {
	seq  int64
	id   int64
	name string
	args string
}

// noteUncarried records the results of u, a unit below the boundary, that are the newest of their call as of the
// compaction, could be carried, and were not (the carry bound left them out). Pinned results are always carried.
func (c *composer) noteUncarried(u *unit) {
	if !c.priced() || u.kind != kindLoop {
		return
	}
	for k := len(u.results) - 1; k >= 0; k-- {
		r := u.results[k]
		if r.newestB && !r.carryB && !r.pinned && c.eligible(r) {
			c.uncarried = append(c.uncarried, indexEntry{seq: u.seq, id: r.mem.ID, name: r.name, args: u.calls[k].Arguments})
		}
	}
}

// placeIndex inserts the carried index (when there is anything to name) right before the live part: the first
// stored unit from the boundary on, else before the trailing synthetic units (a new turn's nudge).
func (c *composer) placeIndex(units []*unit) []*unit {
	if len(c.uncarried) == 0 {
		return units
	}
	entries := c.uncarried[:min(len(c.uncarried), IndexLimit)]
	slices.Reverse(entries) // oldest first, like the history
	var b strings.Builder
	b.WriteString("[Earlier results not shown here, each one zoea_search_messages away: ")
	for i, e := range entries {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.name)
		if a := shortArgs(e.args); a != "" {
			b.WriteString(" " + a)
		}
		fmt.Fprintf(&b, " (memory #%d)", e.id)
	}
	if n := len(c.uncarried) - len(entries); n > 0 {
		fmt.Fprintf(&b, "; and %d older ones", n)
	}
	b.WriteString("]")
	ix := &unit{kind: kindIndex, idx: -1, turn: -1, content: b.String(), keep: true, section: secSynthetic}
	pos := len(units)
	for pos > 0 && units[pos-1].idx < 0 && units[pos-1].kind != kindMission {
		pos-- // before a trailing nudge
	}
	for i, u := range units {
		if u.idx >= 0 && u.seq >= c.boundary && u.kind != kindMission {
			pos = min(pos, i)
			break
		}
	}
	return slices.Insert(units, pos, ix)
}

// shortArgs is a call's arguments as an index entry quotes them: {} as nothing, long ones cut on a rune boundary.
func shortArgs(args string) string {
	a := strings.TrimSpace(args)
	if a == "{}" || a == "" {
		return ""
	}
	if len(a) > indexArgsBytes {
		cut := indexArgsBytes
		for cut > 0 && !utf8.RuneStart(a[cut]) {
			cut--
		}
		a = a[:cut] + "…"
	}
	return a
}
