package compose

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The carried index (composition v3). Below the compaction boundary the carry bound keeps the newest result of as
// many calls as fit; v2 dropped the others without a trace, so a fact seen once (a price at a station, a route, a
// catalog entry) vanished from the request at the next compaction. Under priced compaction those results are named
// instead, in one user line before the live part: per tool, the words of each call's arguments (what
// zoea_search_messages finds it by) and its memory id. The line is decided with the compacted past (by the
// compaction seq) from calls the window keeps until the next compaction (carryHorizon), so it stays byte for byte
// the same until the boundary moves again.

// indexArgsBytes bounds the argument words an index entry quotes.
const indexArgsBytes = 48

// indexEntry is one result the carried index names.
type indexEntry struct {
	seq   int64
	id    int64
	tool  string // the tool, or "tool.action" for an action-dispatched tool
	words string
}

// noteUncarried records the results of u, a unit below the boundary, that are the newest of their call as of the
// compaction, could be carried within the carry horizon, and were not (the carry bound left them out). Pinned
// results are always carried.
func (c *composer) noteUncarried(u *unit) {
	if !c.priced() || u.kind != kindLoop {
		return
	}
	for k := len(u.results) - 1; k >= 0; k-- {
		r := u.results[k]
		if r.newestB && r.inHorizon && !r.carryB && !r.pinned && c.eligible(r) {
			c.uncarried = append(c.uncarried, indexEntry{seq: u.seq, id: r.mem.ID, tool: r.tool,
				words: argWords(u.calls[k].Arguments, r.tool != r.name)})
		}
	}
}

// placeIndex inserts the carried index (when there is anything to name) right before the live part: the first
// stored unit from the boundary on, else before the trailing synthetic units (a new turn's nudge). Entries are
// grouped by tool (tools in the order of their oldest entry), oldest first within a tool.
func (c *composer) placeIndex(units []*unit) []*unit {
	if len(c.uncarried) == 0 {
		return units
	}
	entries := slices.Clone(c.uncarried)
	slices.Reverse(entries) // oldest first, like the history
	var tools []string
	byTool := map[string][]indexEntry{}
	for _, e := range entries {
		if _, ok := byTool[e.tool]; !ok {
			tools = append(tools, e.tool)
		}
		byTool[e.tool] = append(byTool[e.tool], e)
	}
	var b strings.Builder
	b.WriteString("[Earlier results not shown here; zoea_search_messages finds each by its tool and words, zoea_recall by its memory id (#). ")
	for i, t := range tools {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(t + ":")
		for j, e := range byTool[t] {
			if j > 0 {
				b.WriteString(",")
			}
			if e.words != "" {
				b.WriteString(" " + e.words)
			}
			fmt.Fprintf(&b, " #%d", e.id)
		}
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

// argWords is a call's arguments as an index entry quotes them: the scalar values (object keys in sorted order; an
// action-dispatched call's top-level "action" left out: the tool names it), space-separated, cut on a rune boundary;
// arguments that are not JSON by their text.
func argWords(args string, skipAction bool) string {
	var v any
	var words []string
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		words = []string{strings.TrimSpace(args)}
	} else {
		if m, ok := v.(map[string]any); ok && skipAction {
			delete(m, "action")
		}
		words = appendWords(words, v)
	}
	a := strings.Join(words, " ")
	if len(a) > indexArgsBytes {
		cut := indexArgsBytes
		for cut > 0 && !utf8.RuneStart(a[cut]) {
			cut--
		}
		a = a[:cut] + "…"
	}
	return a
}

func appendWords(words []string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			words = appendWords(words, x[k])
		}
	case []any:
		for _, e := range x {
			words = appendWords(words, e)
		}
	case nil:
	case string:
		if x != "" {
			words = append(words, x)
		}
	default: // json.Number, bool
		words = append(words, fmt.Sprint(x))
	}
	return words
}
