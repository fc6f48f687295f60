package replaybench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// Diagnosis is why Zoea v3 misses issue 28's targets on a replay: for every request whose prefix is broken within a
// turn, what broke it; for every state case not sent in full, and every planted fact neither present nor one search
// away, what the manifest says became of the row.
type Diagnosis struct {
	InTurn, Broken int
	BreakCauses    map[string]int
	StateCases     int
	StateMisses    map[string]int
	FactAsks       int
	FactMisses     map[string]int
	// Moves counts every boundary move by its compaction note's reason, and whether it came at a turn's first request.
	Moves map[string]int
	// MoveSum sums the budget moves' history before and after, growth per request, and counts them.
	MoveSum [4]int
	// AfterBy sums, over the budget moves, the kept items' tokens by reason (a carried result split by whether it is
	// a state case): what a budget move leaves.
	AfterBy map[string]int
	// Floor is the fewest in-turn breaks any composer could make on the same sessions (BreakFloor).
	Floor BreakFloor
	// Stale is issue 45's pattern: the requests that lost the newest result of a tool called in their own turn, how
	// many of them still sent an older, superseded result of the same call from the same turn in full, and those
	// results' tokens.
	Stale StaleState
}

// StaleState counts superseded state sent while newest state is not (Diagnosis.Stale).
type StaleState struct {
	Lost, LostStale, StaleTokens int
}

// Diagnose replays the sessions Run would generate through Zoea v3 alone (o.TuneV3 applied) and sorts its misses by
// cause.
func Diagnose(o Options) (Diagnosis, error) {
	tok, err := o200k.Load()
	if err != nil {
		return Diagnosis{}, err
	}
	tools := SpaceMoltTools()
	d := Diagnosis{BreakCauses: map[string]int{}, StateMisses: map[string]int{}, FactMisses: map[string]int{}, Moves: map[string]int{}, AfterBy: map[string]int{}}
	ctr := tok.NewCounter()
	toolTokens := ToolTokens(ctr, tools)
	pers := histgen.Personalities()
	p := compose.DefaultPolicy()
	budget := cmp.Or(o.Budget, p.TokenBudget)
	for i := range o.Sessions {
		s := session(o, i, pers)
		d.Floor.add(breakFloor(s, ctr, histgen.RealPrompt, toolTokens, budget, p.ToolResultCap))
		next := v2Session(histgen.RealPrompt, tok, tools, o.Budget, func(p *compose.Policy) {
			p.Compaction = compose.CompactionPriced
			p.Cache = compose.CacheAnthropic
			if o.TuneV3 != nil {
				o.TuneV3(p)
			}
		})
		asks := map[int][]histgen.Fact{}
		for _, f := range s.Facts {
			for _, k := range f.Asks {
				asks[k] = append(asks[k], f)
			}
		}
		var prev compose.Result
		prevAt, prevTotal := 0, 0
		for n, at := range s.Requests {
			rows := s.Rows[:at]
			res, err := next(rows)
			if err != nil {
				return d, fmt.Errorf("session %d request %d: %w", i, n, err)
			}
			items := map[int64]compose.Item{}
			for _, it := range res.Manifest.Items {
				items[it.MemoryID] = it
			}
			why := func(id int64) string {
				it, ok := items[id]
				if !ok {
					return "not in the window"
				}
				return string(it.Disposition) + ": " + string(it.Reason)
			}
			sent := map[string]string{}
			for _, m := range res.Messages {
				if m.Role == chat.RoleTool {
					sent[m.ToolCallID] = m.Content
				}
			}
			stateRows := StateRows(rows)
			for _, ri := range stateRows {
				d.StateCases++
				if c, ok := sent[rows[ri].ToolCallID]; !ok || c != rows[ri].Content {
					d.StateMisses[why(rows[ri].ID)]++
				}
			}
			d.Stale.add(rows, stateRows, sent, ctr)
			for _, f := range asks[n] {
				d.FactAsks++
				if present, pointer := FactSent(res.Messages, f.Text, s.Rows[f.Row].ID); !present && !pointer {
					d.FactMisses[why(s.Rows[f.Row].ID)]++
				}
			}
			total := HistoryTokens(ctr, res.Messages) + toolTokens
			if n > 0 && res.Manifest.Compaction != nil {
				where := "within a turn"
				if opensTurn(s.Rows[prevAt:at]) {
					where = "at a turn's first request"
				}
				d.Moves[res.Manifest.Compaction.Why+", "+where]++
				if cn := res.Manifest.Compaction; cn.Why == "budget" {
					d.MoveSum[0] += cn.Before
					d.MoveSum[1] += cn.After
					d.MoveSum[2] += cn.Growth
					d.MoveSum[3]++
					state := map[int64]bool{}
					for _, ri := range stateRows {
						state[rows[ri].ID] = true
					}
					for _, it := range res.Manifest.Items {
						why := string(it.Reason)
						if it.Reason == compose.ReasonCarried && state[it.MemoryID] {
							why += " (a state case)"
						}
						if it.Tokens > 0 {
							d.AfterBy[why] += it.Tokens
						}
					}
				}
			}
			if n > 0 && !opensTurn(s.Rows[prevAt:at]) {
				d.InTurn++
				if CachedPrefix(ctr, toolTokens, prev.Messages, res.Messages)+framingReply < prevTotal {
					d.Broken++
					d.BreakCauses[breakWhy(prev, res)]++
				}
			}
			prev, prevAt, prevTotal = res, at, total
		}
	}
	return d, nil
}

// add counts one request composed from rows that sent the tool results sent (by call id), whose state cases are
// stateRows.
func (st *StaleState) add(rows []compose.Memory, stateRows []int, sent map[string]string, ctr compose.Counter) {
	start := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if r := rows[i]; r.Role == chat.RoleUser && (r.Source == compose.SourceDirect || r.Source == compose.SourceBroadcast ||
			r.Source == compose.SourceNudge) {
			start = i
			break
		}
	}
	if start < 0 {
		return
	}
	full := func(r compose.Memory) bool { c, ok := sent[r.ToolCallID]; return ok && c == r.Content }
	lost := false
	for _, ri := range stateRows {
		if ri > start && !full(rows[ri]) {
			lost = true
		}
	}
	if !lost {
		return
	}
	st.Lost++
	args := map[string]string{}
	newer := map[string]bool{} // call keys with a newer result, walking back from the newest row
	stale := 0
	for i := start + 1; i < len(rows); i++ {
		for _, tc := range rows[i].ToolCalls {
			args[tc.ID] = tc.Arguments
		}
	}
	for i := len(rows) - 1; i > start; i-- {
		r := rows[i]
		if r.Role != chat.RoleTool {
			continue
		}
		key := r.ToolName + "\x00" + args[r.ToolCallID]
		if newer[key] && full(r) {
			stale += ctr.Count(r.Content)
		}
		newer[key] = true
	}
	if stale > 0 {
		st.LostStale++
		st.StaleTokens += stale
	}
}

// breakWhy names what broke the prefix from prev to res: a boundary move (and the compaction note's reason), the
// budget reducer (in either request), or the first differing message's kind.
func breakWhy(prev, res compose.Result) string {
	if res.Manifest.Boundary != prev.Manifest.Boundary || res.Manifest.CompactSeq != prev.Manifest.CompactSeq {
		if n := res.Manifest.Compaction; n != nil {
			return "boundary moved: " + n.Why
		}
		return "boundary moved without a note"
	}
	for _, it := range res.Manifest.Items {
		if strings.HasPrefix(string(it.Reason), "budget") || it.Reason == compose.ReasonBudget || it.Reason == compose.ReasonBudgetDropped {
			return "reducer: " + string(it.Reason)
		}
	}
	k := 0
	for k < min(len(prev.Messages), len(res.Messages)) && messageEqual(prev.Messages[k], res.Messages[k]) {
		k++
	}
	if k < len(prev.Messages) {
		m := prev.Messages[k]
		c := m.Content
		if len(c) > 40 {
			c = c[:40]
		}
		return fmt.Sprintf("first difference: %s %q", m.Role, c)
	}
	return "other"
}

// Table writes the diagnosis.
func (d Diagnosis) Table(w io.Writer) {
	list := func(title string, total int, m map[string]int) {
		fmt.Fprintf(w, "%s (%d of %d):\n", title, sum(m), total)
		keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(m[b]-m[a], strings.Compare(a, b)) })
		for _, k := range keys {
			fmt.Fprintf(w, "  %6d  %s\n", m[k], k)
		}
	}
	list("boundary moves", sum(d.Moves), d.Moves)
	if n := d.MoveSum[3]; n > 0 {
		fmt.Fprintf(w, "budget moves: mean history %d tokens before, %d after, growth %d per request\n", d.MoveSum[0]/n, d.MoveSum[1]/n, d.MoveSum[2]/n)
		mean := map[string]int{}
		for k, v := range d.AfterBy {
			mean[k] = v / n
		}
		list("a budget move's request, mean tokens by reason", sum(mean), mean)
	}
	list("prefix broken within a turn", d.InTurn, d.BreakCauses)
	if f := d.Floor; f.InTurn > 0 {
		pct := func(n int) float64 { return 100 * float64(n) / float64(f.InTurn) }
		fmt.Fprintf(w, "the fewest in-turn breaks any composer could make within the budget (of %d): %d (%.1f%%) keeping every state case; %d (%.1f%%) keeping only the newest loop\n",
			f.InTurn, f.State, pct(f.State), f.None, pct(f.None))
		if f.State > 0 {
			fmt.Fprintf(w, "keeping every state case, a break leaves %d history tokens on average\n", f.StateAfter/f.State)
		}
	}
	list("state not sent in full", d.StateCases, d.StateMisses)
	if st := d.Stale; st.Lost > 0 {
		mean := 0
		if st.LostStale > 0 {
			mean = st.StaleTokens / st.LostStale
		}
		fmt.Fprintf(w, "requests that lost the newest result of a tool called in their own turn: %d; of them sending a superseded result of the same turn in full: %d (%d tokens of it per request)\n",
			st.Lost, st.LostStale, mean)
	}
	list("planted facts neither present nor one search or recall away", d.FactAsks, d.FactMisses)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
