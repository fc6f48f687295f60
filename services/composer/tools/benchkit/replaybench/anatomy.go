package replaybench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// MoveAnatomy is where Zoea v2's prompt-cache misses come from. Most requests extend the previous one; a request
// whose compaction boundary moved shares only a prefix with it, and everything after the first message that differs
// is written to the provider's cache anew. It splits that rewrite into carried state (below the boundary) and live
// history, and counts what the previous request had at the first differing message and what became of it.
type MoveAnatomy struct {
	Requests   int // requests with a previous request of the same mysis
	Moves      int // of those, requests whose boundary moved
	Tokens     int64
	Cached     int64 // the shared prefix with the previous request, tools included (CachedPrefix)
	CarryKept  int64 // carried tokens before it
	CarryAgain int64 // carried tokens after it
	LiveAgain  int64 // live (above the boundary) tokens after it
	Causes     map[string]int
}

// carriedReasons are the manifest reasons of what sits below the compaction boundary and is sent.
var carriedReasons = map[compose.Reason]bool{compose.ReasonCarried: true, compose.ReasonCarriedPinned: true,
	compose.ReasonCarriedCall: true, compose.ReasonEarlierReply: true, compose.ReasonReplyCapped: true}

// Anatomy replays the sessions Run would generate through Zoea v2 alone (o.Only, o.Parallel ignored) and dissects
// every boundary move.
func Anatomy(o Options) (MoveAnatomy, error) {
	tok, err := o200k.Load()
	if err != nil {
		return MoveAnatomy{}, err
	}
	tools := SpaceMoltTools()
	a := MoveAnatomy{Causes: map[string]int{}}
	ctr := tok.NewCounter()
	toolTokens := ToolTokens(ctr, tools)
	pers := histgen.Personalities()
	for i := range o.Sessions {
		s := session(o, i, pers)
		next := v2Session(histgen.RealPrompt, tok, tools, o.Budget, v2Policy(o.Tune))
		var prev compose.Result
		for n, at := range s.Requests {
			res, err := next(s.Rows[:at])
			if err != nil {
				return a, fmt.Errorf("session %d request %d: %w", i, n, err)
			}
			if n > 0 {
				a.Requests++
				if res.Manifest.Boundary != prev.Manifest.Boundary {
					a.move(ctr, toolTokens, prev, res)
				}
			}
			prev = res
		}
	}
	return a, nil
}

// Rewritten is what the moves wrote anew: everything after the first differing message.
func (a MoveAnatomy) Rewritten() int64 { return a.CarryAgain + a.LiveAgain }

// move adds one boundary move, res following prev.
func (a *MoveAnatomy) move(tok Counter, toolTokens int, prev, res compose.Result) {
	a.Moves++
	carried := map[int]bool{}
	for _, it := range res.Manifest.Items {
		if it.Disposition != compose.Dropped && carriedReasons[it.Reason] {
			carried[it.MessageIndex] = true
		}
	}
	k := 0
	for k < min(len(prev.Messages), len(res.Messages)) && messageEqual(prev.Messages[k], res.Messages[k]) {
		k++
	}
	a.Tokens += int64(toolTokens)
	a.Cached += int64(CachedPrefix(tok, toolTokens, prev.Messages, res.Messages))
	for j, m := range res.Messages {
		n := int64(MessageTokens(tok, m))
		a.Tokens += n
		switch {
		case j < k && carried[j]:
			a.CarryKept += n
		case j < k:
		case carried[j]:
			a.CarryAgain += n
		default:
			a.LiveAgain += n
		}
	}
	a.Causes[breakCause(prev, res, k)]++
}

// breakCause names what the previous request had at message k, the first that differs, and what became of it.
func breakCause(prev, res compose.Result, k int) string {
	if k >= len(prev.Messages) {
		return "nothing differs: the request only appends"
	}
	for _, p := range prev.Manifest.Items {
		if p.Disposition == compose.Dropped || p.MessageIndex != k {
			continue
		}
		for _, c := range res.Manifest.Items {
			if c.Seq == p.Seq && (c.Disposition != p.Disposition || c.Reason != p.Reason) {
				return fmt.Sprintf("%s → %s (%s)", p.Reason, c.Disposition, c.Reason)
			}
		}
	}
	if k < len(res.Messages) && prev.Messages[k].Role == res.Messages[k].Role {
		return "same memories, message changed (its calls, or a text merged into it) or a memory inserted before"
	}
	return "a message inserted or removed"
}

// Table prints the anatomy as markdown.
func (a MoveAnatomy) Table(w io.Writer) {
	m := float64(max(a.Moves, 1))
	fmt.Fprintf(w, "%d requests after the first, %d boundary moves (%.1f%%)\n\n", a.Requests, a.Moves, pct(a.Moves, a.Requests))
	fmt.Fprintf(w, "| per move | tokens |\n|---|---:|\n")
	fmt.Fprintf(w, "| request (tools included) | %.0f |\n| written anew after the first differing message | %.0f |\n", float64(a.Tokens)/m, float64(a.Rewritten())/m)
	fmt.Fprintf(w, "| carried state before it (kept) | %.0f |\n| carried state after it (written again) | %.0f |\n| live history after it (written again) | %.0f |\n\n",
		float64(a.CarryKept)/m, float64(a.CarryAgain)/m, float64(a.LiveAgain)/m)
	fmt.Fprintf(w, "| first differing message: what the previous request had there → what became of it | moves |\n|---|---:|\n")
	causes := slices.SortedFunc(maps.Keys(a.Causes), func(x, y string) int {
		return cmp.Or(a.Causes[y]-a.Causes[x], cmp.Compare(x, y))
	})
	for _, c := range causes {
		fmt.Fprintf(w, "| %s | %d (%.0f%%) |\n", c, a.Causes[c], pct(a.Causes[c], a.Moves))
	}
}
