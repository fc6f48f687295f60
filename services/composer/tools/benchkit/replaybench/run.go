package replaybench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// Options selects the replay.
type Options struct {
	Sessions int    // generated sessions (one mysis each), personalities round robin
	Seed     uint64 // session i uses Seed+i
	Calls    int    // tool calls per session at least; each session adds 0–150 more
	// Budget is the token ceiling a request must respect with its tool definitions; 0 = compose.DefaultPolicy's.
	Budget int
	// Only, if set, runs only the systems whose name contains it (case-insensitive).
	Only string
	// Parallel is the number of sessions replayed at once (at least 1).
	Parallel int
	// Tune, if set, changes Zoea v2's policy after the defaults (and Budget) are applied: the trade-off studies.
	Tune func(*compose.Policy)
	// Replicas, above 1, adds Zoea v2 composed by that many composer replicas taking turns, each starting from the
	// compaction it chose itself last (a caller that does not pass previous_compaction back).
	Replicas int
	// Shape sets how long objectives last (histgen.Shape; "" the original 150–400 calls); V2 plays the same calls on
	// SpaceMolt's MCP v2 endpoint (action-dispatched tools).
	Shape histgen.Shape
	V2    bool
	// TuneV3, if set, changes Zoea v3's policy after the defaults (and Budget) are applied.
	TuneV3 func(*compose.Policy)
}

// Stats is one system's measurements over every request of every session.
type Stats struct {
	System      string
	Requests    int
	Errors      int // composition refused (e.g. a *BudgetError); nothing would be sent
	InvalidOAI  int // rejected under chatvalid.OpenAI
	InvalidAnth int // rejected under chatvalid.Anthropic
	HistSum     int64
	HistMax     int
	ReqSum      int64 // history + tool definitions
	OverBudget  int   // history + tool definitions above the budget
	CovCases    int
	Covered     int
	TurnCases   int
	TurnCovered int
	MissionReqs int
	MissionHave int
	PrefixShare float64 // sum over sent requests of cached prefix / request tokens
	BilledA     float64
	BilledB     float64
	ComposeTime time.Duration
	// ToolBilledA is the part of BilledA spent on the tool definitions.
	ToolBilledA float64
	// InTurn counts the requests that follow another request of the same turn (no prompt between them), and
	// BrokenInTurn those of them that are not a pure extension of the previous request (its cached prefix is
	// shorter than the previous request).
	InTurn, BrokenInTurn int
	// FactAsks counts the requests that ask for a planted fact (histgen.Fact); FactPresent those holding it,
	// FactPointer those naming the memory that holds it (a stub, a cut result's pointer, the carried index or a dropped-results note: one search or recall away).
	FactAsks, FactPresent, FactPointer int
}

// FactPct is the share of planted-fact requests where the fact is in the request or one search or recall away.
func (s Stats) FactPct() float64 { return pct(s.FactPresent+s.FactPointer, s.FactAsks) }

// BrokenPct is the share of same-turn requests whose prefix is broken.
func (s Stats) BrokenPct() float64 { return pct(s.BrokenInTurn, s.InTurn) }

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// Sent is the number of requests that produced messages.
func (s Stats) Sent() int { return s.Requests - s.Errors }

// MeanHist is the mean history tokens per sent request.
func (s Stats) MeanHist() float64 { return float64(s.HistSum) / float64(max(s.Sent(), 1)) }

// CoveragePct is the state coverage in percent (refused requests count as uncovered).
func (s Stats) CoveragePct() float64 { return pct(s.Covered, s.CovCases) }

// MissionPct is the share of requests, among those with a mission, that carry it.
func (s Stats) MissionPct() float64 { return pct(s.MissionHave, s.MissionReqs) }

// PrefixPct is the mean cached-prefix share of a sent request, in percent.
func (s Stats) PrefixPct() float64 { return 100 * s.PrefixShare / float64(max(s.Sent(), 1)) }

// Result is a whole replay.
type Result struct {
	Options    Options
	Sessions   int
	Rows       int
	Requests   int
	Calls      int
	ToolTokens int
	Budget     int
	// StateCases are the coverage cases (the same for every system); Oversize of them are results above the default
	// result cap (compose.DefaultPolicy().ToolResultCap tokens), which no budgeted system can send in full.
	StateCases, Oversize int
	Stats                []Stats
	// ByPersonality holds the same stats per personality, in histgen.Personalities order.
	ByPersonality []PersonalityStats
}

// PersonalityStats is the replay of one personality's sessions.
type PersonalityStats struct {
	Personality string
	Sessions    int
	Stats       []Stats
}

// Run replays the generated sessions through every system.
func Run(o Options) (Result, error) {
	tok, err := o200k.Load()
	if err != nil {
		return Result{}, err
	}
	tools := SpaceMoltTools()
	budget := o.Budget
	if budget == 0 {
		budget = compose.DefaultPolicy().TokenBudget
	}
	res := Result{Options: o, Budget: budget}
	res.ToolTokens = ToolTokens(tok.NewCounter(), tools)
	pers := histgen.Personalities()
	keep := func(name string) bool {
		return o.Only == "" || strings.Contains(strings.ToLower(name), strings.ToLower(o.Only))
	}
	// Sessions run on Parallel workers; each session's stats are summed in session order, so the result does not
	// depend on scheduling.
	per := make([][]Stats, o.Sessions)
	errs := make([]error, o.Sessions)
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(o.Parallel, 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.Sessions {
					return
				}
				s := session(o, i, pers)
				mu.Lock()
				res.Sessions++
				res.Rows += len(s.Rows)
				res.Requests += len(s.Requests)
				res.Calls += s.Calls
				mu.Unlock()
				mtok := tok.NewCounter() // per session, so its memo stays bounded
				cases, over := stateCases(s, mtok, compose.DefaultPolicy().ToolResultCap)
				mu.Lock()
				res.StateCases += cases
				res.Oversize += over
				mu.Unlock()
				for _, sys := range Systems(tok, tools, o.Budget, o.Tune, o.TuneV3, o.Replicas) {
					if !keep(sys.Name) {
						continue
					}
					st := Stats{System: sys.Name}
					if err := replaySession(&st, sys, s, mtok, res.ToolTokens, budget); err != nil {
						errs[i] = err
						break
					}
					per[i] = append(per[i], st)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	sum := func(dst *[]Stats, ss []Stats) {
		if *dst == nil {
			*dst = make([]Stats, len(ss))
			for k := range ss {
				(*dst)[k].System = ss[k].System
			}
		}
		for k := range ss {
			(*dst)[k].add(ss[k])
		}
	}
	res.ByPersonality = make([]PersonalityStats, min(len(pers), o.Sessions))
	for i, ss := range per {
		sum(&res.Stats, ss)
		bp := &res.ByPersonality[i%len(pers)]
		bp.Personality = pers[i%len(pers)].Name
		bp.Sessions++
		sum(&bp.Stats, ss)
	}
	return res, nil
}

// session generates the i-th session of a replay: seed o.Seed+i, personalities round robin, o.Calls calls and 0–150
// more.
func session(o Options, i int, pers []histgen.Personality) histgen.RealSession {
	seed := o.Seed + uint64(i)
	extra := rand.New(rand.NewPCG(seed, 1)).IntN(151)
	return histgen.RealPlayWith(seed, o.Calls+extra, pers[i%len(pers)], histgen.RealOptions{Shape: o.Shape, V2: o.V2})
}

// stateCases counts a session's coverage cases and those whose result has more than capTokens tokens.
func stateCases(s histgen.RealSession, tok Counter, capTokens int) (cases, over int) {
	for _, at := range s.Requests {
		for _, i := range StateRows(s.Rows[:at]) {
			cases++
			if tok.Count(s.Rows[i].Content) > capTokens {
				over++
			}
		}
	}
	return cases, over
}

func (s *Stats) add(o Stats) {
	s.Requests += o.Requests
	s.Errors += o.Errors
	s.InvalidOAI += o.InvalidOAI
	s.InvalidAnth += o.InvalidAnth
	s.HistSum += o.HistSum
	s.HistMax = max(s.HistMax, o.HistMax)
	s.ReqSum += o.ReqSum
	s.OverBudget += o.OverBudget
	s.CovCases += o.CovCases
	s.Covered += o.Covered
	s.TurnCases += o.TurnCases
	s.TurnCovered += o.TurnCovered
	s.MissionReqs += o.MissionReqs
	s.MissionHave += o.MissionHave
	s.PrefixShare += o.PrefixShare
	s.BilledA += o.BilledA
	s.BilledB += o.BilledB
	s.ComposeTime += o.ComposeTime
	s.ToolBilledA += o.ToolBilledA
	s.InTurn += o.InTurn
	s.BrokenInTurn += o.BrokenInTurn
	s.FactAsks += o.FactAsks
	s.FactPresent += o.FactPresent
	s.FactPointer += o.FactPointer
}

// Systems returns the compared systems, in table order; with replicas above 1, Zoea v2 by that many forgetful
// replicas last.
func Systems(tok *o200k.Tokenizer, tools []ToolDef, budget int, tune, tuneV3 func(*compose.Policy), replicas int) []System {
	systems := []System{
		FullHistory(histgen.RealPrompt),
		LastN(histgen.RealPrompt, 20),
		SeedLoopSlice(histgen.RealPrompt),
		SeedTurnAware(histgen.RealPrompt),
		ZoeaV1(histgen.RealPrompt, tok, budget),
		ZoeaV2(histgen.RealPrompt, tok, tools, budget, tune),
		ZoeaV3(histgen.RealPrompt, tok, tools, budget, tuneV3),
		KeepEverything(histgen.RealPrompt, tok, tools, 0),
		KeepEverything(histgen.RealPrompt, tok, tools, max(budget, compose.DefaultPolicy().TokenBudget)),
	}
	if replicas > 1 {
		systems = append(systems, ZoeaV2Replicas(histgen.RealPrompt, tok, tools, budget, tune, replicas))
	}
	return systems
}

func replaySession(st *Stats, sys System, s histgen.RealSession, tok Counter, toolTokens, budget int) error {
	var prev []chat.Message
	prevTotal, prevAt := 0, 0
	asks := make(map[int][]histgen.Fact)
	for _, f := range s.Facts {
		for _, k := range f.Asks {
			asks[k] = append(asks[k], f)
		}
	}
	for k, at := range s.Requests {
		rows := s.Rows[:at]
		st.Requests++
		t0 := time.Now()
		msgs, err := sys.Compose(rows)
		st.ComposeTime += time.Since(t0)
		cases, covered := Coverage(rows, msgs)
		st.CovCases += cases
		tcases, tcovered := TurnCoverage(rows, msgs)
		st.TurnCases += tcases
		present, hasMission := MissionPresent(rows, msgs)
		if hasMission {
			st.MissionReqs++
		}
		for _, f := range asks[k] {
			st.FactAsks++
			if err != nil {
				continue
			}
			switch present, pointer := FactSent(msgs, f.Text, s.Rows[f.Row].ID); {
			case present:
				st.FactPresent++
			case pointer:
				st.FactPointer++
			}
		}
		inTurn := prev != nil && !opensTurn(s.Rows[prevAt:at])
		prevAt = at
		if err != nil {
			st.Errors++
			prev = nil
			continue
		}
		st.Covered += covered
		st.TurnCovered += tcovered
		if present {
			st.MissionHave++
		}
		if chatvalid.OpenAI.Validate(msgs) != nil {
			st.InvalidOAI++
		}
		if chatvalid.Anthropic.Validate(msgs) != nil {
			st.InvalidAnth++
		}
		hist := HistoryTokens(tok, msgs)
		total := hist + toolTokens
		st.HistSum += int64(hist)
		st.HistMax = max(st.HistMax, hist)
		st.ReqSum += int64(total)
		if total > budget {
			st.OverBudget++
		}
		prefix := CachedPrefix(tok, toolTokens, prev, msgs)
		if prefix > total {
			return fmt.Errorf("%s: cached prefix %d above request %d", sys.Name, prefix, total)
		}
		st.PrefixShare += float64(prefix) / float64(total)
		st.BilledA += BilledAnthropic(total, prefix)
		st.BilledB += BilledOpenAI(total, prefix)
		st.ToolBilledA += ToolBilledAnthropic(total, prefix, toolTokens)
		if inTurn {
			st.InTurn++
			if prefix+framingReply < prevTotal { // a pure extension caches all of the previous request but its reply priming
				st.BrokenInTurn++
			}
		}
		prev, prevTotal = msgs, total
	}
	return nil
}

// ToolBilledAnthropic is the part of BilledAnthropic(total, prefix) spent on the tool definitions, which lead
// every request: read from the cache when the cached prefix counts, written when it does not.
func ToolBilledAnthropic(total, prefix, toolTokens int) float64 {
	switch {
	case total < AnthropicMinPrefix:
		return float64(toolTokens)
	case prefix >= AnthropicMinPrefix && prefix >= toolTokens:
		return AnthropicCacheRead * float64(toolTokens)
	}
	return AnthropicCacheWrite * float64(toolTokens)
}

// opensTurn reports whether rows hold a prompt that opens a turn (direct, broadcast or nudge).
func opensTurn(rows []compose.Memory) bool {
	for _, r := range rows {
		if r.Role == chat.RoleUser && (r.Source == compose.SourceDirect || r.Source == compose.SourceBroadcast || r.Source == compose.SourceNudge) {
			return true
		}
	}
	return false
}

// FactSent reports whether a request holds a planted fact (present) or, failing that, names the memory holding it
// (a stub or a cut result's pointer "memory #ID": one search or recall away).
func FactSent(msgs []chat.Message, fact string, id int64) (present, pointer bool) {
	ref := fmt.Sprintf("#%d", id)
	for _, m := range msgs {
		if strings.Contains(m.Content, fact) {
			return true, false
		}
		if i := strings.Index(m.Content, ref); i >= 0 && !isDigitAt(m.Content, i+len(ref)) {
			pointer = true
		}
	}
	return false, pointer
}

func isDigitAt(s string, i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }

// PersonalityTable writes state coverage, mean history tokens and billed (a) per personality and system.
func (r Result) PersonalityTable(w io.Writer) {
	if len(r.ByPersonality) == 0 {
		return
	}
	fmt.Fprint(w, "| personality (sessions) |")
	for _, s := range r.ByPersonality[0].Stats {
		fmt.Fprintf(w, " %s |", s.System)
	}
	fmt.Fprint(w, "\n|---|")
	for range r.ByPersonality[0].Stats {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, p := range r.ByPersonality {
		fmt.Fprintf(w, "| %s (%d) |", p.Personality, p.Sessions)
		for _, s := range p.Stats {
			fmt.Fprintf(w, " %.1f%% · %s tok · %s |", s.CoveragePct(), thousands(int64(s.MeanHist()+0.5)),
				thousands(int64(s.BilledA/float64(max(s.Sent(), 1))+0.5)))
		}
		fmt.Fprintln(w)
	}
}

// Targets writes issue 10's targets for Zoea v2 as met or missed, measured against Zoea v1 on the same histories.
func (r Result) Targets(w io.Writer) {
	var v1, v2 *Stats
	for i := range r.Stats {
		switch r.Stats[i].System {
		case "Zoea v1":
			v1 = &r.Stats[i]
		case "Zoea v2":
			v2 = &r.Stats[i]
		}
	}
	if v1 == nil || v2 == nil {
		return
	}
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**missed**"
	}
	fmt.Fprintln(w, "| target (Zoea v2, default policy) | measured | verdict |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| state coverage ≥ 97%% with mean history tokens ≤ 3,000 | %.1f%% at %s tokens | %s |\n", v2.CoveragePct(),
		thousands(int64(v2.MeanHist()+0.5)), verdict(v2.CoveragePct() >= 97 && v2.MeanHist() <= 3000))
	inv := v2.InvalidOAI + v2.InvalidAnth + v2.Errors
	fmt.Fprintf(w, "| 0 invalid (OpenAI and Anthropic rules; refusals counted) | %d invalid OpenAI, %d invalid Anthropic, %d refused | %s |\n",
		v2.InvalidOAI, v2.InvalidAnth, v2.Errors, verdict(inv == 0))
	fmt.Fprintf(w, "| never over budget with tool schemas counted | %s of %s requests over %s tokens | %s |\n", thousands(int64(v2.OverBudget)),
		thousands(int64(v2.Sent())), thousands(int64(r.Budget)), verdict(v2.OverBudget == 0))
	a := 100 * (v2.BilledA/float64(max(v2.Sent(), 1)) - v1.BilledA/float64(max(v1.Sent(), 1))) / (v1.BilledA / float64(max(v1.Sent(), 1)))
	fmt.Fprintf(w, "| billed-equivalent (a) ≥ 25%% below Zoea v1 | %+.1f%% per request (%s vs %s) | %s |\n", a,
		thousands(int64(v2.BilledA/float64(max(v2.Sent(), 1))+0.5)), thousands(int64(v1.BilledA/float64(max(v1.Sent(), 1))+0.5)),
		verdict(a <= -25))
}

// Table writes the side-by-side table in Markdown.
func (r Result) Table(w io.Writer) {
	var v1 *Stats
	for i := range r.Stats {
		if r.Stats[i].System == "Zoea v1" {
			v1 = &r.Stats[i]
		}
	}
	rel := func(x, base float64) string {
		if v1 == nil || base == 0 {
			return "—"
		}
		return fmt.Sprintf("%+.0f%%", 100*(x-base)/base)
	}
	fmt.Fprintf(w, "%d sessions, %d tool calls, %d rows, %d requests; tool definitions %d tokens; budget %d tokens with tools; "+
		"%s state-coverage cases, %s (%.1f%%) of them results above the %s-token result cap\n\n",
		r.Sessions, r.Calls, r.Rows, r.Requests, r.ToolTokens, r.Budget, thousands(int64(r.StateCases)), thousands(int64(r.Oversize)),
		pct(r.Oversize, r.StateCases), thousands(int64(compose.DefaultPolicy().ToolResultCap)))
	fmt.Fprintln(w, "| system | mean history tok | max history tok | invalid OpenAI | invalid Anthropic | state coverage | in-turn coverage | mission present | prefix cached | billed (a) / req | (a) vs v1 | billed (b) / req | (b) vs v1 | over budget | refused | compose µs/req |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Stats {
		n := float64(max(s.Sent(), 1))
		a, b := s.BilledA/n, s.BilledB/n
		var ra, rb string
		if v1 != nil {
			v1n := float64(max(v1.Sent(), 1))
			ra, rb = rel(s.BilledA, v1.BilledA), rel(s.BilledB, v1.BilledB)
			if v1.Sent() != s.Sent() { // compare per sent request when refusals differ
				ra, rb = rel(a, v1.BilledA/v1n), rel(b, v1.BilledB/v1n)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %s | %s | %s | %s | %d | %d | %.0f |\n",
			s.System, thousands(int64(s.MeanHist()+0.5)), thousands(int64(s.HistMax)), pct(s.InvalidOAI, s.Sent()),
			pct(s.InvalidAnth, s.Sent()), s.CoveragePct(), pct(s.TurnCovered, s.TurnCases), s.MissionPct(), s.PrefixPct(), thousands(int64(a+0.5)), ra,
			thousands(int64(b+0.5)), rb, s.OverBudget, s.Errors, float64(s.ComposeTime.Microseconds())/float64(max(s.Requests, 1)))
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// V3Table writes composition v3's side-by-side table (issue 28): per system, mean and max history tokens, state
// kept, planted facts present or one search or recall away, invalid under both rules, prefix broken within a turn, billed (a)
// and (b) per request (and as a share of full history's), the tool definitions' share of (a), requests over budget.
func (r Result) V3Table(w io.Writer) {
	var full *Stats
	for i := range r.Stats {
		if r.Stats[i].System == "full history" {
			full = &r.Stats[i]
		}
	}
	per := func(s Stats, x float64) float64 { return x / float64(max(s.Sent(), 1)) }
	share := func(s Stats, x, fx float64) string {
		if full == nil || fx == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", per(s, x)/per(*full, fx))
	}
	fmt.Fprintf(w, "%d sessions (shape %q, endpoint %s), %d tool calls, %d requests; tool definitions %d tokens; budget %d; "+
		"%d planted-fact asks; %s state cases, %.1f%% of them results above the %s-token result cap (no budgeted system sends those whole)\n\n",
		r.Sessions, shapeName(r.Options.Shape), endpointName(r.Options.V2), r.Calls, r.Requests, r.ToolTokens, r.Budget, factAsks(r),
		thousands(int64(r.StateCases)), pct(r.Oversize, r.StateCases), thousands(int64(compose.DefaultPolicy().ToolResultCap)))
	fmt.Fprintln(w, "| system | mean hist tok | max hist tok | state kept | facts present / one search or recall away | invalid OpenAI / Anthropic | prefix broken in turn | billed (a) / req | (a) vs full | billed (b) / req | (b) vs full | tools' share of (a) | over budget | refused |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Stats {
		var fa, fb float64
		if full != nil {
			fa, fb = full.BilledA, full.BilledB
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f%% | %.1f%% (%.1f%% + %.1f%%) | %.1f%% / %.1f%% | %.1f%% | %s | %s | %s | %s | %.0f%% | %d | %d |\n",
			s.System, thousands(int64(s.MeanHist()+0.5)), thousands(int64(s.HistMax)), s.CoveragePct(),
			s.FactPct(), pct(s.FactPresent, s.FactAsks), pct(s.FactPointer, s.FactAsks),
			pct(s.InvalidOAI, s.Sent()), pct(s.InvalidAnth, s.Sent()), s.BrokenPct(),
			thousands(int64(per(s, s.BilledA)+0.5)), share(s, s.BilledA, fa), thousands(int64(per(s, s.BilledB)+0.5)), share(s, s.BilledB, fb),
			100*s.ToolBilledA/max(s.BilledA, 1), s.OverBudget, s.Errors)
	}
}

func factAsks(r Result) int {
	if len(r.Stats) == 0 {
		return 0
	}
	return r.Stats[0].FactAsks
}

func shapeName(s histgen.Shape) string {
	if s == "" {
		return "original: objectives of 150–400 calls"
	}
	return string(s)
}

func endpointName(v2 bool) string {
	if v2 {
		return "MCP v2 (tool.action)"
	}
	return "legacy /mcp"
}

// V3Targets writes issue 28's targets for Zoea v3 on this shape as met or missed.
func (r Result) V3Targets(w io.Writer) {
	var full, keep, v3 *Stats
	for i := range r.Stats {
		switch s := &r.Stats[i]; {
		case s.System == "full history":
			full = s
		case s.System == "keep everything, no budget":
			keep = s
		case s.System == "Zoea v3":
			v3 = s
		}
	}
	if full == nil || v3 == nil {
		return
	}
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**missed**"
	}
	a := v3.BilledA / float64(max(v3.Sent(), 1))
	fa := full.BilledA / float64(max(full.Sent(), 1))
	fmt.Fprintf(w, "| target (Zoea v3, shape %s) | measured | verdict |\n|---|---|---|\n", shapeName(r.Options.Shape))
	switch r.Options.Shape {
	case histgen.ShapeShort:
		fmt.Fprintf(w, "| state ≥ 99.5%% | %.1f%% | %s |\n", v3.CoveragePct(), verdict(v3.CoveragePct() >= 99.5))
		if keep != nil {
			ka := keep.BilledA / float64(max(keep.Sent(), 1))
			fmt.Fprintf(w, "| billed (a) ≤ keep-everything's and ≤ 0.27× full | %s vs %s; %.2f× full | %s |\n", thousands(int64(a+0.5)),
				thousands(int64(ka+0.5)), a/fa, verdict(a <= ka && a <= 0.27*fa))
		}
	case histgen.ShapeLong:
		fmt.Fprintf(w, "| state ≥ 80%% at ≤ 4,000 mean history tokens | %.1f%% at %s | %s |\n", v3.CoveragePct(), thousands(int64(v3.MeanHist()+0.5)),
			verdict(v3.CoveragePct() >= 80 && v3.MeanHist() <= 4000))
		fmt.Fprintf(w, "| billed (a) ≤ 0.35× full | %.2f× | %s |\n", a/fa, verdict(a <= 0.35*fa))
	}
	fmt.Fprintf(w, "| prefix broken within a turn ≤ 5%% | %.1f%% | %s |\n", v3.BrokenPct(), verdict(v3.BrokenPct() <= 5))
	fmt.Fprintf(w, "| planted facts ≥ 99%% present or one search or recall away | %.1f%% | %s |\n", v3.FactPct(), verdict(v3.FactPct() >= 99))
	fmt.Fprintf(w, "| 0 invalid | %d / %d, %d refused | %s |\n", v3.InvalidOAI, v3.InvalidAnth, v3.Errors, verdict(v3.InvalidOAI+v3.InvalidAnth+v3.Errors == 0))
	fmt.Fprintf(w, "| never over budget (tools counted) | %d | %s |\n", v3.OverBudget, verdict(v3.OverBudget == 0))
}
