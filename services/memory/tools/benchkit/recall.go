package benchkit

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// benchEpoch is when generated recall histories start (fixed, so the same flags load the same rows).
var benchEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RecallMain runs `memorybench recall`: search recall measured against answers known in advance, through the
// service's SearchMessages as every caller reaches it.
//
//   - LoCoMo (-locomo PATH, a local copy; see locomo.go): each conversation is one mysis (speaker A's turns as the
//     commander's messages, speaker B's as the mysis's replies), optionally followed by -game newer generated game
//     memories; each answerable question (categories 1–4) is asked as written, and its gold evidence turns are the
//     answer.
//   - Planted facts (-planted sizes): generated game histories with facts planted at every age (planted.go), asked
//     in other words.
//
// For each it reports recall@5/10/20 (the share of a question's evidence rows among the first k hits, averaged
// over questions), the share of questions with no hit at all, recall@10 by the evidence's age and per-search
// latency; with -ref, the same for exhaustive BM25 over the same vectors (bm25ref.go). -concurrency N adds a
// latency run on the largest planted history: N concurrent searchers while an appender writes to the same mysis.
func RecallMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	db := fs.String("db", dbURL, "database URL (migrated if needed; the bench adds myses named recall-…)")
	locomo := fs.String("locomo", "", "LoCoMo data: data/locomo10.json or the directory data/locomo10.zip unpacks to (empty: skip)")
	games := fs.String("game", "0,20000", "LoCoMo: newer generated game memories after each conversation, one run per value")
	convs := fs.Int("conversations", 0, "LoCoMo: use only the first N conversations (0: all)")
	planted := fs.String("planted", "1000,100000", "planted-facts history sizes (empty: skip)")
	modes := fs.String("modes", "asked", "query forms: asked (the question as written), or (its words joined by OR)")
	ref := fs.Bool("ref", true, "also compute the exhaustive BM25 reference on the same vectors")
	limit := fs.Int("limit", 20, "hits asked for per search (recall@k needs k ≤ limit)")
	conc := fs.Int("concurrency", 0, "concurrent searchers for the latency run on the largest planted history (0: none)")
	concCalls := fs.Int("concurrency-calls", 1600, "searches in the latency run")
	out := fs.String("out", "", "also write the report to this file")
	seed := fs.Uint64("seed", 1, "random seed of the generated histories")
	reuse := fs.String("reuse", "", "LoCoMo: evaluate the conversations an earlier run on this database loaded (its run id, the myses' name suffix) instead of loading them again")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pgutil.Open(ctx, *db, "zoea-benchkit", 24)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool, log); err != nil {
		return err
	}
	store := pgstore.New(pool, nil)
	rb := &recallBench{ctx: ctx, log: log, pool: pool, store: store, svc: memory.NewService(store), limit: *limit,
		ref: *ref, run: fmt.Sprintf("%06x", rand.Uint32()&0xffffff)}
	if *reuse != "" {
		rb.run, rb.reuse = *reuse, true
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "asked" && m != "or" {
			return fmt.Errorf("-modes: unknown form %q", m)
		}
		rb.modes = append(rb.modes, strings.TrimSpace(m))
	}
	rb.report("# memorybench recall (%s, run %s)\n\nlimit %d; recall@k = share of a question's evidence rows among its first k hits, "+
		"averaged over questions; zero-hit = questions with no hit at all; by age = recall@10 of the evidence rows in that "+
		"age group; latency = one search at a time, snippets on.\n", time.Now().UTC().Format("2006-01-02 15:04"), rb.run, *limit)
	if *locomo != "" {
		cs, err := loadLoCoMo(*locomo)
		if err != nil {
			return err
		}
		if *convs > 0 && *convs < len(cs) {
			cs = cs[:*convs]
		}
		for _, g := range splitInts(*games) {
			if err := rb.locomo(cs, g, *seed); err != nil {
				return err
			}
		}
	}
	var largest string
	var largestFacts []plantedFact
	for _, size := range splitInts(*planted) {
		id, facts, err := rb.planted(size, *seed)
		if err != nil {
			return err
		}
		largest, largestFacts = id, facts
	}
	if *conc > 0 && largest != "" {
		if err := rb.concurrent(largest, largestFacts, *conc, *concCalls); err != nil {
			return err
		}
	}
	fmt.Print(rb.buf.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(rb.buf.String()), 0o644)
	}
	return nil
}

func splitInts(s string) []int64 {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	return out
}

type recallBench struct {
	ctx   context.Context
	log   *slog.Logger
	pool  *pgxpool.Pool
	store *pgstore.Store
	svc   *memory.Service
	limit int
	ref   bool
	modes []string
	run   string
	reuse bool
	buf   strings.Builder
}

func (rb *recallBench) report(format string, args ...any) {
	fmt.Fprintf(&rb.buf, format, args...)
	rb.log.Info("recall", "line", strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// recallCase is one question with its answer rows and each row's age group.
type recallCase struct {
	mysis, text string
	gold        []int64
	group       []int
}

// recallScore accumulates one engine's results over a set of cases.
type recallScore struct {
	n, zero, errs    int
	at5, at10, at20  float64
	groupHit, groupN []int
	lat              []time.Duration
	errSample        string
	zeroSample       []string
}

func newScore(groups int) *recallScore {
	return &recallScore{groupHit: make([]int, groups), groupN: make([]int, groups)}
}

func (s *recallScore) add(c recallCase, hits []int64) {
	s.n++
	if len(hits) == 0 {
		s.zero++
		if len(s.zeroSample) < 5 {
			s.zeroSample = append(s.zeroSample, c.text)
		}
	}
	at := func(k int) float64 {
		top := hits[:min(k, len(hits))]
		f := 0
		for _, g := range c.gold {
			if slices.Contains(top, g) {
				f++
			}
		}
		return float64(f) / float64(len(c.gold))
	}
	s.at5 += at(5)
	s.at10 += at(10)
	s.at20 += at(20)
	top := hits[:min(10, len(hits))]
	for i, g := range c.gold {
		s.groupN[c.group[i]]++
		if slices.Contains(top, g) {
			s.groupHit[c.group[i]]++
		}
	}
}

func pctOf(a, b int) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 1, 64)
}

func (s *recallScore) row(label string) string {
	n := float64(max(s.n, 1))
	var g []string
	for i := range s.groupN {
		g = append(g, pctOf(s.groupHit[i], s.groupN[i]))
	}
	lat := "–"
	if len(s.lat) > 0 {
		d := slices.Clone(s.lat)
		slices.Sort(d)
		lat = fmt.Sprintf("%s / %s / %s", ms(pct(d, 50)), ms(pct(d, 95)), ms(pct(d, 99)))
	}
	errs := ""
	if s.errs > 0 {
		errs = fmt.Sprintf(" (%d errors, e.g. %s)", s.errs, s.errSample)
	}
	return fmt.Sprintf("| %s | %d | %.1f | %.1f | %.1f | %s | %s | %s |\n", label+errs, s.n, 100*s.at5/n, 100*s.at10/n,
		100*s.at20/n, pctOf(s.zero, s.n), strings.Join(g, " | "), lat)
}

// evaluate asks every case through the service in each mode and through the reference, and reports one row each.
func (rb *recallBench) evaluate(title string, groups []string, cases []recallCase) error {
	rb.report("\n### %s\n\n| engine | questions | recall@5 | recall@10 | recall@20 | zero-hit %% | %s | p50 / p95 / p99 |\n|---|---:|---:|---:|---:|---:|%s---:|\n",
		title, strings.Join(groups, " | "), strings.Repeat("---:|", len(groups)))
	for _, mode := range rb.modes {
		s := newScore(len(groups))
		for _, c := range cases {
			text := c.text
			if mode == "or" {
				text = orQuery(text)
			}
			start := time.Now()
			res, err := rb.svc.SearchMessages(rb.ctx, memory.SearchQuery{MysisID: c.mysis, Text: text, Limit: rb.limit})
			s.lat = append(s.lat, time.Since(start))
			var seqs []int64
			if err != nil {
				s.errs++
				s.errSample = fmt.Sprintf("%q: %v", text, err)
			}
			for _, h := range res.Hits {
				seqs = append(seqs, h.Memory.Seq)
			}
			s.add(c, seqs)
		}
		rb.report("%s", s.row("SearchMessages, "+mode))
		if len(s.zeroSample) > 0 {
			rb.log.Info("questions with no hit", "mode", mode, "sample", s.zeroSample)
		}
	}
	if !rb.ref {
		return nil
	}
	byMysis := map[string][]int{}
	var order []string
	for i, c := range cases {
		if _, ok := byMysis[c.mysis]; !ok {
			order = append(order, c.mysis)
		}
		byMysis[c.mysis] = append(byMysis[c.mysis], i)
	}
	s := newScore(len(groups))
	for _, id := range order {
		idx := byMysis[id]
		texts := make([]string, len(idx))
		for i, j := range idx {
			texts[i] = cases[j].text
		}
		lex, err := queryLexemes(rb.ctx, rb.pool, texts)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, ls := range lex {
			for _, l := range ls {
				want[l] = true
			}
		}
		r, err := loadBM25Ref(rb.ctx, rb.pool, id, want)
		if err != nil {
			return err
		}
		for i, j := range idx {
			s.add(cases[j], r.search(lex[i], rb.limit))
		}
	}
	rb.report("%s", s.row("BM25 reference (exhaustive, k1 1.2, b 0.75)"))
	return nil
}

// newMysis creates a mysis for a recall history.
func (rb *recallBench) newMysis(name string) (string, error) {
	m := memory.Mysis{ID: memory.NewID(), Name: name + "-" + rb.run, Provider: memoryrules.AutopilotProvider, SystemPrompt: systemPrompt,
		State: memory.StateIdle, CreatedAt: benchEpoch}
	return m.ID, rb.store.CopyMyses(rb.ctx, []memory.Mysis{m})
}

// load COPYs rows into mysis id and sets its counters.
func (rb *recallBench) load(id string, next func() (memory.Memory, bool)) error {
	var last, turn int64
	if _, err := rb.store.CopyMemories(rb.ctx, func() (memory.Memory, bool) {
		m, ok := next()
		if ok {
			last, turn = m.Seq, m.Turn
		}
		return m, ok
	}); err != nil {
		return err
	}
	if err := rb.store.SetCounters(rb.ctx, []string{id}, []int64{last}, []int64{turn}); err != nil {
		return err
	}
	// The term counts, as a memory server's indexer keeps them.
	_, err := rb.store.CountAllTerms(rb.ctx)
	return err
}

// locomo loads every conversation as a mysis followed by game newer game memories and evaluates its questions.
func (rb *recallBench) locomo(cs []locomoConv, game int64, seed uint64) error {
	var cases []recallCase
	started := time.Now()
	for ci, c := range cs {
		name := fmt.Sprintf("recall-locomo-%s-g%d", c.id, game)
		seqOf := map[string]int64{}
		var id string
		if rb.reuse {
			m, err := rb.svc.GetMysisByName(rb.ctx, name+"-"+rb.run)
			if err != nil {
				return err
			}
			id = m.ID
			for i, t := range c.turns {
				seqOf[t.diaID] = int64(i + 1) // as loaded: the conversation first
			}
		} else {
			var err error
			if id, err = rb.newMysis(name); err != nil {
				return err
			}
		}
		i := 0
		var seq, turn int64
		h := newHistory(seed+uint64(ci), benchEpoch.Add(24*time.Hour*365), nil)
		var buf []memory.Memory
		var gen int64
		next := func() (memory.Memory, bool) {
			if i < len(c.turns) {
				t := c.turns[i]
				i++
				seq++
				turn = int64(t.session)
				seqOf[t.diaID] = seq
				m := memory.Memory{MysisID: id, Seq: seq, Turn: turn, Content: t.speaker + ": " + t.text,
					CreatedAt: benchEpoch.Add(time.Duration(seq) * time.Minute)}
				if t.first {
					m.Role, m.Source = memory.RoleUser, memory.SourceDirect
				} else {
					m.Role, m.Source = memory.RoleAssistant, memory.SourceLLM
				}
				return m, true
			}
			if gen >= game {
				return memory.Memory{}, false
			}
			if len(buf) == 0 {
				buf = append(buf[:0], h.next(256)...)
			}
			m := buf[0]
			buf = buf[1:]
			gen++
			seq++
			m.MysisID, m.Seq, m.Turn, m.IdempotencyKey = id, seq, turn+m.Turn, ""
			return m, true
		}
		if !rb.reuse {
			if err := rb.load(id, next); err != nil {
				return err
			}
		}
		n := int64(len(c.turns))
		for _, q := range c.questions {
			if !locomoCategories[q.category] {
				continue
			}
			rc := recallCase{mysis: id, text: q.text}
			for _, e := range q.evidence {
				if s, ok := seqOf[e]; ok && !slices.Contains(rc.gold, s) {
					rc.gold = append(rc.gold, s)
					rc.group = append(rc.group, int(min(2, (s-1)*3/n)))
				}
			}
			if len(rc.gold) > 0 {
				cases = append(cases, rc)
			}
		}
	}
	rb.log.Info("locomo loaded", "conversations", len(cs), "game", game, "questions", len(cases), "took", time.Since(started).String())
	return rb.evaluate(fmt.Sprintf("LoCoMo, %d conversations, %d newer game memories each", len(cs), game),
		[]string{"oldest third", "middle third", "newest third"}, cases)
}

// plantedGroups are the age groups of planted facts, by rows between the fact and the newest row.
var plantedGroups = []string{"< 100 back", "< 1k", "< 10k", "< 100k", "< 1M", "first rows"}

func plantedGroup(f plantedFact) int {
	if f.seq < 100 {
		return 5
	}
	for i, edge := range []int64{100, 1_000, 10_000, 100_000} {
		if f.age < edge {
			return i
		}
	}
	return 4
}

// planted loads a size-row game history with planted facts and evaluates their questions.
func (rb *recallBench) planted(size int64, seed uint64) (string, []plantedFact, error) {
	id, err := rb.newMysis(fmt.Sprintf("recall-planted-%d", size))
	if err != nil {
		return "", nil, err
	}
	started := time.Now()
	p := newPlantedHistory(seed, id, size)
	if err := rb.load(id, p.next); err != nil {
		return "", nil, err
	}
	rb.log.Info("planted history loaded", "rows", p.seq, "facts", len(p.facts), "took", time.Since(started).String())
	cases := make([]recallCase, len(p.facts))
	for i, f := range p.facts {
		cases[i] = recallCase{mysis: id, text: f.question, gold: []int64{f.seq}, group: []int{plantedGroup(f)}}
	}
	return id, p.facts, rb.evaluate(fmt.Sprintf("Planted facts, %d-row game history (%d facts)", p.seq, len(p.facts)),
		plantedGroups, cases)
}

// concurrent measures search latency with n concurrent searchers on mysis id (the planted questions, round-robin)
// while one appender writes 2-row batches of generated game rows to the same mysis.
func (rb *recallBench) concurrent(id string, facts []plantedFact, n, calls int) error {
	ctx, cancel := context.WithCancel(rb.ctx)
	defer cancel()
	var wg sync.WaitGroup
	appended := 0
	var appendErr error
	wg.Go(func() {
		h := newHistory(7, time.Now(), nil)
		for ctx.Err() == nil {
			rs := h.next(2)[:2]
			nb := make([]memory.NewMemory, len(rs))
			for i, r := range rs {
				nb[i] = memory.NewMemory{Role: r.Role, Source: r.Source, Content: r.Content, ToolCalls: r.ToolCalls,
					ToolCallID: r.ToolCallID, ToolName: r.ToolName}
			}
			if _, err := rb.svc.AppendMemories(ctx, id, nb); err != nil {
				if ctx.Err() == nil {
					appendErr = err
				}
				return
			}
			appended += len(nb)
		}
	})
	var mu sync.Mutex
	var lat []time.Duration
	work := make(chan string)
	var sw sync.WaitGroup
	errs := 0
	start := time.Now()
	for range n {
		sw.Go(func() {
			for q := range work {
				t := time.Now()
				_, err := rb.svc.SearchMessages(ctx, memory.SearchQuery{MysisID: id, Text: q, Limit: rb.limit})
				d := time.Since(t)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					errs++
				}
				mu.Unlock()
			}
		})
	}
	for i := range calls {
		work <- facts[i%len(facts)].question
	}
	close(work)
	sw.Wait()
	took := time.Since(start)
	cancel()
	wg.Wait()
	if appendErr != nil {
		return appendErr
	}
	slices.Sort(lat)
	rb.report("\n### %d concurrent searches with an appender on the largest planted history\n\n"+
		"| searches | errors | p50 | p95 | p99 | max | searches/s | rows appended meanwhile |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"+
		"| %d | %d | %s | %s | %s | %s | %.0f | %d |\n", n, len(lat), errs, ms(pct(lat, 50)), ms(pct(lat, 95)),
		ms(pct(lat, 99)), ms(lat[len(lat)-1]), float64(len(lat))/took.Seconds(), appended)
	return nil
}

// CountTermsMain runs `memorybench count-terms`: it folds every queued memory into the search term counts, as a
// memory server's indexer does in the background (after migration 00017 on an existing database, or a bulk load),
// and reports how long that took.
func CountTermsMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	fs := flag.NewFlagSet("count-terms", flag.ContinueOnError)
	db := fs.String("db", dbURL, "database URL (default ZOEA_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pgutil.Open(ctx, *db, "zoea-benchkit", 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := pgstore.New(pool, nil)
	start := time.Now()
	total := 0
	for {
		n, err := store.CountTerms(ctx, pgstore.TermBatch)
		total += n
		if err != nil {
			return err
		}
		if total%200_000 < pgstore.TermBatch || n < pgstore.TermBatch {
			log.Info("counted", "memories", total, "elapsed", time.Since(start).Round(time.Second).String(),
				"per_s", int(float64(total)/time.Since(start).Seconds()))
		}
		if n < pgstore.TermBatch {
			break
		}
	}
	fmt.Printf("counted %d memories in %s (%.0f/s)\n", total, time.Since(start).Round(time.Millisecond),
		float64(total)/time.Since(start).Seconds())
	return nil
}
