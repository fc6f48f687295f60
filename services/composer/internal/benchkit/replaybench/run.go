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
	"github.com/zoeaswarm/zoea/services/composer/internal/benchkit/histgen"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
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
}

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
				for _, sys := range Systems(tok, tools, o.Budget, o.Tune, o.Replicas) {
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
	return histgen.RealPlay(seed, o.Calls+extra, pers[i%len(pers)])
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
}

// Systems returns the compared systems, in table order; with replicas above 1, Zoea v2 by that many forgetful
// replicas last.
func Systems(tok *o200k.Tokenizer, tools []ToolDef, budget int, tune func(*compose.Policy), replicas int) []System {
	systems := []System{
		FullHistory(histgen.RealPrompt),
		LastN(histgen.RealPrompt, 20),
		SeedLoopSlice(histgen.RealPrompt),
		SeedTurnAware(histgen.RealPrompt),
		ZoeaV1(histgen.RealPrompt, tok, budget),
		ZoeaV2(histgen.RealPrompt, tok, tools, budget, tune),
	}
	if replicas > 1 {
		systems = append(systems, ZoeaV2Replicas(histgen.RealPrompt, tok, tools, budget, tune, replicas))
	}
	return systems
}

func replaySession(st *Stats, sys System, s histgen.RealSession, tok Counter, toolTokens, budget int) error {
	var prev []chat.Message
	for _, at := range s.Requests {
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
		if err != nil {
			st.Errors++
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
		prev = msgs
	}
	return nil
}

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
