package memoryrules

import (
	"strings"
	"testing"
)

// A tool result is cut on a rune boundary and the marker counts what the cut left out; one within the bound is whole.
func TestCutResult(t *testing.T) {
	if got := CutResult("short", 5, 7); got != "short" {
		t.Errorf("CutResult within the bound = %q, want it whole", got)
	}
	long := strings.Repeat("é", 10) // 20 bytes: a cut at 5 bytes falls inside the third é
	want := "éé…[cut: 16 bytes more; full result is memory #7, search for it]"
	if got := CutResult(long, 5, 7); got != want {
		t.Errorf("CutResult(%q, 5, 7) = %q, want %q", long, got, want)
	}
}
