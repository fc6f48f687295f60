package benchkit

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// searchClass is one kind of query the bench measures on every history.
type searchClass struct {
	label string
	texts []string // round-robin
}

// SearchBenchMain runs `memory bench-search`: SearchMessages latency on a database filled by `memory seed`, per
// history length, query class (a word in every status result, a rare identifier, a tool-call argument, the mixed
// queries of `memory bench`) and order (relevance and recency interleaved call by call, so both see the same cache
// state and the same load), with EXPLAIN (ANALYZE, BUFFERS) of the slowest class on the longest history.
func SearchBenchMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	fs := flag.NewFlagSet("bench-search", flag.ContinueOnError)
	db := fs.String("db", dbURL, "database URL of a seeded database (default ZOEA_DATABASE_URL)")
	longs := fs.String("long", "1000,10000,100000,1000000", "history sizes of the long myses to measure (as seeded)")
	n := fs.Int("n", 100, "calls per history, query class and order")
	typical := fs.Bool("typical", true, "also measure random typical myses")
	orders := fs.String("orders", "relevance,recency", "orders to measure, interleaved")
	limit := fs.Int("limit", memory.DefaultSearchLimit, "hits asked for per call (a limit the newest 2,000 rows cannot fill reads older rows)")
	out := fs.String("out", "", "also write the report to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pgutil.Open(ctx, *db, "zoea-benchkit", 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := pgstore.New(pool, nil)
	svc := memory.NewService(store)
	b := &bencher{ctx: ctx, log: log, store: store, svc: svc, r: rand.New(rand.NewPCG(42, 42))}
	sizes, err := store.Sizes(ctx)
	if err != nil {
		return err
	}
	if sizes.Rows == 0 {
		return fmt.Errorf("the database has no memories: run `memory seed -db …` first")
	}
	if err := b.loadMyses(*longs); err != nil {
		return err
	}
	var os_ []memory.SearchOrder
	for _, o := range strings.Split(*orders, ",") {
		switch strings.TrimSpace(o) {
		case "relevance":
			os_ = append(os_, memory.OrderRelevance)
		case "recency":
			os_ = append(os_, memory.OrderRecency)
		default:
			return fmt.Errorf("-orders: unknown order %q", o)
		}
	}

	// A real hex session id from the longest history: an identifier that occurs in a handful of rows.
	hex := ""
	if len(b.longs) > 0 {
		hs, _, err := benchSearch(ctx, svc, memory.SearchQuery{MysisID: b.longs[len(b.longs)-1].ID, Text: "session_id", Limit: 1,
			Order: memory.OrderRecency})
		if err != nil {
			return err
		}
		for _, h := range hs {
			if i := strings.Index(h.Memory.Content, `"session_id":"`); i >= 0 {
				rest := h.Memory.Content[i+len(`"session_id":"`):]
				if j := strings.IndexByte(rest, '"'); j > 0 {
					hex = rest[:j]
				}
			}
		}
	}
	mix := append([]string(nil), searchQueries...)
	classes := []searchClass{
		{"common word (`credits`: every status result)", []string{"credits"}},
		{"tool call (`sell`, `view_market`)", []string{"sell", "view_market"}},
	}
	if hex != "" {
		mix = append(mix, hex)
		classes = append(classes, searchClass{"rare identifier (a login's hex session id)", []string{hex}})
	}
	classes = append(classes, searchClass{"natural question (5, round-robin)", naturalQuestions},
		searchClass{"only common words (`travel item`)", []string{"travel item"}},
		searchClass{"no match (`zyzzyva`)", []string{"zyzzyva"}},
		searchClass{fmt.Sprintf("`memory bench` mix (%d queries)", len(mix)), mix})

	b.report("## SearchMessages by history, query and order (limit %d, snippets on)\n\nDatabase: %d memories, %d myses. "+
		"%d calls per row, orders interleaved call by call.\n\n"+
		"| history | query | order | calls | p50 | p95 | p99 | max | hits (mean) | bounded |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
		*limit, sizes.Rows, sizes.Myses, *n)
	type target struct {
		label string
		id    func() string
	}
	var targets []target
	if *typical {
		targets = append(targets, target{fmt.Sprintf("typical (~%d rows)", sizes.Rows/max(sizes.Myses, 1)), b.typical})
	}
	for _, l := range b.longs {
		targets = append(targets, target{fmt.Sprintf("%d rows", l.LastSeq), func() string { return l.ID }})
	}
	// Warm the caches as a running swarm keeps them warm.
	for _, t := range targets {
		for _, c := range classes {
			for _, o := range os_ {
				if _, _, err := benchSearch(ctx, svc, memory.SearchQuery{MysisID: t.id(), Text: c.texts[0], Order: o, Limit: *limit}); err != nil {
					return err
				}
			}
		}
	}
	for _, t := range targets {
		for _, c := range classes {
			lat := make([][]time.Duration, len(os_))
			hits := make([]int, len(os_))
			bounded := make([]int, len(os_))
			for i := range *n {
				id := t.id()
				for k := range os_ {
					o := os_[(i+k)%len(os_)] // which order goes first alternates
					q := memory.SearchQuery{MysisID: id, Text: c.texts[i%len(c.texts)], Order: o, Limit: *limit}
					start := time.Now()
					hs, bnd, err := benchSearch(ctx, svc, q)
					if err != nil {
						return fmt.Errorf("%s %q: %w", t.label, q.Text, err)
					}
					j := int(o) % len(os_)
					lat[j] = append(lat[j], time.Since(start))
					hits[j] += len(hs)
					if bnd {
						bounded[j]++
					}
				}
			}
			for j, o := range os_ {
				d := lat[j]
				slices.Sort(d)
				b.report("| %s | %s | %s | %d | %s | %s | %s | %s | %.1f | %d |\n", t.label, c.label, orderName(o), len(d),
					ms(pct(d, 50)), ms(pct(d, 95)), ms(pct(d, 99)), ms(d[len(d)-1]), float64(hits[j])/float64(len(d)), bounded[j])
			}
		}
	}
	if len(b.longs) > 0 {
		l := b.longs[len(b.longs)-1]
		for _, o := range os_ {
			q, err := memory.SearchQuery{MysisID: l.ID, Text: "credits", Order: o, Limit: *limit}.Normalize(true)
			if err != nil {
				return err
			}
			plan, err := store.ExplainSearchMessages(ctx, q)
			if err != nil {
				return err
			}
			b.report("\nEXPLAIN (ANALYZE, BUFFERS), `credits` on %s, %s:\n\n```\n%s\n```\n", l.Name, orderName(o), plan)
		}
	}
	fmt.Print(b.buf.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(b.buf.String()), 0o644)
	}
	return nil
}

// naturalQuestions are asked the way a model asks: whole sentences, question words, other word forms.
var naturalQuestions = []string{
	"Where did I sell the copper ore last time?",
	"How many credits did I make mining iron?",
	"What did the commander say about pirates near the outer ring?",
	"When did I last travel to haven station?",
	"Which ores dropped in price at the market?",
}

func orderName(o memory.SearchOrder) string {
	if o == memory.OrderRecency {
		return "recency"
	}
	return "relevance"
}

// benchSearch runs one message search (a seam so the same bench can measure an older store API).
func benchSearch(ctx context.Context, s *memory.Service, q memory.SearchQuery) ([]memory.MemoryHit, bool, error) {
	res, err := s.SearchMessages(ctx, q)
	return res.Hits, res.CandidatesBounded, err
}

// ExplainSearchMain runs `memorybench explain-search`: EXPLAIN (ANALYZE, BUFFERS) of every statement one message
// search runs, for a mysis named -mysis and the query -q (plans on a real history, e.g. a natural question at 1M).
func ExplainSearchMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	fs := flag.NewFlagSet("explain-search", flag.ContinueOnError)
	db := fs.String("db", dbURL, "database URL (default ZOEA_DATABASE_URL)")
	name := fs.String("mysis", LongPrefix+"1000000", "mysis name")
	text := fs.String("q", naturalQuestions[0], "query")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pgutil.Open(ctx, *db, "zoea-benchkit", 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := pgstore.New(pool, nil)
	m, err := memory.NewService(store).GetMysisByName(ctx, *name)
	if err != nil {
		return err
	}
	q, err := memory.SearchQuery{MysisID: m.ID, Text: *text}.Normalize(true)
	if err != nil {
		return err
	}
	plan, err := store.ExplainSearchMessages(ctx, q)
	if err != nil {
		return err
	}
	fmt.Println(plan)
	return nil
}
