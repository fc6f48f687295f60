package pgstore_test

import (
	"context"
	"fmt"
	"reflect"
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
		"carry_known.objective_seq":    {ObjectiveSeq: -1, RecentStartSeq: 1},
		"carry_known.recent_start_seq": {RecentStartSeq: -1},
		"carry_known.bytes":            {RecentStartSeq: 1, Bytes: -1},
	} {
		q := windowOf(m.ID, 3, 10, 2)
		q.Known = k
		_, err := s.GetComposeWindow(ctx, q)
		wantKind(t, err, errs.Invalid, field)
	}
}
