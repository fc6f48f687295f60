package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"héllo", 2, "h"},  // é is two bytes: cutting at 2 would split it
		{"héllo", 3, "hé"}, // ends right after é
		{"日本", 4, "日"},     // 日 is three bytes
		{"日本", 2, ""},
		{"\xff\xfe", 1, "\xff"}, // invalid bytes count as one-byte runes
		{"0\xb7\xb7", 1, "0"},   // a stray continuation byte is not a rune to keep whole
		{"0\xb7\xb7", 2, "0\xb7"},
		{"\xe6\x97", 1, "\xe6"}, // a truncated rune is invalid bytes, cut between
	} {
		if got := Cut(c.s, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestClip(t *testing.T) {
	if got := Clip("abc", 3, "…"); got != "abc" {
		t.Errorf("Clip within budget = %q, want it whole", got)
	}
	if got := Clip("héllo", 2, "…"); got != "h…" {
		t.Errorf("Clip(héllo, 2) = %q, want h…", got)
	}
	if got := Clip("abcdef", 3, " (cut)"); got != "abc (cut)" {
		t.Errorf("Clip(abcdef, 3) = %q", got)
	}
}

func TestFit(t *testing.T) {
	for _, c := range []struct {
		s, mark string
		n       int
		want    string
	}{
		{"abc", "…", 3, "abc"},       // within the bound: whole, no mark
		{"abcdef", "..", 5, "abc.."}, // the mark is counted
		{"aéb", ".", 3, "a."},        // é would end at byte 3 and leave no room for the mark
		{"abcdef", "long mark", 3, "long mark"},
	} {
		if got := Fit(c.s, c.n, c.mark); got != c.want {
			t.Errorf("Fit(%q, %d, %q) = %q, want %q", c.s, c.n, c.mark, got, c.want)
		}
	}
}

// FuzzCut holds the rule on any input: at most n bytes, a prefix of s, never a split rune, the longest such prefix,
// and a valid string stays valid.
func FuzzCut(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo", "日本語", "a\xffb", "🙂🙂", strings.Repeat("é", 40)} {
		for _, n := range []int{-1, 0, 1, 2, 3, 4, 5, 40} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Cut(s, n)
		if !strings.HasPrefix(s, got) {
			t.Fatalf("Cut(%q, %d) = %q: not a prefix", s, n, got)
		}
		if len(got) > max(n, 0) {
			t.Fatalf("Cut(%q, %d) = %q: %d bytes", s, n, got, len(got))
		}
		if utf8.ValidString(s) && len(got) < len(s) && !utf8.RuneStart(s[len(got)]) {
			t.Fatalf("Cut(%q, %d) = %q splits a rune", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d) = %q: invalid UTF-8 from a valid string", s, n, got)
		}
		// Longest: one more rune would exceed n (or there is nothing more).
		if n > 0 && len(got) < len(s) {
			_, size := utf8.DecodeRuneInString(s[len(got):])
			if len(got)+size <= n {
				t.Fatalf("Cut(%q, %d) = %q: the next rune fits too", s, n, got)
			}
		}
		if c := Clip(s, n, "…"); len(s) > n && c != got+"…" || len(s) <= n && c != s {
			t.Fatalf("Clip(%q, %d) = %q, Cut gave %q", s, n, c, got)
		}
		const mark = "…(cut)"
		if f := Fit(s, n, mark); len(s) <= n && f != s || len(s) > n && f != Cut(s, n-len(mark))+mark {
			t.Fatalf("Fit(%q, %d) = %q", s, n, f)
		} else if len(s) > n && n >= len(mark) && len(f) > n {
			t.Fatalf("Fit(%q, %d) = %q: %d bytes", s, n, f, len(f))
		}
	})
}
