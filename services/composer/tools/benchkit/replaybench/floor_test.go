package replaybench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// The floor replayed by hand. A commander prompt (6 tokens) opens a turn of nine loops; each loop is an assistant
// call (13 tokens) and its 100-byte result (107), 120 in all; tools a and b alternate, so from the third request on
// the state is the newest loop and the loop before it. A nudge then opens a second turn of two more loops. The
// history may hold 400 tokens (budget 407, less the empty system prompt's 4 and the reply priming's 3).
//   - None: 6, 126, 246, 366, then 486 breaks (back to the newest loop, 120), 240, 360, 480 breaks, 240: 2 breaks.
//   - State: the same up to 486, which breaks back to 240 (two loops); 360, 480 breaks, 360, 480 breaks: 3 breaks,
//     each leaving 240.
//   - The nudge's turn starts anew (not counted) at 132 (the newest loop and the nudge), with state 252; its one
//     in-turn request grows to 252 and 372: no break.
func TestBreakFloorByHand(t *testing.T) {
	s := histgen.RealSession{Rows: []compose.Memory{{Role: chat.RoleUser, Source: compose.SourceDirect, Content: "go"}}}
	loop := func(id, tool string) {
		s.Requests = append(s.Requests, len(s.Rows)) // the model was asked with the rows before its call
		s.Rows = append(s.Rows,
			compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, ToolCalls: []chat.ToolCall{{ID: id, Name: tool, Arguments: "{}"}}},
			compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: id, ToolName: tool, Content: strings.Repeat("x", 100)})
	}
	for k := 1; k <= 9; k++ {
		loop(fmt.Sprintf("c%d", k), map[bool]string{true: "a", false: "b"}[k%2 == 1])
	}
	s.Rows = append(s.Rows, compose.Memory{Role: chat.RoleUser, Source: compose.SourceNudge, Content: "continue"})
	loop("d1", "b")
	loop("d2", "a")
	got := breakFloor(s, lenCounter{}, "", 0, 407, 1500)
	want := BreakFloor{InTurn: 9, None: 2, State: 3, StateAfter: 720}
	if got != want {
		t.Errorf("breakFloor = %+v, want %+v", got, want)
	}
	// A result over the cap counts as cut to it (loops of 70: 6, 76, …, 356, then 426 breaks back to 70), and a
	// state case over the cap is not kept, so both floors agree.
	if got, want := breakFloor(s, lenCounter{}, "", 0, 407, 50), (BreakFloor{InTurn: 9, None: 1, State: 1, StateAfter: 70}); got != want {
		t.Errorf("with a 50-token cap: %+v, want %+v", got, want)
	}
	if got := breakFloor(s, lenCounter{}, "", 0, 1<<20, 1500); got.None != 0 || got.State != 0 || got.InTurn != 9 {
		t.Errorf("with room for everything: %+v, want 9 in-turn requests and no break", got)
	}
}

// A real composer sends at least the system prompt and the newest loop, so it breaks at least as often as the
// floor that keeps only those; keeping every state case can only break more often.
func TestBreakFloorBoundsZoea(t *testing.T) {
	for _, shape := range histgen.Shapes() {
		d, err := Diagnose(Options{Sessions: 2, Calls: 160, Seed: 11, Shape: shape, Parallel: 1})
		if err != nil {
			t.Fatal(err)
		}
		f := d.Floor
		if f.InTurn != d.InTurn || f.None > d.Broken || f.None > f.State || f.State == 0 {
			t.Errorf("%s: floor %+v, Zoea v3 broke %d of %d in-turn requests", shape, f, d.Broken, d.InTurn)
		}
	}
}
