package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// refHit is one search hit as the reference computes it and as the comparison sees a store hit.
type refHit struct {
	ID      int64
	Seq     int64
	Rank    float32
	Snippet string
}

// referenceMatchesSQL is every match of one mysis, newest first, with the rank and snippet the service defines
// (docs/API.md, pgstore/search.go): its own memories by content, or content and tool calls together, and its broadcast
// deliveries by the broadcast's text. No window, no LIMIT, nothing for the planner to choose.
const referenceMatchesSQL = `
WITH q AS (SELECT websearch_to_tsquery('english', $2) AS q),
d AS (
	SELECT m.id, m.seq, m.role,
		CASE WHEN m.tool_calls IS NULL THEN m.content_tsv ELSE zoea_calls_tsv(m.content, m.tool_calls) END AS doc,
		CASE WHEN m.tool_calls IS NULL THEN m.content ELSE m.content || ' ' || coalesce(zoea_calls_text(m.tool_calls), '') END AS txt
	FROM memories m WHERE m.mysis_id = $1 AND m.broadcast_id IS NULL AND ($3 OR m.source <> 3)
	UNION ALL
	SELECT m.id, m.seq, m.role, b.content_tsv, b.content
	FROM memories m JOIN broadcasts b ON b.id = m.broadcast_id WHERE m.mysis_id = $1
)
SELECT d.id, d.seq, ts_rank(d.doc, q.q, 1|32) + CASE WHEN d.role = 4 THEN 0 ELSE 1 END,
	ts_headline('english', zoea_fts_text(left(d.txt, $4)), q.q, $5)
FROM d, q WHERE d.doc @@ q.q
ORDER BY d.seq DESC`

// referenceSearch answers q by the documented rule, from all matches: a history longer than window rows is first
// searched in its newest window rows, which answer alone when they hold at least limit matches (bounded); when they
// hold some but fewer and their match rate makes a walk below them the cheaper read (pgstore.SearchWalk), the window
// and the walked rows answer when they hold at least limit (bounded); relevance
// ranks the newest memory.SearchCandidates of the rows searched (bounded when there were more), recency returns the
// newest limit.
func referenceSearch(t *testing.T, p *pgxpool.Pool, q memory.SearchQuery, lastSeq, window int64) ([]refHit, bool) {
	t.Helper()
	rows, err := p.Query(context.Background(), referenceMatchesSQL, q.MysisID, q.Text, q.IncludeNudges,
		pgstore.SnippetInputChars, pgstore.HeadlineOpts)
	if err != nil {
		t.Fatal(err)
	}
	var all []refHit
	for rows.Next() {
		var h refHit
		if err := rows.Scan(&h.ID, &h.Seq, &h.Rank, &h.Snippet); err != nil {
			t.Fatal(err)
		}
		all = append(all, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if q.Order == memory.OrderRecency {
		return all[:min(q.Limit, len(all))], false
	}
	cand, partial := all, false
	if lastSeq > window {
		inWindow := slices.IndexFunc(all, func(h refHit) bool { return h.Seq <= lastSeq-window })
		if inWindow < 0 {
			inWindow = len(all)
		}
		if inWindow >= q.Limit {
			cand, partial = all[:inWindow], true
		} else if walk := pgstore.SearchWalk(int64(inWindow), int64(q.Limit), lastSeq-window); walk > 0 {
			// The rows below the window are walked when the window's match rate says a walk is the cheaper read.
			lo := lastSeq - window - walk
			inWalk := slices.IndexFunc(all, func(h refHit) bool { return h.Seq <= lo })
			if inWalk < 0 {
				inWalk = len(all)
			}
			if inWalk >= q.Limit {
				cand, partial = all[:inWalk], true
			}
		}
	}
	bounded := partial || len(cand) > memory.SearchCandidates
	cand = slices.Clone(cand[:min(memory.SearchCandidates, len(cand))])
	slices.SortStableFunc(cand, func(a, b refHit) int {
		if a.Rank != b.Rank {
			if a.Rank > b.Rank {
				return -1
			}
			return 1
		}
		return int(b.Seq - a.Seq)
	})
	return cand[:min(q.Limit, len(cand))], bounded
}

// windowHistory is a history longer than the search window in which words of every frequency sit at known places:
// a word in every third row (credits), tool calls every 37 rows (view_market, a phrase to the parser) and every 11
// (sell, with an item argument), a word common in old rows but rare in the newest (beacon: the rest of the history
// must be searched; its best two rows on each side of the window's first row), a word in three of the oldest rows (zyzzyva), nudges that mention credits, and broadcast
// deliveries (bcasts: one per 97 rows).
func windowHistory(mysisID string, rows, window int64, bcasts []memory.Broadcast) func() (memory.Memory, bool) {
	seq := int64(0)
	at := time.Now().Add(-time.Hour)
	return func() (memory.Memory, bool) {
		if seq == rows {
			return memory.Memory{}, false
		}
		seq++
		r := memory.Memory{MysisID: mysisID, Seq: seq, Turn: seq/10 + 1, CreatedAt: at, Role: memory.RoleAssistant, Source: memory.SourceLLM}
		switch {
		case seq <= 3:
			r.Content = "found a zyzzyva relic near the beacon"
		case seq == rows-window || seq == rows-window+1:
			r.Content = "Beacon! beacon." // on each side of the window's edge, outranking every other beacon
		case seq%97 == 0:
			b := bcasts[seq/97]
			r.Role, r.Source, r.BroadcastID, r.Content = memory.RoleUser, memory.SourceBroadcast, b.ID, b.Content
		case seq%89 == 0:
			r.Role, r.Source, r.Content = memory.RoleUser, memory.SourceNudge, "Continue. Check your credits and sell ore."
		case seq%37 == 0:
			r.ToolCalls = []memory.ToolCall{{ID: fmt.Sprint("v", seq), Name: "view_market", Arguments: `{}`}}
			if seq%2 == 0 {
				r.Content = "I'll call view_market now."
			}
		case seq%11 == 0:
			r.ToolCalls = []memory.ToolCall{{ID: fmt.Sprint("s", seq), Name: "sell", Arguments: fmt.Sprintf(`{"item_id":"iron_ore","quantity":%d}`, seq%40)}}
		case seq%3 == 0:
			r.Role, r.Source, r.ToolName, r.ToolCallID = memory.RoleTool, memory.SourceTool, "get_status", fmt.Sprint("c", seq)
			r.Content = fmt.Sprintf(`{"player":{"credits":%d,"system":"sol"},"market":"open"}`, seq)
		case seq%7 == 0 && (seq < rows/2 || seq%700 == 0):
			r.Content = fmt.Sprintf("The beacon at marker %d blinks; titanium and copper drift past.", seq)
		default:
			r.Content = "Mining the belt, travel cooldown running."
			r.ToolCalls = []memory.ToolCall{{ID: fmt.Sprint("c", seq), Name: "mine", Arguments: `{}`}}
		}
		return r, true
	}
}

// TestSearchMatchesReference checks that SearchMessages returns exactly the rows, ranks, snippets and bounded flag of
// a reference computed from all matches by the documented rule, for words of every frequency, both orders, with and
// without nudges, on a history longer than the search window (window answered, rest of the history searched) and on
// a short one: however the statement is shaped for speed, the answer must stay this one.
func TestSearchMatchesReference(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	long, short := mkMysis(t, s), mkMysis(t, s)
	// One broadcast per delivery (a mysis gets each broadcast once), two texts alternating.
	texts := []string{"All myses: sell iron_ore before the market closes.", "Swarm order: meet at the beacon, credits are pooled."}
	bcasts := make([]memory.Broadcast, 70)
	for i := range bcasts {
		bcasts[i] = memory.Broadcast{ID: memory.NewID(), Content: texts[i%2], CreatedAt: time.Now().Add(-2 * time.Hour)}
	}
	if err := s.CopyBroadcasts(ctx, bcasts); err != nil {
		t.Fatal(err)
	}
	const longRows, shortRows, window = 6000, 1500, 2000
	for _, h := range []struct {
		id   string
		rows int64
	}{{long.ID, longRows}, {short.ID, shortRows}} {
		if _, err := s.CopyMemories(ctx, windowHistory(h.id, h.rows, window, bcasts)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetCounters(ctx, []string{long.ID, short.ID}, []int64{longRows, shortRows}, []int64{longRows/10 + 1, shortRows/10 + 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `VACUUM ANALYZE memories`); err != nil {
		t.Fatal(err)
	}
	queries := []string{"credits", "view_market", "sell", "iron_ore", "sell iron_ore", "beacon", "zyzzyva", "zyzzyvas OR relic",
		"market", `"travel cooldown"`, "titanium -copper", "sell OR buy", "nowhere_at_all"}
	for _, h := range []struct {
		id   string
		rows int64
	}{{long.ID, longRows}, {short.ID, shortRows}} {
		for _, text := range queries {
			for _, o := range []memory.SearchOrder{memory.OrderRelevance, memory.OrderRecency} {
				for _, lq := range []struct {
					limit  int
					nudges bool
				}{{20, false}, {5, true}, {100, false}} {
					q := memory.SearchQuery{MysisID: h.id, Text: text, Order: o, Limit: lq.limit, IncludeNudges: lq.nudges}
					compareWithReference(t, s, p, q, h.rows, window)
				}
			}
		}
	}
}

func compareWithReference(t *testing.T, s *svcStore, p *pgxpool.Pool, q memory.SearchQuery, lastSeq, window int64) {
	t.Helper()
	got, err := s.SearchMessages(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	want, wantBounded := referenceSearch(t, p, q, lastSeq, window)
	var gotHits []refHit
	for _, h := range got.Hits {
		gotHits = append(gotHits, refHit{ID: h.Memory.ID, Seq: h.Memory.Seq, Rank: h.Rank, Snippet: h.Snippet})
	}
	if !slices.Equal(gotHits, want) || got.CandidatesBounded != wantBounded {
		t.Errorf("%d-row history, %q, order %d, limit %d, nudges %v:\n got %d hits (bounded %v) %v\nwant %d hits (bounded %v) %v",
			lastSeq, q.Text, q.Order, q.Limit, q.IncludeNudges, len(gotHits), got.CandidatesBounded, seqsOf(gotHits),
			len(want), wantBounded, seqsOf(want))
	}
}

func seqsOf(hs []refHit) []int64 {
	out := make([]int64, len(hs))
	for i, h := range hs {
		out[i] = h.Seq
	}
	return out
}

// rangedHistory is a 44,000-row history whose matches sit on both sides of the seq bounds a read of the older rows in
// growing ranges would use (the window's first seq minus one is 42,000; ranges of 8,000 and 32,000 rows end at 34,000
// and 2,000): flare in three rows of the window and every 100th older row, on those bounds too (more than the
// candidates in the first 40,000 older rows); ember in two rows of the window and exactly 199 of the next 8,000 (window
// and first range hold exactly SearchCandidates+1), a few more below; glow in two rows of the window and exactly 18
// of the next 8,000 (exactly a limit of 20), more below; spark in three rows of the window and nowhere else. comet and
// dust are dense enough in the window (60 rows) that a limit of 100 walks the rows below it (pgstore.SearchWalk):
// dust is in every 50th older row, so the walk answers, and relevance ranks only the walked rows (the better-ranked
// dust below them is left unread); comet is in one walked row, so the walk falls short and the GIN read takes over at
// the walk's exact bound (comet rows just above, at and just below it). ash (20 rows of the window, every 100th older
// row) at a limit of 50 would be found by a walk of 6,800 rows, but its matches are too sparse for the walk to cost
// less than their GIN read, which must reach the better-ranked ash below 35,000.
func rangedHistory(mysisID string) func() (memory.Memory, bool) {
	const rows, first = 44000, 42000
	seq := int64(0)
	at := time.Now().Add(-time.Hour)
	window := map[int64]string{43991: "solar flare", 43001: "solar flare", 42501: "solar flare", 43993: "an ember",
		42003: "an ember", 43997: "faint glow", 42007: "faint glow", 43999: "a spark", 43003: "a spark", 42009: "a spark"}
	// comet and dust in every 33rd row of the window; comet below it just above, at and just below the lower bound of
	// the walk a limit of 100 makes, then in every 500th row; dust in every 50th older row, shorter (ranked higher)
	// below that bound. ash in every 100th row, shorter below 35,000.
	comets, dusts := int64(0), int64(0)
	for seq := int64(first + 1); seq <= rows; seq++ {
		if _, ok := window[seq]; !ok && seq%33 == 0 {
			comets++
		} else if !ok && seq%33 == 16 {
			dusts++
		}
	}
	lo, dustLo := first-pgstore.SearchWalk(comets, 100, first), first-pgstore.SearchWalk(dusts, 100, first)
	return func() (memory.Memory, bool) {
		if seq == rows {
			return memory.Memory{}, false
		}
		seq++
		r := memory.Memory{MysisID: mysisID, Seq: seq, Turn: seq/10 + 1, CreatedAt: at, Role: memory.RoleAssistant, Source: memory.SourceLLM,
			Content: "Mining the belt."}
		switch {
		case seq > first:
			if c, ok := window[seq]; ok {
				r.Content = c
			} else if seq%33 == 0 {
				r.Content = "a comet"
			} else if seq%33 == 16 {
				r.Content = "dust in the hold"
			} else if seq%100 == 50 {
				r.Content = "ash on the hull"
			}
		case seq == lo+1 || seq == lo || seq == lo-1 || seq < lo && seq%500 == 0:
			r.Content = "a comet"
		case seq%50 == 25 && seq > dustLo:
			r.Content = "dust in the hold"
		case seq%50 == 25:
			r.Content = "dust"
		case seq%100 == 50 && seq > 35000:
			r.Content = "ash on the hull"
		case seq%100 == 50:
			r.Content = "ash"
		case seq%100 == 0:
			r.Content = "solar flare"
		case seq%40 == 3 && (seq > 34040 || seq%400 == 3):
			r.Content = "an ember"
		case seq%40 == 7 && (seq >= 41287 || seq%400 == 7 && seq <= 34000):
			r.Content = "faint glow"
		}
		return r, true
	}
}

// TestSearchRestOfHistoryMatchesReference checks SearchMessages against the reference where the window holds some,
// but fewer than limit, matches and the rest of the history must be read: the newest older matches a few thousand rows
// back, tens of thousands back, exactly as many as needed, and none. It guards any reshaping of the older-rows read
// (a range-by-range read that drops or repeats a bound's row, or stops at limit instead of the candidates, fails it).
func TestSearchRestOfHistoryMatchesReference(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	m := mkMysis(t, s)
	const rows, window = 44000, 2000
	if _, err := s.CopyMemories(ctx, rangedHistory(m.ID)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCounters(ctx, []string{m.ID}, []int64{rows}, []int64{rows/10 + 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `VACUUM ANALYZE memories`); err != nil {
		t.Fatal(err)
	}
	if w := pgstore.SearchWalk(60, 100, 42000); w == 0 {
		t.Fatal("a limit of 100 no longer walks below a window with 60 of 2,000 rows matching: comet and dust test nothing")
	}
	for _, text := range []string{"flare", "ember", "glow", "spark", "comet", "dust", "ash", "flare OR glow", "ember -flare", "nowhere_at_all"} {
		for _, o := range []memory.SearchOrder{memory.OrderRelevance, memory.OrderRecency} {
			for _, limit := range []int{5, 20, 50, 100} {
				compareWithReference(t, s, p, memory.SearchQuery{MysisID: m.ID, Text: text, Order: o, Limit: limit}, rows, window)
			}
		}
	}
}
