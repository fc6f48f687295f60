package pgstore_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// TestSearchPlanIsRecencyBounded checks with EXPLAIN ANALYZE, on a bulk-loaded and analysed 30,000-row history, the
// property that keeps search flat however long a mysis has played: a common word, and a tool call whose matches the
// planner underestimates, are found among the newest window's rows, read through (mysis_id, seq), and the older
// rows are never read; a rare word (or a rare tool-call argument) is found through the GIN indexes below the window,
// never by walking the whole history; a word the window holds too few times but often enough is found by walking on
// a little further.
func TestSearchPlanIsRecencyBounded(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	m := mkMysis(t, s)
	const rows = 30000
	seq := int64(0)
	at := time.Now().Add(-time.Hour)
	next := func() (memory.Memory, bool) {
		if seq == rows {
			return memory.Memory{}, false
		}
		seq++
		r := memory.Memory{MysisID: m.ID, Seq: seq, Turn: seq/10 + 1, CreatedAt: at}
		switch {
		case seq <= 3: // the rare ones, oldest of all
			r.Role, r.Source, r.Content = memory.RoleAssistant, memory.SourceLLM, "found a zyzzyva relic"
			r.ToolCalls = []memory.ToolCall{{ID: fmt.Sprint("r", seq), Name: "sell", Arguments: `{"item_id":"quasar_dust"}`}}
		case seq%50 == 25: // 40 in the newest 2,000 rows: too few for a limit of 50, enough to walk for the rest
			r.Role, r.Source, r.Content = memory.RoleAssistant, memory.SourceLLM, "the beacon blinks"
		case seq%3 == 0:
			r.Role, r.Source, r.ToolName, r.ToolCallID = memory.RoleTool, memory.SourceTool, "get_status", fmt.Sprint("c", seq)
			r.Content = fmt.Sprintf(`{"player":{"credits":%d,"system":"sol"}}`, seq)
		case seq%5 == 1: // a tool call in one row of five (4,000 in all): a phrase ('view' <-> 'market') to the parser
			r.Role, r.Source = memory.RoleAssistant, memory.SourceLLM
			r.ToolCalls = []memory.ToolCall{{ID: fmt.Sprint("c", seq), Name: "view_market", Arguments: `{}`}}
		default:
			r.Role, r.Source, r.Content = memory.RoleAssistant, memory.SourceLLM, "mining the belt"
			r.ToolCalls = []memory.ToolCall{{ID: fmt.Sprint("c", seq), Name: "mine", Arguments: `{"resource_id":"iron_ore"}`}}
		}
		return r, true
	}
	if _, err := s.CopyMemories(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCounters(ctx, []string{m.ID}, []int64{rows}, []int64{rows/10 + 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `VACUUM ANALYZE memories`); err != nil {
		t.Fatal(err)
	}
	explainLimit := func(q string, o memory.SearchOrder, limit int) string {
		t.Helper()
		plan, err := s.ExplainSearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q, Order: o, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	explain := func(q string, o memory.SearchOrder) string { return explainLimit(q, o, 0) }
	// rowsRead adds up the rows every memories scan looked at (returned + removed by its filter).
	rowsRead := func(plan string) int {
		n := 0
		lines := strings.Split(plan, "\n")
		scan := regexp.MustCompile(` on memories(_p\d+)? `) // the table, or one of its hash partitions (00008)
		for i, l := range lines {
			if !scan.MatchString(l) || strings.Contains(l, "Bitmap Index Scan") {
				continue
			}
			if mm := regexp.MustCompile(`rows=(\d+) loops=(\d+)\)`).FindStringSubmatch(l); mm != nil {
				r, _ := strconv.Atoi(mm[1])
				loops, _ := strconv.Atoi(mm[2])
				n += r * loops
			}
			for _, f := range lines[i+1 : min(i+6, len(lines))] {
				if mm := regexp.MustCompile(`Rows Removed by Filter: (\d+)`).FindStringSubmatch(f); mm != nil {
					r, _ := strconv.Atoi(mm[1])
					n += r
					break
				}
			}
		}
		return n
	}

	// The window's rows are read through (mysis_id, seq): walked newest first, or (a small table, rows in seq order)
	// fetched as a bitmap of the window's range and sorted. Both read at most the window's rows.
	readsWindow := regexp.MustCompile(`(Index Scan Backward|Bitmap Index Scan) on memories_mysis_seq_key`)
	for _, o := range []memory.SearchOrder{memory.OrderRelevance, memory.OrderRecency} {
		// A word in a third of the rows: the newest window answers; at most its 2,000 rows are read.
		plan := explain("credits", o)
		if !readsWindow.MatchString(plan) {
			t.Errorf("order %d: common word is not looked for in the newest rows:\n%s", o, plan)
		}
		if n := rowsRead(plan); n == 0 || n > 2000 {
			t.Errorf("order %d: common word read %d rows of a %d-row history, want ≤ 2,000:\n%s", o, n, rows, plan)
		}
		if strings.Contains(plan, "-- statement 2") {
			t.Errorf("order %d: the older rows were read for a common word:\n%s", o, plan)
		}
		// A tool call in one row of five is a phrase whose matches the planner underestimates (as two independent words): the window is
		// searched all the same, never answered by fetching the 4,000 matches of the whole history.
		plan = explain("view_market", o)
		if !readsWindow.MatchString(plan) {
			t.Errorf("order %d: a tool call is not looked for in the newest rows:\n%s", o, plan)
		}
		if n := rowsRead(plan); n == 0 || n > 2000 {
			t.Errorf("order %d: a tool call read %d rows of a %d-row history, want ≤ 2,000:\n%s", o, n, rows, plan)
		}
		// Rare words, in the oldest rows: the GIN indexes find them; nothing walks the history.
		for q, index := range map[string]string{"zyzzyva": "memories_content_fts_idx", "quasar_dust": "memories_content_fts_idx"} {
			plan := explain(q, o)
			if !strings.Contains(plan, index) {
				t.Errorf("order %d: %s is not found through %s:\n%s", o, q, index, plan)
			}
			if n := rowsRead(plan); n > 2000+100 {
				t.Errorf("order %d: %s read %d rows, want the first window and its matches only:\n%s", o, q, n, plan)
			}
			r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q, Order: o}))
			if len(r.Hits) != 3 || r.CandidatesBounded {
				t.Errorf("order %d: %s: %d hits, bounded %v", o, q, len(r.Hits), r.CandidatesBounded)
			}
		}
	}
	// A word the window holds 40 times, asked for 50: its match rate says the 10 missing are in the next ~1,400 rows,
	// which are walked; its 560 older matches are not fetched from GIN.
	for _, o := range []memory.SearchOrder{memory.OrderRelevance, memory.OrderRecency} {
		plan := explainLimit("beacon", o, 50)
		older := plan[strings.Index(plan, "-- statement 2")+1:]
		if !strings.Contains(plan, "-- statement 2") || !readsWindow.MatchString(older) {
			t.Errorf("order %d: the rows below the window were not walked:\n%s", o, plan)
		}
		if n := rowsRead(plan); n < 2000 || n > 2000+2000 {
			t.Errorf("order %d: beacon read %d rows, want the window and a walk of ~1,400 rows:\n%s", o, n, plan)
		}
		if regexp.MustCompile(`Bitmap Index Scan on memories_(content|calls)_fts_idx\S* +\(cost=[^)]*\) \(actual`).MatchString(older) {
			t.Errorf("order %d: the older matches were fetched from GIN although the walk found them:\n%s", o, plan)
		}
		if r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "beacon", Order: o, Limit: 50})); len(r.Hits) != 50 {
			t.Errorf("order %d: beacon: %d hits, want 50", o, len(r.Hits))
		}
	}
	r := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "credits"}))
	if !r.CandidatesBounded || len(r.Hits) != memory.DefaultSearchLimit {
		t.Errorf("common word: bounded %v, %d hits", r.CandidatesBounded, len(r.Hits))
	}
	if got := must[memory.MessageHits](t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "credits", Order: memory.OrderRecency})); got.Hits[0].Memory.Seq != rows {
		t.Errorf("recency: first hit seq %d, want %d", got.Hits[0].Memory.Seq, rows)
	}
}
