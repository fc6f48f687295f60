package present

import (
	"strings"
	"testing"
)

func TestSafeEscapesControlsAndBidi(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode ✓\n\tindented": "plain text, ünïcode ✓\n\tindented",
		"user\u202Egnp.exe":                 `user\u202egnp.exe`,
		"a\u2066b\u2069c\u200Fd\u061Ce":     `a\u2066b\u2069c\u200fd\u061ce`,
		"\x1b[2J\x1b]0;pwned\x07":           `\x1b[2J\x1b]0;pwned\x07`,
		"overwrite\rme\x7f\u0085":           `overwrite\x0dme\x7f\u0085`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := OneLine("mine\u202E\n ore"); got != `mine\u202e ore` {
		t.Errorf("OneLine does not escape: %q", got)
	}
}

func TestSafeWriterHoldsASplitRune(t *testing.T) {
	var out strings.Builder
	w := SafeWriter(&out)
	s := "sell \u202Eore\x1b[31m done\n"
	b := []byte(s)
	for i := range b { // one byte at a time: every rune is split
		if _, err := w.Write(b[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if want := `sell \u202eore\x1b[31m done` + "\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}
