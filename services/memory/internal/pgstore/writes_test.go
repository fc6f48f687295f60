package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// A broadcast is stored once: deliveries hold no text and no vector of their own, and every read resolves them.
func TestBroadcastStoredOnce(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	a, b, c := mkMysis(t, s), mkMysis(t, s), mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, a.ID, []memory.NewMemory{user("mine copper"), assistant("on it")}))
	const text = "Regroup at haven_station before the pirate raid"
	d := must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: text}, []string{a.ID, b.ID}))
	if d.Delivered != 2 {
		t.Fatalf("delivered %d", d.Delivered)
	}
	for _, m := range d.Memories {
		if m.Content != text {
			t.Fatalf("returned delivery without its content: %+v", m)
		}
	}

	// Stored: one copy of the text (the broadcast), light delivery rows.
	var copies, withVector int
	if err := p.QueryRow(ctx, `SELECT count(*) FILTER (WHERE content <> ''), count(*) FILTER (WHERE content_tsv IS NOT NULL AND content_tsv <> ''::tsvector)
		FROM memories WHERE broadcast_id = $1`, d.Broadcast.ID).Scan(&copies, &withVector); err != nil {
		t.Fatal(err)
	}
	if copies != 0 || withVector != 0 {
		t.Fatalf("deliveries store %d copies of the text and %d vectors", copies, withVector)
	}

	// Read back: recent, range, get, compose window (as the mission), search.
	recent := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, a.ID, 5))
	last := recent[len(recent)-1]
	if last.Content != text || last.BroadcastID != d.Broadcast.ID || last.Seq != 3 || last.Turn != 2 {
		t.Fatalf("recent: %+v", last)
	}
	if got := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, a.ID, 3, 3, 10)); len(got) != 1 || got[0].Content != text {
		t.Fatalf("range: %+v", got)
	}
	if got := must[memory.Memory](t)(s.GetMemory(ctx, a.ID, last.ID)); got.Content != text {
		t.Fatalf("get: %+v", got)
	}
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: a.ID, Window: 10}))
	if w.Mission == nil || w.Mission.Memory.Content != text || w.Memories[len(w.Memories)-1].Content != text {
		t.Fatalf("compose window: %+v", w)
	}
	hits := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: b.ID, Text: "pirate raid"}))
	if len(hits) != 1 || hits[0].Memory.ID != d.Memories[1].ID || hits[0].Memory.Content != text ||
		!strings.Contains(hits[0].Snippet, "«pirate» «raid»") {
		t.Fatalf("search of a recipient: %+v", hits)
	}
	// Only recipients find it among their messages.
	if hits := msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: c.ID, Text: "pirate raid"})); len(hits) != 0 {
		t.Fatalf("a mysis that did not receive the broadcast found it: %+v", hits)
	}
	// A delivery to a late joiner resolves the same way.
	late := must[memory.Delivery](t)(s.DeliverBroadcast(ctx, d.Broadcast.ID, []string{c.ID, a.ID}))
	if late.Delivered != 1 || late.AlreadyDelivered != 1 || late.Memories[0].Content != text || late.Memories[1].Content != text {
		t.Fatalf("late delivery: %+v", late)
	}
}

// With asynchronous indexing a tool result is not searchable until the indexer's next pass, then it is; every
// other row is searchable at once. The indexer is driven by a tick channel and reports each pass, so the test
// never sleeps.
func TestAsyncIndexingMakesToolResultsSearchableOnTheNextPass(t *testing.T) {
	ctx := context.Background()
	s := newSvcStore(pool(t), testBox(t), pgstore.WithAsyncFTS())
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		user("sell the zirconium stock"),
		assistant("", memory.ToolCall{ID: "c1", Name: "view_market", Arguments: `{}`}),
		toolResult("c1", "view_market", `{"items":[{"item_id":"zirconium_ore","price":41}]}`),
	}))
	// Hits that hold q as written (a search for an identifier no memory holds yet falls back to its words, which
	// other rows hold).
	search := func(q string) int {
		n := 0
		for _, h := range msgHits(t)(s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: q})) {
			if strings.Contains(h.Memory.Content, q) {
				n++
			}
		}
		return n
	}
	if search("stock") != 1 {
		t.Fatal("a user message is not searchable at once")
	}
	if search("zirconium_ore") != 0 {
		t.Fatal("a tool result was indexed synchronously")
	}

	ticks := make(chan time.Time)
	passes := make(chan int, 16)
	ictx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	x := &pgstore.Indexer{Store: s.Store, Passed: func(n int, err error) {
		if err != nil {
			t.Error(err)
		}
		passes <- n
	}}
	go func() { defer close(done); x.Run(ictx, ticks) }()
	defer func() { cancel(); <-done }()

	<-passes // the pass at start indexes what was pending
	if search("zirconium_ore") != 1 {
		t.Fatal("the tool result is not searchable after the indexer's first pass")
	}
	// A result appended later waits for the next tick.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		assistant("", memory.ToolCall{ID: "c2", Name: "get_cargo", Arguments: `{}`}),
		toolResult("c2", "get_cargo", `{"cargo":[{"item_id":"hafnium_ore","quantity":9}]}`),
	}))
	if search("hafnium_ore") != 0 {
		t.Fatal("indexed before the tick")
	}
	ticks <- time.Now()
	if n := <-passes; n < 1 {
		t.Fatalf("the pass after the tick indexed %d rows", n)
	}
	if search("hafnium_ore") != 1 {
		t.Fatal("the tool result is not searchable after the tick's pass")
	}
	if n, _, err := s.PendingIndex(ctx); err != nil || n != 0 {
		t.Fatalf("pending after a pass: %d %v", n, err)
	}
}

// A backlog larger than one batch is drained in one pass.
func TestIndexerDrainsABacklogInOnePass(t *testing.T) {
	ctx := context.Background()
	async := newSvcStore(pool(t), nil, pgstore.WithAsyncFTS())
	m := mkMysis(t, async)
	rows := make([]memory.NewMemory, 0, pgstore.IndexBatch+2)
	rows = append(rows, assistant("", memory.ToolCall{ID: "c", Name: "mine", Arguments: `{}`}))
	for len(rows) < cap(rows) {
		rows = append(rows, toolResult("c", "mine", `{"mined":"beryllium_ore"}`))
	}
	must[[]memory.Memory](t)(async.AppendMemories(ctx, m.ID, rows))
	n, oldest, err := async.PendingIndex(ctx)
	if err != nil || n < int64(pgstore.IndexBatch+1) || oldest < 0 {
		t.Fatalf("pending %d (oldest %s) %v", n, oldest, err)
	}
	passes := make(chan int, 1)
	ictx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&pgstore.Indexer{Store: async.Store, Passed: func(n int, _ error) { passes <- n }}).Run(ictx, nil)
	}()
	got := <-passes
	cancel()
	<-done
	if got < pgstore.IndexBatch+1 {
		t.Fatalf("first pass indexed %d of %d", got, pgstore.IndexBatch+1)
	}
	hits := msgHits(t)(async.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "beryllium_ore", Limit: 100}))
	if len(hits) != 100 {
		t.Fatalf("hits after the pass: %d", len(hits))
	}
}

// An append is two round trips whatever it carries, conditional or not: BEGIN rides with the lock batch, COMMIT
// with the write batch. A failed append leaves no transaction open on the pooled connection.
func TestAppendTakesTwoRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, rt := tracedStore(t)
	m := mkMysis(t, s)
	for i, batch := range [][]memory.NewMemory{
		{user("one row")},
		{assistant("", memory.ToolCall{ID: "c", Name: "mine", Arguments: `{}`}), toolResult("c", "mine", `{"ok":true}`)},
		{toolResult("c", "mine", `{"again":true}`)}, // its call's arguments are looked up in the same batch
		{{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "keyed", IdempotencyKey: "k"}},
		{{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "keyed", IdempotencyKey: "k"}}, // a retry
	} {
		before := rt.n.Load()
		if _, err := s.AppendMemories(ctx, m.ID, batch); err != nil {
			t.Fatal(err)
		}
		if n := rt.n.Load() - before; n != 2 {
			t.Fatalf("append %d: %d round trips, want 2", i, n)
		}
	}
	seen := int64(5)
	cond := memory.AppendCondition{IfNoPromptAfterSeq: &seen,
		State: &memory.StateChange{State: memory.StateRunning, Expected: memory.StateIdle}}
	before := rt.n.Load()
	if _, err := s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{assistant("conditional")}, cond); err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load() - before; n != 2 {
		t.Fatalf("conditional append: %d round trips, want 2", n)
	}
	_, err := s.AppendMemories(ctx, memory.NewID(), []memory.NewMemory{user("nobody")})
	wantKind(t, err, errs.NotFound, "")
	// Every pooled connection is idle (not inside an aborted transaction): a burst of appends works.
	for i := range 20 {
		if _, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{user(fmt.Sprintf("after %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if got := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, m.ID, 1)); got[0].Seq != 26 {
		t.Fatalf("seq after the burst: %d", got[0].Seq)
	}
}

// TestAppendsRunOnGenericPlans checks, through the one connection of a one-connection pool, that every statement of
// an append's transaction, and the compose window's statement (v1 and v2 windows), ran on its cached generic plan and
// none was planned again (pg_prepared_statements counts both per statement). Left to itself Postgres plans the first five executions of each statement on every
// connection afresh, and on a large table, where it prices a generic plan of the partitioned memories table (pruned
// only when it starts) above a custom one, every execution.
func TestAppendsRunOnGenericPlans(t *testing.T) {
	ctx := context.Background()
	s, p := freshStoreConns(t, 1)
	m := mkMysis(t, s)
	const rounds = 8 // past the five custom plans Postgres tries before it compares
	for i := range rounds {
		for _, batch := range [][]memory.NewMemory{
			{{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "order", IdempotencyKey: fmt.Sprint("k", i)}},
			{assistant("", memory.ToolCall{ID: fmt.Sprint("c", i), Name: "mine", Arguments: `{}`})},
			{toolResult(fmt.Sprint("c", i), "mine", `{"ok":true}`)}, // its call's arguments come from the stored history
		} {
			if _, err := s.AppendMemories(ctx, m.ID, batch); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []memory.WindowQuery{{MysisID: m.ID, Window: 20}, windowOf(m.ID, 20, 10, 3)} {
			if _, err := s.GetComposeWindow(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows, err := p.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for rows.Next() {
		var stmt string
		var generic, custom int64
		if err := rows.Scan(&stmt, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		for _, what := range []string{"FOR NO KEY UPDATE", "AS k(mysis_id, idempotency_key)", "SELECT m.tool_calls FROM memories",
			"INSERT INTO memories", "UPDATE myses y SET last_seq", "om AS MATERIALIZED"} {
			if strings.Contains(stmt, what) {
				seen[what] = true
				if custom > 0 || generic < rounds {
					t.Errorf("%q: %d generic and %d custom plans over %d appends, want only generic", what, generic, custom, rounds)
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 6 {
		t.Fatalf("the append's and the window's statements were not all found among the connection's prepared statements: %v", seen)
	}
}
