package present

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zoeaswarm/zoea/libs/redact"
)

// Safe shows text that came from a model (or anyone else) escaped, not applied: control characters (ESC sequences
// that move the cursor or retitle the terminal, carriage returns that overwrite a line, C1 codes) and the bidi
// controls that reorder what a line appears to say (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) become
// \xNN or \uNNNN. Newlines and tabs stay. Every place the CLI and the console print such text goes through it
// (directly, through OneLine, or through SafeWriter).
//
// It also removes every recognisable secret (libs/redact's shapes: a Bearer credential, an sk-… key, a password
// field, a ?key= query): the runner keeps the keys it knows out of what it stores, but a row written before it did,
// or a credential it never knew, must not reach a terminal, a screenshot or a shared console either.
func Safe(s string) string {
	s = redact.Shapes(s)
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if unsafeRune(r) {
			b.WriteString(escapeRune(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r):
		return true
	case r == 0x061C || r == 0x200E || r == 0x200F || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069):
		return true
	}
	return false
}

func escapeRune(r rune) string {
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// SafeWriter passes everything written to w through Safe, and removes the known secrets too (the admin token
// the CLI sends, which a server could echo). A rune split across two writes is held until its end arrives, so a
// bidi control cut in half cannot slip through. The CLI writes a line or a table at a time, so a secret is never
// split across writes.
func SafeWriter(w io.Writer, known ...string) io.Writer {
	return &safeWriter{w: w, red: redact.New(known...)}
}

type safeWriter struct {
	w    io.Writer
	held []byte
	red  *redact.Redactor
}

func (s *safeWriter) Write(p []byte) (int, error) {
	buf := append(s.held, p...)
	// Keep back an incomplete UTF-8 sequence at the end (at most 3 bytes).
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	s.held = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(s.w, Safe(s.red.Values(string(buf[:cut])))); err != nil {
		return 0, err
	}
	return len(p), nil
}
