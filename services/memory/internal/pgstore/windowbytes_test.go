package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// A window of 50 tool results of 2 MiB each (100 MiB of rows) composes: every result comes back cut to the result
// cap with its pointer, so the 50 rows fit. Asked for uncut results, the response is bounded by bytes instead: the
// newest rows within memory.MaxResponseBytes, the mission kept, the turn reported truncated.
func TestComposeWindowBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	mission := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("Mine ore and sell it.")}))[0]
	big := strings.Repeat("r", 2<<20)
	var results []memory.Memory
	for i := range 50 {
		id := fmt.Sprintf("c%d", i)
		got := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
			assistant("", memory.ToolCall{ID: id, Name: "get_map", Arguments: "{}"}), toolResult(id, "get_map", big)}))
		results = append(results, got[1])
	}

	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 100}))
	if len(w.Memories) != 100 || w.Mission == nil || w.Mission.Memory.ID != mission.ID || w.TurnTruncated {
		t.Fatalf("default cap: %d rows, mission %v, truncated %t; want all 100 rows and the mission", len(w.Memories), w.Mission, w.TurnTruncated)
	}
	total := 0
	cut := 0
	for _, r := range w.Memories {
		total += r.Bytes()
		if r.Role != memory.RoleTool {
			continue
		}
		want := fmt.Sprintf("…[cut: %d bytes more; full result is memory #%d, search for it]", len(big)-memory.DefaultMaxResultBytes, r.ID)
		if !strings.HasPrefix(r.Content, big[:memory.DefaultMaxResultBytes]) || !strings.HasSuffix(r.Content, want) ||
			len(r.Content) != memory.DefaultMaxResultBytes+len(want) {
			t.Fatalf("result %d: %d bytes ending %q; want %d bytes of the result, then %q", r.ID, len(r.Content),
				r.Content[max(0, len(r.Content)-90):], memory.DefaultMaxResultBytes, want)
		}
		cut++
	}
	if cut != 50 || total > memory.MaxResponseBytes {
		t.Fatalf("%d results cut, %d bytes in all (bound %d)", cut, total, memory.MaxResponseBytes)
	}

	// Uncut (the largest cap): the newest rows within the response bound, at least the newest, contiguous.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 100, MaxResultBytes: memory.MaxContentBytes}))
	total = 0
	for _, r := range w.Memories {
		total += r.Bytes()
	}
	newest := results[len(results)-1]
	if total > memory.MaxResponseBytes || len(w.Memories) < 2 || len(w.Memories) >= 100 || w.Memories[len(w.Memories)-1].ID != newest.ID ||
		w.Mission == nil || !w.TurnTruncated || w.RecentStartSeq != w.Memories[0].Seq || w.Memories[len(w.Memories)-1].Content != big {
		t.Fatalf("uncut: %d rows, %d bytes, truncated %t, recent start %d (first %d), mission %v",
			len(w.Memories), total, w.TurnTruncated, w.RecentStartSeq, w.Memories[0].Seq, w.Mission)
	}
	for i := 1; i < len(w.Memories); i++ {
		if w.Memories[i].Seq != w.Memories[i-1].Seq+1 {
			t.Fatalf("not contiguous: seq %d after %d", w.Memories[i].Seq, w.Memories[i-1].Seq)
		}
	}

	// The v2 window (carry-over, turn extension) is bounded the same way.
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, CarryLimit: 10, ReplyLimit: 3}))
	total = 0
	for _, r := range w.Memories {
		total += r.Bytes()
		if r.Role == memory.RoleTool && len(r.Content) > memory.DefaultMaxResultBytes+100 {
			t.Fatalf("v2 window: result %d is %d bytes, not cut", r.ID, len(r.Content))
		}
	}
	if total > memory.MaxResponseBytes || len(w.Memories) == 0 {
		t.Fatalf("v2 window: %d rows, %d bytes", len(w.Memories), total)
	}
	if w.CarryCut {
		t.Fatal("v2 window: carry_cut with every row kept")
	}
}

// When the bound leaves out carried rows (those below the recent part's start) but none of the recent part, the
// window says so (carry_cut: a caller must not hold such a carry), and the turn is not truncated.
func TestComposeWindowReportsCarryCut(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	big := strings.Repeat("r", 2<<20)
	rows := []memory.NewMemory{user("Map everything.")}
	for i := range 10 { // ten distinct calls: 20 MiB of carried results
		id := fmt.Sprintf("c%d", i)
		rows = append(rows, assistant("", memory.ToolCall{ID: id, Name: "get_map", Arguments: fmt.Sprintf(`{"n":%d}`, i)}), toolResult(id, "get_map", big))
	}
	rows = append(rows, memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."}, assistant("Done."))
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, rows))
	q := memory.WindowQuery{MysisID: m.ID, Window: 2, CarryLimit: 20, MaxResultBytes: memory.MaxContentBytes}
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q))
	if !w.CarryCut || w.TurnTruncated || w.RecentStartSeq != 22 || len(w.Memories) < 4 || len(w.Memories) >= 22 {
		t.Fatalf("carried rows over the bound: carry_cut %v, truncated %v, start %d, %d rows", w.CarryCut, w.TurnTruncated, w.RecentStartSeq, len(w.Memories))
	}
	// carry_bytes counts the carried rows returned, not those the bound left out.
	if carried := len(w.Memories) - 2; w.CarryBytes != int64(carried/2*(2<<20+len(`{"n":0}`)+len("c0get_map"))) {
		t.Fatalf("cut carry: carry_bytes %d for %d carried rows", w.CarryBytes, carried)
	}
	wantCarryBytes(t, "cut carry", w)
	q.MaxResultBytes = 0 // cut to 256 KiB each, everything fits
	if w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, q)); w.CarryCut || len(w.Memories) != 22 {
		t.Fatalf("cut results: carry_cut %v, %d rows", w.CarryCut, len(w.Memories))
	}
}

// The largest result the store takes (memory.MaxContentBytes) comes back cut to the requested cap at a UTF-8
// boundary, pointing at its memory; a cap below the minimum is refused naming the field.
func TestComposeWindowCutsLargestResult(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	huge := strings.Repeat("é", memory.MaxContentBytes/2) // 2-byte runes: an odd cap falls inside one
	got := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		assistant("", memory.ToolCall{ID: "c", Name: "view_market", Arguments: "{}"}), toolResult("c", "view_market", huge)}))
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 10, MaxResultBytes: 1025}))
	if len(w.Memories) != 2 {
		t.Fatalf("%d rows, want 2", len(w.Memories))
	}
	r := w.Memories[1]
	want := fmt.Sprintf("%s…[cut: %d bytes more; full result is memory #%d, search for it]", huge[:1024], len(huge)-1024, got[1].ID)
	if r.Content != want || !utf8.ValidString(r.Content) {
		t.Fatalf("cut result: %d bytes, valid UTF-8 %t, ends %q; want %q", len(r.Content), utf8.ValidString(r.Content),
			r.Content[max(0, len(r.Content)-90):], want[1024:])
	}
}
