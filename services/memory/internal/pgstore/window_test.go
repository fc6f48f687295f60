package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/callkey"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// TestCallKeyMatchesSQL keeps callkey.Of (libs/callkey, new rows) and the migration's zoea_call_key (the backfill of older
// rows) in step: a result stored before the migration and one stored after it must get the same key for the same
// call, or the older one would be carried as if it answered another call.
func TestCallKeyMatchesSQL(t *testing.T) {
	ctx := context.Background()
	long := `{"entry":"` + strings.Repeat("Sold 40 ore at Haven. ", 30) + `"}`
	corpus := []string{
		`{}`, ` { } `, `{"item_id":"iron_ore","quantity":5}`, `{"quantity": 5, "item_id": "iron_ore"}`,
		"{\n\t\"target\" : \"sol\"\n}", `{"a":{"z":1,"b":[3,2,{"y":null,"x":true}]},"A":false}`,
		`{"n":1.50}`, `{"n":-0}`, `{"n":-0.0}`, `{"n":1e2}`, `{"n":1.5E-3}`, `{"n":12.5e+1}`, `{"n":0.000}`,
		`{"n":123456789012345678901234567890}`, `{"n":-1E-2}`, `{"n":1e1001}`, `{"n":1e131071}`, `{"n":1e131072}`, `{"n":1e-16383}`, `{"n":1e-16384}`,
		`{"n":1e999999999}`,
		`{"s":"é \u00e9 \u2028 \ud83d\ude00 😀"}`, `{"s":"tab\tnl\nquote\"back\\slash\/ctl\u0001\u001f"}`,
		`{"s":"<&>"}`, `{"dup":1,"dup":2}`, `{"é":1,"e":2,"z":3,"É":4,"":5}`,
		`{"s":"\u0000"}`, `{"s":"\ud800"}`, `{"s":"\udc00x"}`, `{"s":"\ud83dx"}`, `{"s":"\\u0000"}`,
		`{"a":1} trailing`, `[1,2]`, `"just a string"`, `not json`, ``, `{"a":`, long,
	}
	for _, args := range corpus {
		var sqlKey string
		if err := pool(t).QueryRow(ctx, `SELECT zoea_call_key($1, $2)`, "view_market", args).Scan(&sqlKey); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if goKey := callkey.Of("view_market", args); goKey != sqlKey {
			t.Errorf("call key of %q:\n  go  %q\n  sql %q", args, goKey, sqlKey)
		}
	}
	if callkey.Of("t", `{"b":1, "a":2}`) != callkey.Of("t", `{"a":2,"b":1}`) {
		t.Error("key order or whitespace changes the key")
	}
	if k := callkey.Of("captains_log_add", long); len(k) > 100 || !strings.HasPrefix(k, "captains_log_add sha256:") {
		t.Errorf("long arguments are not hashed: %q", k)
	}
}

func toolResultArgs(id, name, args, content string) memory.NewMemory {
	n := toolResult(id, name, content)
	n.CallArguments = args
	return n
}

func TestAppendKeysToolResults(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	call := memory.ToolCall{ID: "c1", Name: "view_market", Arguments: `{ "item": "ore", "station": "haven" }`}
	want := `view_market {"item":"ore","station":"haven"}`

	// Explicit arguments (what the runner sends).
	got := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		assistant("", call), toolResultArgs("c1", "view_market", call.Arguments, "{}"),
	}))
	if got[1].CallKey != want || got[1].CallArguments != call.Arguments || got[0].CallKey != "" {
		t.Fatalf("explicit: %+v", got)
	}
	// Omitted, the assistant in the same batch.
	call2 := memory.ToolCall{ID: "c2", Name: "view_market", Arguments: `{"station":"haven","item":"ore"}`}
	got = must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{assistant("", call2), toolResult("c2", "view_market", "{}")}))
	if got[1].CallKey != want || got[1].CallArguments != call2.Arguments {
		t.Fatalf("from the batch: %+v", got[1])
	}
	// Omitted, the assistant stored by an earlier append (an older runner stores results one by one).
	calls := []memory.ToolCall{{ID: "c3", Name: "get_status", Arguments: `{}`}, {ID: "c4", Name: "travel", Arguments: `{"to":"sol"}`}}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{assistant("", calls...)}))
	r3 := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{toolResult("c3", "get_status", "{}")}))[0]
	r4 := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{toolResult("c4", "travel", "ok")}))[0]
	if r3.CallKey != "get_status {}" || r4.CallKey != `travel {"to":"sol"}` || r4.CallArguments != `{"to":"sol"}` {
		t.Fatalf("from the store: %q %q", r3.CallKey, r4.CallKey)
	}
	// A result whose call cannot be found is keyed by its tool name alone, arguments unknown.
	r5 := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{toolResult("nope", "mine", "ok")}))[0]
	if r5.CallKey != "mine " || r5.CallArguments != "" {
		t.Fatalf("unknown call: %+v", r5)
	}
	// Stored keys come back on reads, and a retry returns the stored row with its key.
	n := toolResultArgs("c9", "sell", `{"item":"ore"}`, "sold")
	n.IdempotencyKey = "k-sell"
	first := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{n}))[0]
	again := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{n}))[0]
	read := must[memory.Memory](t)(s.GetMemory(ctx, m.ID, first.ID))
	if again.ID != first.ID || again.CallKey != `sell {"item":"ore"}` || read.CallKey != again.CallKey || read.CallArguments != `{"item":"ore"}` {
		t.Fatalf("retry/read: %+v %+v", again, read)
	}
}

// windowOf is a v2 query with the composer's usual shape.
func windowOf(id string, window, carry, replies int) memory.WindowQuery {
	return memory.WindowQuery{MysisID: id, Window: window, GlobalFallback: true, CarryLimit: carry, ReplyLimit: replies,
		SnapshotTools: []string{"get_status"}, PinnedTools: []string{"login", "register"}}
}

func seqs(ms []memory.Memory) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

// recentOf returns the window's contiguous recent part and the carried rows before it, checking the invariants
// every window keeps: chronological, no duplicates, the recent part gapless up to the newest memory, never starting
// on a tool result (v2).
func recentOf(t *testing.T, w memory.ComposeWindow, v2 bool) (recent, carried []memory.Memory) {
	t.Helper()
	for i := 1; i < len(w.Memories); i++ {
		if w.Memories[i].Seq <= w.Memories[i-1].Seq {
			t.Fatalf("not chronological or duplicated: %v", seqs(w.Memories))
		}
	}
	i := slices.IndexFunc(w.Memories, func(m memory.Memory) bool { return m.Seq >= w.RecentStartSeq })
	if i < 0 {
		if w.Mysis.LastSeq != 0 {
			t.Fatalf("no recent part (start %d): %v", w.RecentStartSeq, seqs(w.Memories))
		}
		return nil, w.Memories
	}
	recent, carried = w.Memories[i:], w.Memories[:i]
	if recent[0].Seq != w.RecentStartSeq || recent[len(recent)-1].Seq != w.Mysis.LastSeq ||
		int64(len(recent)) != w.Mysis.LastSeq-w.RecentStartSeq+1 {
		t.Fatalf("recent part not the contiguous tail from %d to %d: %v", w.RecentStartSeq, w.Mysis.LastSeq, seqs(recent))
	}
	if v2 && recent[0].Role == memory.RoleTool {
		t.Fatalf("v2 recent part starts on a tool result at %d", recent[0].Seq)
	}
	return recent, carried
}

func TestComposeWindowLongTurn(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("Earlier order"), assistant("done")}))
	order := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("Mine 300 rows worth")}))[0]
	// One turn of 150 loops (300 rows), the first of them get_status.
	var loop []memory.NewMemory
	for i := range 150 {
		id, name := fmt.Sprintf("c%d", i), "mine"
		if i == 0 {
			name = "get_status"
		}
		loop = append(loop, assistant("", memory.ToolCall{ID: id, Name: name, Arguments: "{}"}), toolResult(id, name, "ok"))
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, loop))

	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 20, 50, 3)))
	recent, carried := recentOf(t, w, true)
	if w.RecentStartSeq != order.Seq || len(recent) != 301 || w.TurnTruncated || w.ObjectiveSeq != order.Seq {
		t.Fatalf("the whole turn from its order: start %d (order %d), %d rows, truncated %v, objective %d",
			w.RecentStartSeq, order.Seq, len(recent), w.TurnTruncated, w.ObjectiveSeq)
	}
	if recent[2].ToolName != "get_status" {
		t.Fatalf("the turn's first loop is missing: %+v", recent[2])
	}
	if len(carried) != 0 {
		t.Fatalf("nothing to carry since the objective, got %v", seqs(carried))
	}

	// Bounded: the oldest rows are left out, the bound is hard, the start is moved past the cut loop's result.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, MaxTurnRows: 101}))
	recent, _ = recentOf(t, w, true)
	if !w.TurnTruncated || len(recent) > 101 || len(recent) < 100 || recent[0].Role != memory.RoleAssistant {
		t.Fatalf("truncated turn: truncated %v, %d rows from %+v", w.TurnTruncated, len(recent), recent[0])
	}
	// v1 is unchanged: the last 20 rows, whatever they start on.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20}))
	recent, _ = recentOf(t, w, false)
	if len(recent) != 20 || len(w.Memories) != 20 || w.TurnTruncated || w.RecentStartSeq != w.Mysis.LastSeq-19 {
		t.Fatalf("v1: %d rows from %d", len(w.Memories), w.RecentStartSeq)
	}
}

func TestComposeWindowStartsOnALoop(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	// Turn 1: an order, one assistant message with 4 calls and their results, a reply. Turn 2: a nudge and a loop.
	var calls []memory.ToolCall
	var results []memory.NewMemory
	for i := range 4 {
		id := fmt.Sprintf("c%d", i)
		calls = append(calls, memory.ToolCall{ID: id, Name: "get_system", Arguments: fmt.Sprintf(`{"i":%d}`, i)})
		results = append(results, toolResult(id, "get_system", "sys"))
	}
	rows := append([]memory.NewMemory{user("Scout")}, assistant("", calls...))
	rows = append(rows, results...)
	rows = append(rows, assistant("Scouted."), memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."},
		assistant("", memory.ToolCall{ID: "d", Name: "mine", Arguments: "{}"}), toolResult("d", "mine", "ok"))
	got := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
	asst := got[1]
	// The last 7 rows start on the third result (seq 5): v2 moves back to the assistant that made the calls.
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 7, 0, 0)))
	recent, carried := recentOf(t, w, true)
	if w.RecentStartSeq != asst.Seq || recent[0].ID != asst.ID || len(recent) != 9 || len(carried) != 0 {
		t.Fatalf("start %d (assistant %d), %d recent, carried %v", w.RecentStartSeq, asst.Seq, len(recent), seqs(carried))
	}
	// v1 starts where the count says, on the tool result.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 7}))
	if w.Memories[0].Role != memory.RoleTool || len(w.Memories) != 7 || w.RecentStartSeq != w.Memories[0].Seq {
		t.Fatalf("v1 start: %+v", w.Memories[0])
	}
	// The turn bound is hard: moving back to the call would make 9 rows of at most 8, so the start moves forward
	// past the cut loop's results instead (here to the reply that ends the loop).
	q := windowOf(m.ID, 7, 0, 0)
	q.MaxTurnRows = 8
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	if recent, _ = recentOf(t, w, true); recent[0].Content != "Scouted." || len(recent) != 4 || w.TurnTruncated {
		t.Fatalf("bounded move: %v from %q", seqs(recent), recent[0].Content)
	}
	// A window that already starts on a loop boundary is not moved.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 3, 0, 0)))
	if recent, _ = recentOf(t, w, true); recent[0].Source != memory.SourceNudge || len(recent) != 3 {
		t.Fatalf("nudge turn: %v", seqs(recent))
	}
}

func TestComposeWindowCarriesState(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	app := func(ns ...memory.NewMemory) []memory.Memory {
		return must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, ns))
	}
	loop := func(id, name, args, result string) (memory.Memory, memory.Memory) {
		r := app(assistant("", memory.ToolCall{ID: id, Name: name, Arguments: args}), toolResultArgs(id, name, args, result))
		return r[0], r[1]
	}
	nudge := memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."}

	// Before the objective: a login (pinned) and state that the objective makes stale.
	loginCall, login := loop("l", "login", `{"username":"pilot"}`, "welcome")
	loop("old", "view_market", `{"item":"ore"}`, "stale market")
	app(assistant("Logged in."))
	order := app(user("Trade ore at Haven"))[0]
	// Turn 1: market ore, status, a text reply.
	loop("a1", "view_market", `{"item":"ore"}`, "ore 10cr")
	statusCall1, status1 := loop("s1", "get_status", `{}`, "status 1")
	reply1 := app(assistant("Ore sells for 10cr."))[0]
	// Turn 2: market ore again (other whitespace: the same call), market ice, status with other arguments, reply.
	app(nudge)
	a2Call, a2 := loop("a2", "view_market", `{ "item" : "ore" }`, "ore 12cr")
	iceCall, ice := loop("b1", "view_market", `{"item":"ice"}`, "ice 3cr")
	statusCall2, status2 := loop("s2", "get_status", `{"verbose":true}`, "status 2")
	reply2 := app(assistant("Ore is up to 12cr."))[0]
	// Turn 3, the current one.
	app(nudge)
	loop("m", "mine", `{}`, "mined")

	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 3, 10, 1)))
	recent, carried := recentOf(t, w, true)
	if w.ObjectiveSeq != order.Seq || len(recent) != 3 || recent[0].Source != memory.SourceNudge {
		t.Fatalf("objective %d (order %d), recent %v", w.ObjectiveSeq, order.Seq, seqs(recent))
	}
	// Newest result per call since the objective, each after its call; get_status keyed by name (newest only);
	// the pinned login however old; the newest reply only (reply_limit 1). Nothing superseded, nothing stale.
	want := []int64{loginCall.Seq, login.Seq, a2Call.Seq, a2.Seq, iceCall.Seq, ice.Seq, statusCall2.Seq, status2.Seq, reply2.Seq}
	if !slices.Equal(seqs(carried), want) {
		t.Fatalf("carried %v want %v", seqs(carried), want)
	}
	if carried[3].Content != "ore 12cr" || carried[3].CallKey != `view_market {"item":"ore"}` {
		t.Fatalf("carried market: %+v", carried[3])
	}

	// Without the snapshot rule both get_status calls are distinct; reply_limit 5 returns both replies; carry_limit
	// keeps the newest keys only.
	q := windowOf(m.ID, 3, 10, 5)
	q.SnapshotTools = nil
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	_, carried = recentOf(t, w, true)
	for _, mm := range []memory.Memory{statusCall1, status1, reply1, reply2, status2} {
		if !slices.Contains(seqs(carried), mm.Seq) {
			t.Fatalf("%d missing from %v", mm.Seq, seqs(carried))
		}
	}
	q.CarryLimit, q.ReplyLimit, q.PinnedTools = 1, 0, nil
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	if _, carried = recentOf(t, w, true); !slices.Equal(seqs(carried), []int64{statusCall2.Seq, status2.Seq}) {
		t.Fatalf("carry_limit 1: %v", seqs(carried))
	}
	// No pinned tools, no carry: the pinned login is not returned.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 3, ReplyLimit: 1}))
	if _, carried = recentOf(t, w, true); !slices.Equal(seqs(carried), []int64{reply2.Seq}) {
		t.Fatalf("replies only: %v", seqs(carried))
	}

	// Carried rows are the state as of the recent part's start: a result whose call has a newer result in the
	// recent part is still carried (the composer decides; its compacted past must not change as the recent part
	// grows), so view the ore market again now and both ore results are in the window.
	app(assistant("", memory.ToolCall{ID: "a3", Name: "view_market", Arguments: `{"item":"ore"}`}), toolResultArgs("a3", "view_market", `{"item":"ore"}`, "ore 13cr"))
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 2, 10, 0)))
	recent, carried = recentOf(t, w, true)
	if !slices.Contains(seqs(carried), a2.Seq) || !slices.Contains(seqs(carried), ice.Seq) || recent[len(recent)-1].Content != "ore 13cr" {
		t.Fatalf("as of the recent part's start: carried %v", seqs(carried))
	}

	// recent_from_seq (the composer's previous boundary) places the recent part's start there instead of the
	// window and turn rules, onto a loop boundary.
	q = windowOf(m.ID, 2, 10, 0)
	q.RecentFrom = a2Call.Seq
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	if w.RecentStartSeq != a2Call.Seq {
		t.Fatalf("recent_from_seq %d: recent part starts at %d", a2Call.Seq, w.RecentStartSeq)
	}

	// A new order is a new objective: nothing from before it is carried except the pinned login.
	app(user("Now explore"))
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 1, 10, 5)))
	if _, carried = recentOf(t, w, true); !slices.Equal(seqs(carried), []int64{loginCall.Seq, login.Seq}) {
		t.Fatalf("after a new objective: %v", seqs(carried))
	}
}

func TestComposeWindowWithoutMission(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	m := mkMysis(t, s)
	// Only nudges open turns: no mission, so the carry spans the whole history.
	nudge := memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."}
	r := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		nudge, assistant("", memory.ToolCall{ID: "a", Name: "get_poi", Arguments: "{}"}), toolResult("a", "get_poi", "poi"),
		assistant("Looked."), nudge, assistant("", memory.ToolCall{ID: "b", Name: "mine", Arguments: "{}"}), toolResult("b", "mine", "ok"),
	}))
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(m.ID, 2, 10, 10)))
	recent, carried := recentOf(t, w, true)
	if w.Mission != nil || w.ObjectiveSeq != 0 || recent[0].Seq != r[4].Seq ||
		!slices.Equal(seqs(carried), []int64{r[1].Seq, r[2].Seq, r[3].Seq}) {
		t.Fatalf("no mission: objective %d, recent %v, carried %v", w.ObjectiveSeq, seqs(recent), seqs(carried))
	}
	// An empty history.
	e := mkMysis(t, s)
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, windowOf(e.ID, 20, 10, 10)))
	if len(w.Memories) != 0 || w.RecentStartSeq != 0 || w.ObjectiveSeq != 0 || w.TurnTruncated {
		t.Fatalf("empty: %+v", w)
	}
}

// TestComposeWindowV1Compatible: a request without the v2 fields is exactly the v1 window (the newest rows) plus
// recent_start_seq, on a history with everything v2 would add.
func TestComposeWindowV1Compatible(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	for i := range 30 {
		id := fmt.Sprintf("c%d", i)
		must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
			user("order"), assistant("", memory.ToolCall{ID: id, Name: "login", Arguments: "{}"}), toolResult(id, "login", "ok"), assistant("reply"),
		}))
	}
	for _, n := range []int{1, 3, 20, 200} {
		w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: n, GlobalFallback: true,
			SnapshotTools: []string{"login"}}))
		want := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, m.ID, n))
		if !slices.Equal(seqs(w.Memories), seqs(want)) || w.RecentStartSeq != want[0].Seq || w.TurnTruncated || w.ObjectiveSeq == 0 {
			t.Fatalf("window %d: %v want %v (start %d)", n, seqs(w.Memories), seqs(want), w.RecentStartSeq)
		}
	}
}

// The window statement gets the capped limits of a normalised query (bad values are the Service's:
// memory.TestComposeWindowValidation), and a turn bound never below the window.
func TestComposeWindowArgsAreCapped(t *testing.T) {
	id := memory.NewID()
	args, err := pgstore.WindowArgs(memory.WindowQuery{MysisID: id, Window: 50, CarryLimit: 5000, ReplyLimit: 5000, MaxTurnRows: 1 << 30})
	if err != nil || args[4] != memory.MaxMaxTurnRows || args[5] != memory.MaxCarryLimit || args[8] != memory.MaxReplyLimit {
		t.Fatalf("caps: %v %v", args, err)
	}
	if args, _ = pgstore.WindowArgs(memory.WindowQuery{MysisID: id, Window: 500, MaxTurnRows: 100}); args[4] != 500 {
		t.Fatalf("the turn bound is never below the window: %v", args[4])
	}
}
