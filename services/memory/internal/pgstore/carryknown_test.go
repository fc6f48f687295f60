package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// held is what a caller keeps from a whole window: its carried rows (those below the recent part's start) and the
// carry_known that names them, with the size the window reported for them (CarryBytes).
type held struct {
	rows  []memory.Memory
	known memory.CarryKnown
}

func holdCarry(t *testing.T, w memory.ComposeWindow) held {
	t.Helper()
	if w.CarryOmitted || w.CarryCut {
		t.Fatalf("holding the carry of a window that lacks some of it (omitted %v, cut %v)", w.CarryOmitted, w.CarryCut)
	}
	h := held{known: memory.CarryKnown{ObjectiveSeq: w.ObjectiveSeq, RecentStartSeq: w.RecentStartSeq, Bytes: w.CarryBytes}}
	for _, m := range w.Memories {
		if m.Seq < w.RecentStartSeq {
			h.rows = append(h.rows, m)
			h.known.Seqs = append(h.known.Seqs, m.Seq)
		}
	}
	wantCarryBytes(t, "held window", w)
	return h
}

// wantCarryBytes fails unless the window's CarryBytes is the size of its rows below the recent part's start, as
// the response bound counts them.
func wantCarryBytes(t *testing.T, what string, w memory.ComposeWindow) {
	t.Helper()
	var n int64
	for _, m := range w.Memories {
		if m.Seq < w.RecentStartSeq {
			n += int64(m.Bytes())
		}
	}
	if w.CarryBytes != n {
		t.Fatalf("%s: carry_bytes %d, want %d (the rows below %d)", what, w.CarryBytes, n, w.RecentStartSeq)
	}
}

// sameWindow fails unless got (the held rows spliced before an omitted window, or a whole window) is want, its
// carried size included: an omitted window reports the held rows' size, which is what the whole one counts.
func sameWindow(t *testing.T, what string, got, want memory.ComposeWindow) {
	t.Helper()
	wantCarryBytes(t, what, want)
	got.CarryOmitted, want.CarryOmitted = false, false
	got.RecentOmittedThrough, want.RecentOmittedThrough = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: window differs from the whole one:\n got  %v (start %d, objective %d, truncated %v)\n want %v (start %d, objective %d, truncated %v)",
			what, seqs(got.Memories), got.RecentStartSeq, got.ObjectiveSeq, got.TurnTruncated,
			seqs(want.Memories), want.RecentStartSeq, want.ObjectiveSeq, want.TurnTruncated)
	}
}

// TestComposeWindowOmitsHeldCarry: with carry_known naming the window's objective and recent start, the carried rows
// are left out, and the held rows followed by what comes back are exactly the whole window read at the same time;
// any change of objective or start (a new order, a moved start, a truncated turn whose start moves on) brings the
// whole window back, as does a held carry too large for the response bound.
func TestComposeWindowOmitsHeldCarry(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	app := func(ns ...memory.NewMemory) []memory.Memory {
		return must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, ns))
	}
	n := 0
	loop := func(name, args, result string) {
		n++
		id := fmt.Sprintf("c%d", n)
		app(assistant("", memory.ToolCall{ID: id, Name: name, Arguments: args}), toolResultArgs(id, name, args, result))
	}
	nudge := memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."}
	loop("login", `{"username":"pilot"}`, "welcome")
	app(user("Trade ore at Haven"))
	for i := range 12 {
		loop("view_market", fmt.Sprintf(`{"item":"ore%d"}`, i%5), fmt.Sprintf("ore %dcr", i))
		loop("get_status", `{}`, fmt.Sprintf("status %d", i))
	}
	app(assistant("Prices noted."))
	app(nudge)
	loop("mine", `{}`, "mined")

	whole := func(q memory.WindowQuery) memory.ComposeWindow {
		t.Helper()
		q.Known = memory.CarryKnown{}
		return must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	}
	withKnown := func(q memory.WindowQuery, h held) memory.ComposeWindow {
		t.Helper()
		q.Known = h.known
		return must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	}
	// spliced is what a caller holding h composes from a window read with it.
	spliced := func(w memory.ComposeWindow, h held) memory.ComposeWindow {
		if w.CarryOmitted {
			w.Memories = append(append([]memory.Memory(nil), h.rows...), w.Memories...)
		}
		return w
	}

	q := windowOf(m.ID, 3, 10, 2)
	w0 := whole(q)
	h := holdCarry(t, w0)
	if len(h.rows) < 6 || w0.ObjectiveSeq == 0 {
		t.Fatalf("the history should carry state: carried %v, objective %d", seqs(h.rows), w0.ObjectiveSeq)
	}
	// The composer keeps its recent part put (recent_from_seq) while the turn grows: the pure extension.
	q.RecentFrom = w0.RecentStartSeq
	loop("mine", `{}`, "mined again")
	w := withKnown(q, h)
	if !w.CarryOmitted {
		t.Fatalf("same objective and start (%d, %d): carry not omitted", w.ObjectiveSeq, w.RecentStartSeq)
	}
	if w.CarryBytes != h.known.Bytes || h.known.Bytes == 0 {
		t.Fatalf("omitted window: carry_bytes %d, want the held %d", w.CarryBytes, h.known.Bytes)
	}
	for _, r := range w.Memories {
		if r.Seq < w.RecentStartSeq {
			t.Fatalf("omitted window returned row %d below its start %d", r.Seq, w.RecentStartSeq)
		}
	}
	sameWindow(t, "extension", spliced(w, h), whole(q))

	// Either pair member differs: the whole window.
	for _, k := range []memory.CarryKnown{
		{ObjectiveSeq: h.known.ObjectiveSeq + 1, RecentStartSeq: h.known.RecentStartSeq, Bytes: h.known.Bytes},
		{ObjectiveSeq: h.known.ObjectiveSeq, RecentStartSeq: h.known.RecentStartSeq - 1, Bytes: h.known.Bytes},
	} {
		w = withKnown(q, held{known: k})
		if w.CarryOmitted {
			t.Fatalf("known %+v, window (%d, %d): omitted", k, w.ObjectiveSeq, w.RecentStartSeq)
		}
		sameWindow(t, fmt.Sprintf("known %+v", k), w, whole(q))
	}
	// Held rows that would not fit the response bound with the rest: the whole window, as the bound would keep it.
	big := h
	big.known.Bytes = memory.MaxResponseBytes
	if w = withKnown(q, big); w.CarryOmitted {
		t.Fatal("a held carry over the response bound was omitted")
	}
	sameWindow(t, "held carry over the bound", w, whole(q))

	// The start moves (the composer compacted): the held carry no longer matches.
	moved := q
	moved.RecentFrom = w0.Mysis.LastSeq
	if w = withKnown(moved, h); w.CarryOmitted || w.RecentStartSeq == h.known.RecentStartSeq {
		t.Fatalf("moved start %d: omitted %v", w.RecentStartSeq, w.CarryOmitted)
	}
	sameWindow(t, "moved start", w, whole(moved))

	// A truncated turn: with max_turn_rows the start follows the newest rows, so every append moves it.
	tr := windowOf(m.ID, 3, 10, 2)
	tr.MaxTurnRows = 6
	ht := holdCarry(t, whole(tr))
	if w = withKnown(tr, ht); !w.CarryOmitted {
		t.Fatal("truncated turn, nothing appended: carry not omitted")
	}
	sameWindow(t, "truncated, unchanged", spliced(w, ht), whole(tr))
	loop("mine", `{}`, "mined a third time")
	if w = withKnown(tr, ht); w.CarryOmitted || !w.TurnTruncated {
		t.Fatalf("truncated turn moved on to %d (held %d): omitted %v, truncated %v", w.RecentStartSeq, ht.known.RecentStartSeq, w.CarryOmitted, w.TurnTruncated)
	}
	sameWindow(t, "truncated, moved on", w, whole(tr))

	// A new commander order is a new objective: the held carry (of the old one) is not reused.
	h = holdCarry(t, whole(q))
	app(user("Now explore"))
	if w = withKnown(q, h); w.CarryOmitted || w.ObjectiveSeq == h.known.ObjectiveSeq {
		t.Fatalf("new order: objective %d (held %d), omitted %v", w.ObjectiveSeq, h.known.ObjectiveSeq, w.CarryOmitted)
	}
	sameWindow(t, "new order", w, whole(q))
}

func TestComposeWindowRejectsBadCarryKnown(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	for field, k := range map[string]memory.CarryKnown{
		"carry_known.objective_seq":      {ObjectiveSeq: -1, RecentStartSeq: 1},
		"carry_known.recent_start_seq":   {RecentStartSeq: -1},
		"carry_known.bytes":              {RecentStartSeq: 1, Bytes: -1},
		"carry_known.seqs[1]":            {RecentStartSeq: 10, Seqs: []int64{3, 10}},
		"carry_known.seqs[0]":            {RecentStartSeq: 10, Seqs: []int64{0}},
		"carry_known.seqs":               {RecentStartSeq: 10, Seqs: make([]int64, memory.MaxCarryKnownSeqs+1)},
		"carry_known.recent_through_seq": {RecentStartSeq: 10, RecentThrough: 9},
		"carry_known.recent_bytes":       {RecentStartSeq: 10, RecentThrough: 12, RecentBytes: -1},
	} {
		q := windowOf(m.ID, 3, 10, 2)
		q.Known = k
		_, err := s.GetComposeWindow(ctx, q)
		wantKind(t, err, errs.Invalid, field)
	}
}

// TestComposeWindowDerivesMovedCarry: when the caller's compaction boundary moves up under the same objective, the
// carried rows at the new start are derived from the held ones (carry_known.seqs) and the memories between the two
// starts — and they are exactly the rows a whole read at the new start carries, across thousands of generated
// rows: parallel calls, snapshot and pinned tools, calls repeated with other arguments, text replies, more distinct
// calls than carry_limit, a span since the objective longer than the scan range (so results leave the range as the
// start moves), and a new order (the objective changes: read whole again).
func TestComposeWindowDerivesMovedCarry(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	m := mkMysis(t, s)
	rng := rand.New(rand.NewPCG(10, 1))
	tools := []string{"get_status", "view_market", "travel", "mine", "get_cargo", "sell", "login"}
	var rows []memory.NewMemory
	k := 0
	loop := func() {
		n := 1 + rng.IntN(3)
		var calls []memory.ToolCall
		var results []memory.NewMemory
		for range n {
			k++
			name := tools[rng.IntN(len(tools)-1)]
			if rng.IntN(200) == 0 {
				name = "login"
			}
			args := fmt.Sprintf(`{"at":%d}`, rng.IntN(25))
			if name == "travel" { // rarely repeated: its results age out of the scan range one by one
				args = fmt.Sprintf(`{"at":%d}`, rng.IntN(2000))
			}
			id := fmt.Sprintf("d%d", k)
			calls = append(calls, memory.ToolCall{ID: id, Name: name, Arguments: args})
			results = append(results, toolResultArgs(id, name, args, fmt.Sprintf("%s result %d", name, k)))
		}
		rows = append(rows, assistant("", calls...))
		rows = append(rows, results...)
	}
	turn := func() {
		rows = append(rows, memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."})
		for range 1 + rng.IntN(8) {
			loop()
		}
		if rng.IntN(3) == 0 {
			rows = append(rows, assistant(fmt.Sprintf("Noted %d.", k)))
		}
	}
	flush := func() {
		for len(rows) > 0 {
			n := min(len(rows), 900)
			for n < len(rows) && rows[n].Role == memory.RoleTool {
				n++
			}
			must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows[:n]))
			rows = rows[n:]
		}
	}
	loop() // a login or another call before the objective
	rows = append(rows, user("Mine and trade."))
	for len(rows) < 12500 {
		turn()
	}
	flush()
	var q memory.WindowQuery
	derived, scanChecked := 0, false
	// moves reads the window at boundaries moving up from the oldest the recent part allows, each time deriving
	// from the carry held at the previous one and comparing with a whole read: with a carry_limit below the number
	// of distinct calls (the limit decides) and with the largest (every call in the scan range is carried).
	movesOf := func(what string, steps int) {
		last := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)).LastSeq
		b := max(last-int64(memory.MaxMaxTurnRows)+50, 1)
		q.RecentFrom, q.Known = b, memory.CarryKnown{}
		h := holdCarry(t, must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q)))
		for i := range steps {
			b += 1 + rng.Int64N(2*(last-b)/int64(steps-i)+1)
			if b > last {
				break
			}
			q.RecentFrom, q.Known = b, memory.CarryKnown{}
			whole := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
			q.Known = h.known
			got := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
			if got.CarryOmitted {
				t.Fatalf("%s: boundary %d: carried rows left out though the start moved from %d to %d", what, b, h.known.RecentStartSeq, got.RecentStartSeq)
			}
			if got.ObjectiveSeq == h.known.ObjectiveSeq && got.RecentStartSeq > h.known.RecentStartSeq {
				derived++
			}
			sameWindow(t, fmt.Sprintf("%s: boundary %d derived from start %d", what, b, h.known.RecentStartSeq), got, whole)
			if !scanChecked && h.known.ObjectiveSeq < b-int64(memory.CarryScanRows) {
				scanChecked = true
				// What the carried parts read, in a span longer than the scan range, on an analysed table, with
				// the plan for these values and with the generic plan a long-lived connection may settle on: the
				// results between the two starts when derived, the whole range otherwise.
				if _, err := p.Exec(ctx, `VACUUM ANALYZE memories`); err != nil {
					t.Fatal(err)
				}
				between := got.RecentStartSeq - h.known.RecentStartSeq
				for _, idx := range []string{"memories_tool_seq_idx", "memories_tool_name_idx", "memories_reply_idx"} {
					custom := indexRowsRead(explainWindowWith(t, p, q, "EXPLAIN (ANALYZE, COSTS off, TIMING off, SUMMARY off) "), idx)
					generic := indexRowsRead(explainGeneric(t, p, q, "EXPLAIN (ANALYZE, COSTS off, TIMING off, SUMMARY off) "), idx)
					if custom > between || generic > between {
						t.Errorf("%s: derived, %s read %d index entries (generic plan: %d), more than the %d rows between the starts",
							what, idx, custom, generic, between)
					}
				}
				q.Known = memory.CarryKnown{}
				if whole := indexRowsRead(explainWindowWith(t, p, q, "EXPLAIN (ANALYZE, COSTS off, TIMING off, SUMMARY off) "), "memories_tool_seq_idx"); whole < 4*between {
					t.Fatalf("%s: read whole, the carry-over scan read %d index entries, want the scan range's (%d rows between the starts)", what, whole, between)
				}
			}
			h = holdCarry(t, got)
		}
	}
	moves := func(what string, steps int) {
		for _, carry := range []int{16, memory.MaxCarryLimit} {
			q = windowOf(m.ID, 20, carry, 3)
			q.MaxTurnRows = memory.MaxMaxTurnRows
			movesOf(fmt.Sprintf("%s, carry_limit %d", what, carry), steps)
		}
	}
	moves("long span", 40)
	if !scanChecked {
		t.Fatal("no move had a span since the objective longer than the scan range")
	}
	if derived < 60 {
		t.Fatalf("only %d of the reads had a moved start to derive from", derived)
	}
	// A new order: the objective changes, so the held carry names another objective and the window is read whole.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("New orders: explore.")}))
	for len(rows) < 3000 {
		turn()
	}
	flush()
	moves("after a new order", 20)
}

// indexRowsRead sums the index entries the scans of index idx (every partition) read in an EXPLAIN ANALYZE plan:
// the rows each returned plus those its filter removed.
func indexRowsRead(plan, idx string) int64 {
	var n int64
	in := false
	for _, l := range strings.Split(plan, "\n") {
		var rows, loops int64
		switch {
		case strings.Contains(l, "using "+idx):
			in = true
			if i := strings.Index(l, "(actual rows="); i >= 0 {
				if _, err := fmt.Sscanf(l[i:], "(actual rows=%d loops=%d)", &rows, &loops); err == nil {
					n += rows * loops
				}
			}
		case strings.Contains(l, "->"):
			in = false
		case in && strings.Contains(l, "Rows Removed by Filter:"):
			if _, err := fmt.Sscanf(strings.TrimSpace(l), "Rows Removed by Filter: %d", &rows); err == nil {
				n += rows
			}
		}
	}
	return n
}
