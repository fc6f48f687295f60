package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// termCountsMatch compares the stored term counts of a mysis with an aggregate over its vectors.
func termCountsMatch(t *testing.T, p *pgxpool.Pool, mysisID string) {
	t.Helper()
	var diff, docs, wantDocs, length, wantLen int64
	if err := p.QueryRow(context.Background(), `
		WITH want AS (SELECT l AS lexeme, count(*) AS df FROM memories m, unnest(tsvector_to_array(m.content_tsv)) l
			WHERE m.mysis_id = $1 AND m.content_tsv IS NOT NULL GROUP BY l),
		got AS (SELECT lexeme, df FROM memory_terms WHERE mysis_id = $1)
		SELECT (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM got UNION ALL (SELECT * FROM got EXCEPT SELECT * FROM want)) d),
			coalesce((SELECT docs FROM memory_term_totals WHERE mysis_id = $1), 0),
			(SELECT count(*) FROM memories WHERE mysis_id = $1 AND content_tsv IS NOT NULL),
			coalesce((SELECT len FROM memory_term_totals WHERE mysis_id = $1), 0),
			(SELECT coalesce(sum(length(content_tsv)), 0) FROM memories WHERE mysis_id = $1)`, mysisID).
		Scan(&diff, &docs, &wantDocs, &length, &wantLen); err != nil {
		t.Fatal(err)
	}
	if diff != 0 || docs != wantDocs || length != wantLen {
		t.Fatalf("term counts of %s: %d lexemes differ; docs %d want %d; len %d want %d", mysisID, diff, docs, wantDocs, length, wantLen)
	}
}

// The term counts equal an aggregate over the stored vectors whichever path wrote them — appends indexing their
// rows, the asynchronous indexer filling tool results, the bulk loader — and however often the counter ran in
// between; a deleted mysis leaves no counts.
func TestTermCountsFollowEveryWritePath(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	async := newSvcStore(p, testBox(t), pgstore.WithAsyncFTS())
	m := mkMysis(t, s)
	for i := range 3 {
		must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
			user(fmt.Sprintf("Mine iron ore at station %d", i)),
			assistant("Selling copper", memory.ToolCall{ID: fmt.Sprint("c", i), Name: "sell", Arguments: `{"item_id":"copper_ore"}`}),
			toolResult(fmt.Sprint("c", i), "sell", fmt.Sprintf(`{"credits_earned":%d,"item":"copper_ore"}`, 10*i)),
		}))
		if i == 1 {
			countTerms(t, s) // a count in between: later rows add to it
		}
	}
	// Tool results left to the indexer are counted when it fills them.
	must[[]memory.Memory](t)(async.AppendMemories(ctx, m.ID, []memory.NewMemory{
		assistant("", memory.ToolCall{ID: "z", Name: "get_cargo", Arguments: `{}`}),
		toolResult("z", "get_cargo", `{"cargo":[{"item_id":"zinc_ore","qty":9}]}`),
	}))
	countTerms(t, s)
	termCountsMatch(t, p, m.ID) // the pending tool result has no vector yet, so no counts
	if _, err := async.IndexPending(ctx, 100); err != nil {
		t.Fatal(err)
	}
	countTerms(t, s)
	termCountsMatch(t, p, m.ID)

	// Bulk loads queue their rows too.
	b := mkMysis(t, s)
	seq := int64(0)
	if _, err := s.Store.CopyMemories(ctx, func() (memory.Memory, bool) {
		if seq == 50 {
			return memory.Memory{}, false
		}
		seq++
		return memory.Memory{MysisID: b.ID, Seq: seq, Turn: 1, Role: memory.RoleUser, Source: memory.SourceDirect,
			Content: fmt.Sprintf("bulk row %d about titanium", seq%7)}, true
	}); err != nil {
		t.Fatal(err)
	}
	countTerms(t, s)
	termCountsMatch(t, p, b.ID)

	if err := s.DeleteMysis(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	var left int64
	if err := p.QueryRow(ctx, `SELECT (SELECT count(*) FROM memory_terms WHERE mysis_id = $1) + (SELECT count(*) FROM memory_term_totals WHERE mysis_id = $1)`, m.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("a deleted mysis left %d count rows (%v)", left, err)
	}
}

// The indexer's pass counts what appends queued even when no tool result was pending (synchronous indexing).
func TestIndexerPassCountsTerms(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("count these words"), assistant("and these")}))
	ticks := make(chan time.Time)
	passed := make(chan error, 4)
	ictx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	x := &pgstore.Indexer{Store: s.Store, Passed: func(_ int, err error) { passed <- err }}
	go func() { defer close(done); x.Run(ictx, ticks) }()
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	termCountsMatch(t, p, m.ID)
}
