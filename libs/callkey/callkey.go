// Package callkey is the distinct-call rule the memory service keys tool results by: two results answer "the same
// call" exactly when their keys are equal, whatever whitespace or key order the model used. The memory service
// stores the key with every tool result; test fakes of the memory API compute it the same way.
package callkey

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxArgBytes is the longest canonical argument text a call key holds verbatim; longer arguments are keyed
// by their SHA-256, so a key always fits a b-tree index entry (Postgres refuses entries above ~2.7 kB, and a
// captain's-log entry or a chat message can be longer than that).
const MaxArgBytes = 256

// Of is the distinct-call key of a tool result: the tool name, a space and the canonical form of the call's
// arguments (CanonicalArguments), the latter replaced by "sha256:<hex>" of itself when longer than
// MaxArgBytes. Two results answer "the same call" exactly when their keys are equal, whatever whitespace or
// key order the model used.
//
// The migration that added call keys computes the same function in SQL (zoea_call_key in
// services/memory/internal/migrations/sql/00003_call_keys.sql) for rows written before; the memory service's
// TestCallKeyMatchesSQL keeps the two in step.
func Of(toolName, arguments string) string {
	c := CanonicalArguments(arguments)
	if len(c) > MaxArgBytes {
		sum := sha256.Sum256([]byte(c))
		c = "sha256:" + hex.EncodeToString(sum[:])
	}
	return toolName + " " + c
}

// CanonicalArguments returns a JSON object text in canonical form: object keys sorted by their UTF-8 bytes, no
// insignificant whitespace, strings written with the fewest escapes, numbers in Postgres numeric's plain decimal
// form (1e2 → 100, 1.50 stays 1.50). This is exactly what Postgres's jsonb makes of the text, written compactly,
// so the SQL backfill agrees with it. Anything that is not one JSON object (or that Postgres's jsonb would refuse:
// a \u0000 escape, an unpaired surrogate, a number out of numeric's range) is returned unchanged: such arguments
// are keyed by their exact text.
func CanonicalArguments(s string) string {
	if alreadyCanonical(s) {
		return s // the common call, {"to":"sol"}, without a parse
	}
	return canonicalArguments(s)
}

// alreadyCanonical reports text that canonicalArguments returns unchanged, read without parsing: an object text
// with no insignificant whitespace, at most one member per object (no comma outside strings, so no order to
// sort), no escapes, valid UTF-8, and no number that numeric writes otherwise (an exponent, a negative zero).
// Such a text is either canonical JSON or not JSON at all, and both are returned as they are.
func alreadyCanonical(s string) bool {
	if len(s) < 2 || s[0] != '{' || !utf8.ValidString(s) {
		return false
	}
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case c == '"':
				inString = false
			case c == '\\' || c < 0x20:
				return false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r', ',':
			return false
		case 'e', 'E':
			if p := s[i-1]; p >= '0' && p <= '9' || p == '.' {
				return false
			}
		case '-':
			if i+1 < len(s) && s[i+1] == '0' {
				return false
			}
		}
	}
	return true
}

func canonicalArguments(s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(t, "{") || hasBadEscape(s) {
		return s
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return s
	}
	if _, err := dec.Token(); err != io.EOF {
		return s // trailing data: not one JSON value
	}
	var b bytes.Buffer
	if !writeCanonical(&b, v) {
		return s
	}
	return b.String()
}

// hasBadEscape reports a \u0000 escape or a \u surrogate escape that is not a high-low pair: Go's decoder would
// quietly turn them into NUL or U+FFFD, Postgres's jsonb refuses them.
func hasBadEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i+1 >= len(s) {
			return false
		}
		if s[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hex4(s, i+2)
		if !ok {
			return false // invalid JSON; the decoder reports it
		}
		switch {
		case r == 0:
			return true
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate without its high half
		case r >= 0xD800 && r <= 0xDBFF:
			if i+12 > len(s) || s[i+6] != '\\' || s[i+7] != 'u' {
				return true
			}
			lo, ok := hex4(s, i+8)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
			continue
		}
		i += 5
	}
	return false
}

func hex4(s string, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[at : at+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

func writeCanonical(b *bytes.Buffer, v any) bool {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if !writeCanonical(b, x[k]) {
				return false
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if !writeCanonical(b, e) {
				return false
			}
		}
		b.WriteByte(']')
	case string:
		writeString(b, x)
	case json.Number:
		n, ok := numericText(string(x))
		if !ok {
			return false
		}
		b.WriteString(n)
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	default:
		return false
	}
	return true
}

// writeString writes s as Postgres's escape_json does: ", \ and the control characters escaped (\b \f \n \r \t by
// name, the others as \u00xx), everything else as UTF-8.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// Postgres numeric's limits: at most 131072 digits before the decimal point and 16383 after it; beyond them jsonb
// refuses the number ("value overflows numeric format").
const (
	maxNumericIntDigits = 131072
	maxNumericScale     = 16383
)

// numericText renders a JSON number literal as Postgres's numeric_out would after numeric_in: plain decimal
// notation, the scale being the literal's fraction digits minus its exponent (at least 0), no negative zero.
func numericText(lit string) (string, bool) {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		es := lit[i+1:]
		e, err := strconv.Atoi(es)
		if err != nil || len(es) > 8 {
			return "", false
		}
		if e > 2*maxNumericIntDigits || e < -2*maxNumericIntDigits {
			return "", false
		}
		exp = e
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := intPart + frac
	point := len(intPart) + exp // position of the decimal point in digits
	scale := max(len(frac)-exp, 0)
	if scale > maxNumericScale || point > maxNumericIntDigits+len(digits) {
		return "", false
	}
	var ip, fp string
	switch {
	case point <= 0:
		ip, fp = "0", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		ip = digits + strings.Repeat("0", point-len(digits))
	default:
		ip, fp = digits[:point], digits[point:]
	}
	// fp has exactly len(frac)-exp digits when that is positive, and none otherwise.
	if len(fp) > scale {
		fp = fp[:scale] // only zeros are cut here (the digits moved into ip already)
	}
	ip = strings.TrimLeft(ip, "0")
	if len(ip) > maxNumericIntDigits {
		return "", false
	}
	if ip == "" {
		ip = "0"
	}
	out := ip
	if scale > 0 {
		out += "." + fp
	}
	if neg && strings.Trim(ip+fp, "0") != "" {
		out = "-" + out
	}
	return out, true
}
