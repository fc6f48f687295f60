package names

import (
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
)

func TestCheck(t *testing.T) {
	good := []string{"solo", "Miner 7", "Ωmega-β", "日本の船", strings.Repeat("x", 64), "a.b_c-d", "deadbeef"}
	for _, n := range good {
		if err := Check("name", n); err != nil {
			t.Errorf("%q refused: %v", n, err)
		}
	}
	bad := map[string]string{
		"":                                       "required",
		"  spaced  ":                             "spaces",
		"\u200b":                                 "invisible",
		"evil\u202Eexe.txt":                      "invisible",
		"zero\u200dwidth":                        "invisible",
		"tab\there":                              "printable",
		"nul\x00":                                "NUL",
		"nbsp\u00a0x":                            "printable",
		"\xff":                                   "UTF-8",
		strings.Repeat("x", 65):                  "too long",
		"01a20aa0-0aa1-71e4-8c30-694151dae132":   "UUID",
		"01A20AA00AA171E48C30694151DAE132":       "UUID",
		"{01a20aa0-0aa1-71e4-8c30-694151dae132}": "UUID",
	}
	for n, want := range bad {
		err := Check("mysis", n)
		if err == nil || !strings.Contains(err.Error(), want) || errs.FieldOf(err) != "mysis" || !errs.Is(err, errs.Invalid) {
			t.Errorf("%q: got %v, want an Invalid error on field mysis mentioning %q", n, err, want)
		}
	}
}
