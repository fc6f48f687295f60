package memory_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

func TestParseSearchText(t *testing.T) {
	for _, tc := range []struct {
		in          string
		words       string // words joined by "; ", forms by ","
		filter      string
		identifiers []string
		phrases     []string
	}{
		{"When did Caroline go to the LGBTQ support group?", "when; did; caroline; go,goes,going,went,gone; to; the; lgbtq; support; group", "", nil, nil},
		{"Where did I sell the copper_ore?", "where; did; i; sell,sells,selling,sold; the; copper_ore", "", []string{`"copper ore"`}, nil},
		{`"travel cooldown" -pirates`, "travel; cooldown", `-pirates`, nil, []string{`"travel cooldown"`}},
		{`iron -"outer ring" or copper`, "iron; copper", `-"outer ring"`, nil, nil},
		{"ore ---copper", "ore", "-copper", nil, nil},
		{"ore - - copper", "ore; copper", "", nil, nil},
		{`unbalanced "quote here`, "unbalanced; quote; here", "", nil, nil},
		{"Iron IRON iron", "iron", "", nil, nil},
		{"children bought 2,000 e3b0c442-98fc-1c14", "children,child; bought,buy,buys,buying; 2000; e3b0c442-98fc-1c14", "", nil, nil},
		{"don't ... -", "don't", "", nil, nil},
		{"-only -exclusions", "", "-only -exclusions", nil, nil},
		{"   ", "", "", nil, nil},
	} {
		st := memory.ParseSearchText(tc.in)
		var ws []string
		for _, w := range st.Words {
			ws = append(ws, strings.Join(w, ","))
		}
		if got := strings.Join(ws, "; "); got != tc.words || st.Filter != tc.filter || !reflect.DeepEqual(st.Identifiers, tc.identifiers) ||
			!reflect.DeepEqual(st.Phrases, tc.phrases) {
			t.Errorf("%q: words %q filter %q identifiers %q phrases %q; want %q, %q, %q, %q", tc.in, got, st.Filter, st.Identifiers,
				st.Phrases, tc.words, tc.filter, tc.identifiers, tc.phrases)
		}
	}
	// A long query scores its first MaxSearchWords distinct words.
	if st := memory.ParseSearchText(strings.Repeat("a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg hh ", 3)); len(st.Words) != memory.MaxSearchWords {
		t.Errorf("%d words", len(st.Words))
	}
}

// Every form of an irregular word brings the others, whichever form the query has.
func TestParseSearchTextFormsAreSymmetric(t *testing.T) {
	for _, pair := range [][2]string{{"went", "go"}, {"go", "went"}, {"sold", "sell"}, {"lost", "lose"}, {"people", "person"}, {"flew", "fly"}} {
		st := memory.ParseSearchText(pair[0])
		if len(st.Words) != 1 || st.Words[0][0] != pair[0] || !contains(st.Words[0], pair[1]) {
			t.Errorf("%s: %v, want %s among its forms", pair[0], st.Words, pair[1])
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// FuzzParseSearchText: any valid query text parses without panicking, into words with their written form first and
// a filter Postgres can read (no unbalanced quote).
func FuzzParseSearchText(f *testing.F) {
	for _, s := range []string{`"a b" -c`, `---x`, `"`, `-"`, "went_ore", "ünïcødé wörds", "a\u200bb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st := memory.ParseSearchText(s)
		if len(st.Words) > memory.MaxSearchWords {
			t.Fatalf("%d words", len(st.Words))
		}
		for _, w := range st.Words {
			if len(w) == 0 || w[0] == "" {
				t.Fatalf("empty word in %q", s)
			}
		}
		if strings.Count(st.Filter+strings.Join(st.Phrases, ""), `"`)%2 != 0 {
			t.Fatalf("unbalanced filter %q from %q", st.Filter, s)
		}
	})
}
