package main

import (
	"strings"
	"testing"
)

func TestConfirmNeedsAYes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		fail bool
	}{{"y\n", true, false}, {"YES\n", true, false}, {"n\n", false, false}, {"\n", false, false}, {"", false, true}} {
		var out strings.Builder
		ok, err := confirm(strings.NewReader(tc.in), &out, "Delete? [y/N] ")
		if ok != tc.ok || (err != nil) != tc.fail {
			t.Errorf("answer %q: ok %v err %v", tc.in, ok, err)
		}
		if !strings.HasPrefix(out.String(), "Delete? [y/N] ") {
			t.Errorf("question not asked: %q", out.String())
		}
	}
}
