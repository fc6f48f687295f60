package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// BoundQueryOperators rewrites the exclusion operators of a websearch query so Postgres can parse it.
// websearch_to_tsquery reads every '-' that starts a token as NOT and nests them: 33 of them in a row ("---…x",
// "- - - … x") overflow the parser's fixed operator stack and the search fails with "tsquery stack too small". A
// run of exclusion dashes means the same as its parity (NOT NOT x is x), so each run is replaced by one dash or
// none; dashes inside a word (iron-ore) are left alone. Only '-' nests: quotes, OR and parentheses stay flat.
func BoundQueryOperators(q string) string {
	if !strings.Contains(q, "--") && !strings.Contains(q, "- ") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q))
	prev := ' ' // the start of the query is a token boundary
	for i := 0; i < len(q); {
		r, size := utf8.DecodeRuneInString(q[i:])
		if r != '-' || isWordRune(prev) {
			b.WriteString(q[i : i+size])
			prev = r
			i += size
			continue
		}
		// A run of exclusion dashes, possibly separated by spaces.
		dashes, j := 0, i
		for j < len(q) {
			c, n := utf8.DecodeRuneInString(q[j:])
			if c == '-' {
				dashes++
			} else if !unicode.IsSpace(c) {
				break
			}
			j += n
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if dashes%2 == 1 && j < len(q) {
			b.WriteByte('-')
		}
		prev = ' '
		i = j
	}
	return b.String()
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
