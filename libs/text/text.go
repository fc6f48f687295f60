// Package text owns one rule: how a string is cut to a byte budget. Every place that shortens a string for a log, an
// error, a status or a screen calls Cut, Clip or Fit here, so no cut can split a UTF-8 character.
package text

import "unicode/utf8"

// Cut returns the longest prefix of s that is at most n bytes and ends on a rune boundary (n <= 0: "").
// A string already within n bytes comes back whole.
func Cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	// Step back to the start of the rune that s[n] belongs to; cut there only if that rune is a whole, valid one
	// reaching past n. Stray continuation bytes are runes of one byte each and are cut between.
	start := n
	for start > 0 && n-start < utf8.UTFMax-1 && !utf8.RuneStart(s[start]) {
		start--
	}
	if start < n && utf8.RuneStart(s[start]) {
		if r, size := utf8.DecodeRuneInString(s[start:]); (r != utf8.RuneError || size > 1) && start+size > n {
			return s[:start]
		}
	}
	return s[:n]
}

// Clip is Cut followed by mark when, and only when, something was cut. The mark is not counted in n.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + mark
}

// Fit is Clip with the mark counted in n: s whole when it is within n bytes, otherwise Cut(s, n-len(mark)) followed
// by mark, at most n bytes together as long as the mark itself fits. For a bound the result must keep (a status
// message, a stored field).
func Fit(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n-len(mark)) + mark
}
