package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Search v4 (issue 42): BM25 over a mysis's whole history, candidates chosen by rarity, not by age.
//
// A query (memory.ParseSearchText) is a list of words, each with its other forms (went ↔ go), plus required phrases
// and exclusions. Postgres's 'english' configuration — the one every stored vector was made with — turns each form
// into lexemes (stemmed; stop and question words dropped), and each word position becomes a term group: the lexemes
// of one word's forms, counted together. A group's document frequency is the sum of its lexemes' per-mysis counts
// (memory_terms, terms.go).
//
// Candidates: the groups sorted by df, rarest first; the rarest ones are read whole from the GIN index (mysis_id,
// content_tsv) while their df adds up to at most memory.SearchCandidates, so every memory holding a rare word of the
// query is scored however old it is; the commoner words only score. When even the rarest word is more common than
// that (`travel item` in a game history), the memories holding every word are scored instead — read whole from GIN
// when the words' counts say they are few (all but the commonest word, and so on, when none holds them all), else
// the newest of them within the newest searchWalkRows rows (CandidatesBounded), and when none of those holds them
// all, the newest holding any. docs/benchmarks/2026-12-02-search-v4.md measures what this costs in recall.
//
// Score: Okapi BM25 (k1 = 1.2, b = 0.5, idf = ln(1 + (N − df + 0.5)/(df + 0.5))) per group, summed. tf is a
// lexeme's positions in the vector (ts_filter keeps just the query's lexemes: setweight marks them 'A' first), the
// document length is its number of distinct lexemes (length(tsvector), stored in the vector's header, so no column
// and no backfill: docs/benchmarks/2026-12-02-search-v4.md measures it against token counts), N and the average length are the mysis's
// (memory_term_totals). Then one prior: a tool result scores searchToolWeight× — words people wrote (orders,
// broadcasts, the mysis's replies) above raw tool output that says the same. Ties go to the newest.
//
// Exclusions filter the candidates. So do quoted phrases and identifiers (copper_ore: the words copper and ore side by
// side, which also matches the text "copper ore") — a model that quotes or types an id means it — unless no candidate
// holds them, when the search runs again on the words alone and says so (Note): a title remembered approximately
// ("nothing is impossible") still finds the memory that wrote it otherwise.
//
// Broadcast deliveries carry no text or vector of their own (a broadcast is stored once, broadcasts.go): each
// candidate read has a second arm that matches the broadcasts' vectors and joins the mysis's deliveries of them.
//
// Snippets are cut only for the rows returned, because ts_headline re-parses the whole text; texts are cut at
// snippetInputChars first so a 1 MB tool result cannot make a search slow.

// headlineOpts marks matches «like this» and keeps snippets short.
const headlineOpts = `StartSel=«, StopSel=», MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`

const snippetInputChars = 100000

// BM25's parameters: the usual k1 1.2, and b 0.5 rather than 0.75 because the document length here is distinct
// lexemes, which counts a repetitive JSON result as shorter than its tokens. Measured
// (docs/benchmarks/2026-12-02-search-v4.md): LoCoMo recall@10 62.5 (b 0.5) against 61.9 (0.75), under 20,000 game memories 61.8 against 60.2 (0.9: 59.4);
// planted facts unchanged; k1 0.9 and 1.6 no better.
const searchK1, searchB = 1.2, 0.5

// bm25TF is BM25's term-frequency part for t.tf occurrences in a document of relative length rel (its length over the
// average), as SQL.
func bm25TF(rel string) string {
	return fmt.Sprintf("t.tf * %g / (t.tf + %g * (%g + %g * %s))", searchK1+1, searchK1, 1-searchB, searchB, rel)
}

// searchToolWeight is a tool result's score relative to the same match in words people wrote
// (docs/benchmarks/2026-12-02-search-v4.md, measures it).
const searchToolWeight = 0.5

// searchANDMaxDF bounds the all-common fallback's GIN read of the memories holding every word: it reads the posting
// lists of all of them (and their words are correlated: sell, copper and ore, counted 82k, 125k and 328k in a 1M-row
// history, are together in 29k memories where independence predicts 3k), so past this count of the rarest word the
// newest rows are walked instead (docs/benchmarks/2026-12-02-search-v4.md: 0.5 s of index reads and 7 s of heap reads on a
// cold cache for sell & copper & ore).
const searchANDMaxDF = 8 * memory.SearchCandidates

// searchWalkCandidates is how many of the newest matches a walk scores: among memories that hold only common words
// the newest few are what is left to rank, and scoring 1,000 JSON results of the OR walk took 132 ms of a 1M-row
// natural question's 220 (memorybench explain-search, warm).
func searchWalkCandidates(limit int) int { return max(100, 4*limit) }

// searchWalkRows is how many of the newest rows the all-common fallback walks (~2.5 µs a row on the benchmark box:
// 8,000 rows in ~20 ms). Reading every older match from GIN instead cost 1.6–2 s for `credits` at 1M rows.
const searchWalkRows = 8000

// termsSQL turns the query's word forms ($2, with their word's index $3) into lexemes with their df in mysis $1;
// a form's lexemes each keep their position in the form (copper_ore is copper at 1, ore at 2).
const termsSQL = `
SELECT w.g, coalesce(l.positions[1], 1)::int, l.lexeme, coalesce(t.df, 0)
FROM unnest($2::text[], $3::int[]) AS w(form, g)
CROSS JOIN LATERAL unnest(to_tsvector('english', zoea_fts_text(w.form))) AS l
LEFT JOIN memory_terms t ON t.mysis_id = $1 AND t.lexeme = l.lexeme`

// mysisTotalsSQL reads the mysis (NotFound when absent) and its term totals, and turns JIT off for the
// transaction: a plan over a long history carries cost estimates above jit_above_cost, and Postgres would spend
// 20–400 ms compiling expressions for a statement that runs in a few.
const mysisTotalsSQL = `
SELECT y.last_seq, coalesce(t.docs, 0), coalesce(t.len, 0)
FROM myses y LEFT JOIN memory_term_totals t ON t.mysis_id = y.id, set_config('jit', 'off', true)
WHERE y.id = $1`

// termGroup is one word position of the query: its lexemes and their summed df.
type termGroup struct {
	lexemes []string
	df      int64
}

// searchPlan is a parsed query with its statistics: what to read and how to score.
type searchPlan struct {
	groups   []termGroup // rarest first
	n        int64       // documents
	avgdl    float64
	lastSeq  int64
	rare     int // groups[:rare] are read whole; 0: the all-common fallback
	filter   string
	lexemes  []string // every group's lexemes, with
	lexGroup []int32  // their group (1-based)
	idf      []float64
}

// planSearch reads the mysis's statistics for q's words and chooses the candidates.
func planSearch(ctx context.Context, tx pgx.Tx, q memory.SearchQuery) (searchPlan, error) {
	p := searchPlan{filter: q.Parsed.Filter}
	var docs, total int64
	if err := tx.QueryRow(ctx, mysisTotalsSQL, q.MysisID).Scan(&p.lastSeq, &docs, &total); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return p, errMysisNotFound(q.MysisID)
		}
		return p, dbErr(err, "search")
	}
	var forms []string
	var fg []int32
	for i, w := range q.Parsed.Words {
		for _, f := range w {
			forms = append(forms, f)
			fg = append(fg, int32(i))
		}
	}
	if len(forms) == 0 {
		return p, nil
	}
	rows, err := tx.Query(ctx, termsSQL, q.MysisID, forms, fg)
	if err != nil {
		return p, dbErr(err, "search")
	}
	type key struct{ g, pos int32 }
	byKey := map[key]map[string]int64{}
	var order []key
	for rows.Next() {
		var k key
		var lex string
		var df int64
		if err := rows.Scan(&k.g, &k.pos, &lex, &df); err != nil {
			rows.Close()
			return p, dbErr(err, "search")
		}
		if byKey[k] == nil {
			byKey[k] = map[string]int64{}
			order = append(order, k)
		}
		byKey[k][lex] = df
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return p, dbErr(err, "search")
	}
	// Several forms of a word (goes, going) are one lexeme; two words of the query with the same lexemes (sold and
	// sell) are one group.
	seen := map[string]bool{}
	for _, k := range order {
		var g termGroup
		for l, df := range byKey[k] {
			g.lexemes = append(g.lexemes, l)
			g.df += df
		}
		slices.Sort(g.lexemes)
		id := strings.Join(g.lexemes, " ")
		if seen[id] {
			continue
		}
		seen[id] = true
		p.groups = append(p.groups, g)
	}
	slices.SortStableFunc(p.groups, func(a, b termGroup) int { return cmp.Compare(a.df, b.df) })
	// N and the average length from the counts; before a mysis's first count (a new mysis, or a database just
	// migrated), its seq stands in for N.
	p.n = max(docs, p.lastSeq, 1)
	p.avgdl = 40
	if docs > 0 {
		p.avgdl = max(float64(total)/float64(docs), 1)
	}
	var sum int64
	for _, g := range p.groups {
		if sum+g.df > memory.SearchCandidates {
			break
		}
		sum += g.df
		p.rare++
	}
	for i, g := range p.groups {
		df := float64(min(g.df, p.n))
		p.idf = append(p.idf, math.Log(1+(float64(p.n)-df+0.5)/(df+0.5)))
		for _, l := range g.lexemes {
			p.lexemes = append(p.lexemes, l)
			p.lexGroup = append(p.lexGroup, int32(i+1))
		}
	}
	return p, nil
}

// tsqueryOf writes the groups' lexemes as a tsquery, OR within a group, op between groups. Lexemes are written
// as quoted literals, so nothing in them is read as an operator.
func tsqueryOf(groups []termGroup, op string) string {
	var parts []string
	for _, g := range groups {
		var ls []string
		for _, l := range g.lexemes {
			ls = append(ls, `'`+strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(l)+`'`)
		}
		parts = append(parts, "("+strings.Join(ls, " | ")+")")
	}
	return strings.Join(parts, " "+op+" ")
}

// searchDoc says which document of a memory a search reads: message search its content_tsv (content, and an
// assistant memory's tool calls: zoea_memory_tsv, 00009) and the broadcasts delivered to it; reasoning search its
// reasoning_tsv (memories_reasoning_fts_idx, whose predicate where repeats).
type searchDoc struct {
	what, vec, where, text string
	broadcasts             bool
}

var (
	messageDoc = searchDoc{what: "search messages", vec: "m.content_tsv", where: "($4 OR m.source <> 3)", broadcasts: true,
		text: `CASE WHEN m.tool_calls IS NULL THEN ` + memContentSQL + ` ELSE m.content || ' ' || coalesce(zoea_calls_text(m.tool_calls), '') END`}
	reasoningDoc = searchDoc{what: "search reasoning", vec: "m.reasoning_tsv", where: "m.reasoning <> '' AND $4::boolean IS NOT NULL",
		text: "m.reasoning"}
)

// Statement parameters: $1 mysis, $2 candidate tsquery, $3 filter (websearch syntax, '' none), $4 include nudges,
// $5 candidates, $6 lexemes, $7 their groups, $8 idf by group, $9 average length, $10 tool weight, $11 limit,
// $12 snippet input chars, $13 headline options, $14 the lexemes as one OR tsquery (snippets), $15 rows below which
// the walk stops (fallbacks), $16 order (true: relevance).

// candidateArms are a candidate read's two arms, the memories' own documents and the broadcasts delivered to
// the mysis, with from as the memories' source and cond added to both.
func candidateArms(d searchDoc, from, cond, order string) string {
	arm := `(SELECT m.id, m.seq, m.role, ` + d.vec + ` AS doc FROM ` + from + `
		WHERE m.mysis_id = $1 AND ` + d.vec + ` @@ $2::tsquery AND ` + d.where + cond + `
			AND ($3 = '' OR ` + d.vec + ` @@ websearch_to_tsquery('english', $3))` + order + ` LIMIT $5)`
	if !d.broadcasts {
		return arm
	}
	return arm + `
	UNION ALL
	(SELECT m.id, m.seq, m.role, b.content_tsv FROM broadcasts b JOIN memories m ON m.broadcast_id = b.id AND m.mysis_id = $1
		WHERE b.content_tsv @@ $2::tsquery AND ($3 = '' OR b.content_tsv @@ websearch_to_tsquery('english', $3))` + cond + order + ` LIMIT $5)`
}

// scoredSQL scores candidates and returns the best $11 (or the newest, $17 false) with snippets, each row ending
// in its score and the number of candidates.
func scoredSQL(d searchDoc, candidates string) string {
	return `
WITH c AS MATERIALIZED (` + candidates + `),
s AS (
	SELECT c.id, c.seq,
		(CASE WHEN c.role = 4 THEN $10::float8 ELSE 1 END)
		* coalesce((SELECT sum(($8::float8[])[t.g] * ` + bm25TF("length(c.doc) / $9::float8") + `)
			FROM (SELECT q.g, sum(coalesce(array_length(u.positions, 1), 1))::float8 AS tf
				FROM unnest(ts_filter(setweight(c.doc, 'A', $6::text[]), '{a}')) u
				JOIN unnest($6::text[], $7::int[]) q(lexeme, g) ON q.lexeme = u.lexeme
				GROUP BY q.g) t), 0) AS score,
		count(*) OVER () AS total
	FROM c
	WHERE $15::bigint IS NOT NULL -- every parameter is referenced in every statement, so each has a type
), top AS (
	SELECT * FROM s ORDER BY CASE WHEN $16 THEN s.score END DESC, s.seq DESC LIMIT $11
)
SELECT ` + memCols + `, ts_headline('english', zoea_fts_text(left(` + d.text + `, $12)), $14::tsquery, $13), top.score::float4, top.total
FROM top JOIN memories m ON m.id = top.id AND m.mysis_id = $1
ORDER BY CASE WHEN $16 THEN top.score END DESC, top.seq DESC`
}

// searchStatements are one document's statements: candidates read whole from GIN (the rare words' postings, or
// the memories holding all the words); the fallback's walk over the newest rows above $15.
type searchStatements struct{ rare, walk string }

func newSearchStatements(d searchDoc) searchStatements {
	walkFrom := `(SELECT * FROM memories m WHERE m.mysis_id = $1 AND m.seq > $15 ORDER BY m.seq DESC OFFSET 0) m`
	return searchStatements{
		rare: scoredSQL(d, candidateArms(d, "memories m", "", "")),
		walk: scoredSQL(d, candidateArms(d, walkFrom, " AND m.seq > $15", " ORDER BY m.seq DESC")),
	}
}

var (
	messageSQL   = newSearchStatements(messageDoc)
	reasoningSQL = newSearchStatements(reasoningDoc)
)

// runner runs one statement with its arguments and returns its hits and the number of candidates it scored.
type runner func(sql string, args []any) ([]memory.MemoryHit, int64, error)

// SearchMessages finds one mysis's messages and tool calls, best first (BM25 over the whole history) or newest
// first; nudges only when asked.
func (s *Store) SearchMessages(ctx context.Context, q memory.SearchQuery) (memory.MessageHits, error) {
	return s.searchMemories(ctx, q, messageDoc, messageSQL)
}

// SearchReasoning ranks one mysis's stored reasoning with the same engine; the mysis's term counts (of its
// messages: reasoning is written in the same words) give the rarity and IDF.
func (s *Store) SearchReasoning(ctx context.Context, q memory.SearchQuery) (memory.MessageHits, error) {
	q.Order, q.IncludeNudges = memory.OrderRelevance, true
	return s.searchMemories(ctx, q, reasoningDoc, reasoningSQL)
}

func (s *Store) searchMemories(ctx context.Context, q memory.SearchQuery, d searchDoc, sqls searchStatements) (memory.MessageHits, error) {
	var out memory.MessageHits
	err := s.inSearchTx(ctx, d.what, func(tx pgx.Tx) error {
		var err error
		out, err = searchWith(ctx, tx, q, sqls, func(sql string, args []any) ([]memory.MemoryHit, int64, error) {
			return scanHits(ctx, tx, d.what, sql, args...)
		})
		return err
	})
	return out, err
}

// inSearchTx runs f in a read-only transaction.
func (s *Store) inSearchTx(ctx context.Context, what string, f func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return dbErr(err, what)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return dbErr(err, what)
	}
	return nil
}

// searchWith plans q and runs its statements through run (runPlan): strictly first when the query has quoted phrases
// or identifiers, then on their words alone when nothing holds them.
func searchWith(ctx context.Context, tx pgx.Tx, q memory.SearchQuery, sqls searchStatements, run runner) (memory.MessageHits, error) {
	p, err := planSearch(ctx, tx, q)
	if err != nil {
		return memory.MessageHits{}, err
	}
	if len(p.groups) == 0 {
		note := "Nothing to search for: every word of the query is too common to search by (the, did, when, …); name what you are looking for."
		if len(q.Parsed.Words) == 0 {
			note = "Nothing to search for: the query has no words to look for, only exclusions or punctuation."
		}
		return memory.MessageHits{Note: note}, nil
	}
	if req := append(slices.Clone(q.Parsed.Phrases), q.Parsed.Identifiers...); len(req) > 0 {
		strict := p
		strict.filter = strings.TrimSpace(p.filter + " " + strings.Join(req, " "))
		res, err := runPlan(q, strict, sqls, run)
		if err != nil || len(res.Hits) > 0 {
			return res, err
		}
		res, err = runPlan(q, p, sqls, run)
		if len(res.Hits) > 0 {
			res.Note = "No memory holds " + strings.Join(req, ", ") + " as written; these hold some of the words."
		}
		return res, err
	}
	return runPlan(q, p, sqls, run)
}

// runPlan runs a plan's statements: the rare words' postings whole; or, every word (left) being common, the memories
// holding all of them from GIN while their counts say they are few, else the newest holding all, else any.
func runPlan(q memory.SearchQuery, p searchPlan, sqls searchStatements, run runner) (memory.MessageHits, error) {
	args := func(cand string, k int, below int64) []any {
		return []any{q.MysisID, cand, p.filter, q.IncludeNudges, k, p.lexemes, p.lexGroup, p.idf, p.avgdl,
			searchToolWeight, q.Limit, snippetInputChars, headlineOpts, tsqueryOf(p.groups, "|"), below,
			q.Order == memory.OrderRelevance}
	}
	var res memory.MessageHits
	if p.rare > 0 {
		hits, total, err := run(sqls.rare, args(tsqueryOf(p.groups[:p.rare], "|"), memory.SearchCandidates, 0))
		if err != nil {
			return res, err
		}
		res.Hits, res.Matches = hits, total
		if total > 0 || p.rare == len(p.groups) {
			// Matches are exact when every word was read whole; otherwise at least the commonest word's count.
			if p.rare < len(p.groups) {
				res.MatchesEstimated = true
				if p.filter == "" {
					res.Matches = max(res.Matches, p.groups[len(p.groups)-1].df)
				}
			}
			return res, nil
		}
		// The rare words occur nowhere (a name the history never mentions): the common ones must find what there is.
		p.groups = p.groups[p.rare:]
	}
	// Every word (left) is common. The memories holding all of them (or all but the commonest, …) are the best BM25 can
	// find: read whole from GIN when, by the words' counts taken as independent, they should be few; otherwise the
	// newest of them, walked through (mysis_id, seq); when none holds them all, the newest holding any.
	res.MatchesEstimated = true
	res.Matches = p.groups[len(p.groups)-1].df
	below := max(p.lastSeq-searchWalkRows, 0)
	for k := len(p.groups); k >= 1; k-- {
		est := float64(p.n)
		for _, g := range p.groups[:k] {
			est *= float64(min(g.df, p.n)) / float64(p.n)
		}
		if est > memory.SearchCandidates/2 || p.groups[0].df > searchANDMaxDF {
			break // a walk of the newest rows finds them, or the posting lists cost more than the walk
		}
		hits, total, err := run(sqls.rare, args(tsqueryOf(p.groups[:k], "&"), memory.SearchCandidates, 0))
		if err != nil || total > 0 {
			res.Hits, res.CandidatesBounded = hits, total >= memory.SearchCandidates
			if k < len(p.groups) {
				res.Note = "No memory holds every word of the query; ranked those holding its rarer words together."
			}
			return res, err
		}
	}
	res.CandidatesBounded = true
	for _, op := range []string{"&", "|"} {
		hits, total, err := run(sqls.walk, args(tsqueryOf(p.groups, op), searchWalkCandidates(q.Limit), below))
		if err != nil {
			return res, err
		}
		if total > 0 || op == "|" {
			res.Hits = hits
			if op == "&" {
				res.Note = fmt.Sprintf("Every word of the query is common in this history: ranked the memories holding all of them among the newest %d; add a rarer word (a name, a place, an id) to reach older ones.", searchWalkRows)
			} else {
				res.Note = fmt.Sprintf("Every word of the query is common and none of the newest %d memories holds them all: ranked those holding any; add a rarer word (a name, a place, an id).", searchWalkRows)
			}
			return res, nil
		}
	}
	return res, nil
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// scanHits runs a search statement and reads its hits, each row ending in its score and the candidates' count.
func scanHits(ctx context.Context, db querier, what, sql string, args ...any) ([]memory.MemoryHit, int64, error) {
	// Always a custom plan: the planner must see the query's lexemes to plan the GIN reads; a cached generic plan
	// cannot.
	rows, err := db.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, 0, dbErr(err, what)
	}
	defer rows.Close()
	var out []memory.MemoryHit
	var total int64
	for rows.Next() {
		var r memRow
		var h memory.MemoryHit
		if err := rows.Scan(append(r.dest(), &h.Snippet, &h.Rank, &total)...); err != nil {
			return nil, 0, dbErr(err, what)
		}
		if h.Memory, err = r.memory(); err != nil {
			return nil, 0, err
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, dbErr(err, what)
	}
	return out, total, nil
}

// searchBroadcastsSQL ranks broadcasts swarm-wide with the same BM25 ($1 the lexemes, $2 their groups, $3 the
// lexemes as one OR tsquery, $4 limit, $5 snippet chars, $6 headline options, $7 filter). The table is
// small (one row per broadcast, never per delivery), so df and N are counted here, from its GIN index, and every
// match is a candidate (at most memory.SearchCandidates).
var searchBroadcastsSQL = `
WITH q AS (SELECT * FROM unnest($1::text[], $2::int[]) q(lexeme, g)),
n AS (SELECT count(*)::float8 AS n, coalesce(avg(length(content_tsv)), 1)::float8 AS avgdl FROM broadcasts),
gdf AS (SELECT q.g, sum((SELECT count(*) FROM broadcasts b WHERE b.content_tsv @@ quote_literal(q.lexeme)::tsquery))::float8 AS df
	FROM q GROUP BY q.g),
idf AS (SELECT gdf.g, ln(1 + (n.n - least(gdf.df, n.n) + 0.5) / (least(gdf.df, n.n) + 0.5)) AS idf FROM gdf, n),
c AS MATERIALIZED (
	SELECT ` + broadcastCols + `, b.content_tsv AS doc FROM broadcasts b
	WHERE b.content_tsv @@ $3::tsquery AND ($7 = '' OR b.content_tsv @@ websearch_to_tsquery('english', $7))
	LIMIT ` + fmt.Sprint(memory.SearchCandidates) + `
), s AS (
	SELECT c.*, coalesce((SELECT sum(idf.idf * ` + bm25TF("length(c.doc) / (SELECT avgdl FROM n)") + `)
			FROM (SELECT q.g, sum(coalesce(array_length(u.positions, 1), 1))::float8 AS tf
				FROM unnest(ts_filter(setweight(c.doc, 'A', $1::text[]), '{a}')) u JOIN q ON q.lexeme = u.lexeme
				GROUP BY q.g) t JOIN idf ON idf.g = t.g), 0) AS score
	FROM c
	ORDER BY score DESC, c.created_at DESC, c.id DESC
	LIMIT $4
)
SELECT s.id, s.sender_id, s.content, s.created_at, ts_headline('english', zoea_fts_text(left(s.content, $5)), $3::tsquery, $6), s.score::float4
FROM s ORDER BY s.score DESC, s.created_at DESC, s.id DESC`

// broadcastLexemesSQL turns the query's word forms into lexemes, by word position.
const broadcastLexemesSQL = `
SELECT w.g, coalesce(l.positions[1], 1)::int, l.lexeme
FROM unnest($1::text[], $2::int[]) AS w(form, g)
CROSS JOIN LATERAL unnest(to_tsvector('english', zoea_fts_text(w.form))) AS l`

// SearchBroadcasts ranks broadcasts swarm-wide.
func (s *Store) SearchBroadcasts(ctx context.Context, q memory.SearchQuery) ([]memory.BroadcastHit, error) {
	var forms []string
	var fg []int32
	for i, w := range q.Parsed.Words {
		for _, f := range w {
			forms = append(forms, f)
			fg = append(fg, int32(i))
		}
	}
	if len(forms) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, broadcastLexemesSQL, forms, fg)
	if err != nil {
		return nil, dbErr(err, "search broadcasts")
	}
	type key struct{ g, pos int32 }
	ids := map[key]int32{}
	var groups []termGroup
	var lexemes []string
	var lexGroup []int32
	for rows.Next() {
		var k key
		var lex string
		if err := rows.Scan(&k.g, &k.pos, &lex); err != nil {
			rows.Close()
			return nil, dbErr(err, "search broadcasts")
		}
		if _, ok := ids[k]; !ok {
			groups = append(groups, termGroup{})
			ids[k] = int32(len(groups))
		}
		g := ids[k]
		groups[g-1].lexemes = append(groups[g-1].lexemes, lex)
		lexemes, lexGroup = append(lexemes, lex), append(lexGroup, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "search broadcasts")
	}
	if len(groups) == 0 {
		return nil, nil
	}
	rows, err = s.pool.Query(ctx, searchBroadcastsSQL, lexemes, lexGroup, tsqueryOf(groups, "|"), q.Limit,
		snippetInputChars, headlineOpts, strings.TrimSpace(q.Parsed.Filter+" "+strings.Join(q.Parsed.Phrases, " ")+" "+
			strings.Join(q.Parsed.Identifiers, " ")))
	if err != nil {
		return nil, dbErr(err, "search broadcasts")
	}
	defer rows.Close()
	var out []memory.BroadcastHit
	for rows.Next() {
		var h memory.BroadcastHit
		if err := rows.Scan(append(broadcastDest(&h.Broadcast), &h.Snippet, &h.Rank)...); err != nil {
			return nil, dbErr(err, "search broadcasts")
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "search broadcasts")
	}
	return out, nil
}

// ExplainSearchMessages returns EXPLAIN (ANALYZE, BUFFERS) of each statement SearchMessages runs for q (normalised,
// as SearchMessages takes it), each headed by a line "-- statement N" (benchmarks and plan tests). Each statement
// also runs once more to learn what the next one is.
func (s *Store) ExplainSearchMessages(ctx context.Context, q memory.SearchQuery) (string, error) {
	var lines []string
	n := 0
	err := s.inSearchTx(ctx, "explain search", func(tx pgx.Tx) error {
		_, err := searchWith(ctx, tx, q, messageSQL, func(sql string, args []any) ([]memory.MemoryHit, int64, error) {
			rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
			if err != nil {
				return nil, 0, dbErr(err, "explain search")
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return nil, 0, dbErr(err, "explain search")
			}
			n++
			lines = append(append(lines, fmt.Sprintf("-- statement %d", n)), plan...)
			return scanHits(ctx, tx, "explain search", sql, args...)
		})
		return err
	})
	return strings.Join(lines, "\n"), err
}
