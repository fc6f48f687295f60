// Package redact is the one owner of the rule that keeps secrets out of what a Zoea process writes down: logs, stored
// state reasons and call records, errors sent to clients, and what the CLI and the consoles print. Providers and
// game servers echo credentials back (a 401 body that quotes "Incorrect API key provided: Bearer <key>", a proxy that
// repeats the request URL with its ?key=), so text from outside cannot be trusted to be clean, and every exit passes
// it through here.
//
// Two rules, applied together by Redactor.String:
//
//   - known values: every secret the process configures or learns (API keys, the admin token, game account
//     passwords) is replaced wherever it appears (Redactor.Add; values shorter than MinSecretLen are not matched,
//     they would hit ordinary words);
//   - recognisable shapes (Shapes, no state): the credential after "Bearer " or "Basic ", provider key formats
//     (sk-…, AIza…, gsk_…), the value of a secret-named field in JSON, headers, environment assignments and URL
//     queries ("api_key": "…", Authorization: …, password=…, ?key=…), and the password of a URL's user info
//     (nats://user:pass@host).
//
// Each secret becomes Marker. The scans make no allocation when nothing matches, since the log path runs them on
// every record (see the benchmarks).
package redact

import (
	"slices"
	"strings"
	"sync"
)

// Marker replaces every secret.
const Marker = "[redacted]"

// MinSecretLen is the shortest known value that is matched by value: a shorter one (a three-letter password) would
// replace ordinary words everywhere. Such values still go through the shape rules.
const MinSecretLen = 8

// Redactor replaces known secret values and secret shapes. The zero value and nil are usable (shapes only). It is
// safe for concurrent use; values may be added at any time (a game password learnt when an account is claimed).
type Redactor struct {
	mu sync.RWMutex
	// first has a bit set for the first two bytes of every value: most positions of a text fail this test, which
	// costs one load, before the map is consulted.
	first    [1 << 16 / 64]uint64
	byPrefix map[uint64][]string // the values by their first 8 bytes, longest first
	n        int
}

// New returns a Redactor that knows values (empty and short ones are ignored).
func New(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add teaches r more secret values. Adding a value twice is harmless; adding to a nil Redactor does nothing.
func (r *Redactor) Add(values ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if len(v) < MinSecretLen {
			continue
		}
		if r.byPrefix == nil {
			r.byPrefix = map[uint64][]string{}
		}
		k := prefix8(v)
		list := r.byPrefix[k]
		if slices.Contains(list, v) {
			continue
		}
		list = append(list, v)
		// Longest first: of two values where one starts the other, the whole longer one goes.
		slices.SortFunc(list, func(a, b string) int { return len(b) - len(a) })
		r.byPrefix[k] = list
		p := uint16(v[0]) | uint16(v[1])<<8
		r.first[p/64] |= 1 << (p % 64)
		r.n++
	}
}

// Len is the number of known values.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.n
}

// prefix8 is the first 8 bytes of s (at least 8 long) as a map key.
func prefix8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// String returns s with known values and secret shapes replaced by Marker.
func (r *Redactor) String(s string) string {
	return Shapes(r.Values(s))
}

// Error returns err with its text redacted (nil for nil). Unwrap still reaches err, so errors.Is and errors.As
// classify it as before; only the text that is printed, logged or stored changes.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Values returns s with the known values replaced by Marker, leaving shapes alone: for text such as a game's tool
// result, where a field called "token" may be an item and only the process's own secrets must go.
func (r *Redactor) Values(s string) string {
	if r == nil || len(s) < MinSecretLen {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.n == 0 {
		return s
	}
	var b []byte
	last := 0
	for i := 0; i+MinSecretLen <= len(s); {
		p := uint16(s[i]) | uint16(s[i+1])<<8
		if r.first[p/64]&(1<<(p%64)) == 0 {
			i++
			continue
		}
		hit := ""
		for _, v := range r.byPrefix[prefix8(s[i:])] {
			if strings.HasPrefix(s[i:], v) {
				hit = v
				break
			}
		}
		if hit == "" {
			i++
			continue
		}
		if b == nil {
			b = make([]byte, 0, len(s))
		}
		b = append(b, s[last:i]...)
		b = append(b, Marker...)
		i += len(hit)
		last = i
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// Shapes returns s with recognisable secrets replaced by Marker (see the package comment). It knows no values.
func Shapes(s string) string {
	var b []byte
	last := 0
	// replace copies s[last:start] and the marker for s[start:end] to b.
	replace := func(start, end int) {
		if b == nil {
			b = make([]byte, 0, len(s)+len(Marker))
		}
		b = append(b, s[last:start]...)
		b = append(b, Marker...)
		last = end
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		t := trigger[c]
		if t == 0 {
			continue
		}
		start, end := -1, -1
		switch t {
		case trigField:
			start, end = fieldValue(s, i)
		case trigURL:
			start, end = userinfoPassword(s, i)
		case trigWord: // the first letter of "Bearer", "Basic" or a provider key format, at a word's start
			if i > 0 && tokenChar[s[i-1]] {
				continue
			}
			if c|0x20 == 'b' {
				start, end = schemeValue(s, i)
			}
			if start < 0 {
				start, end = keyShape(s, i)
			}
		}
		if start < last || end <= start {
			continue
		}
		replace(start, end)
		i = end - 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// What a byte may start or end (trigger).
const (
	trigField = 1 + iota // ':' or '=' after a field name
	trigURL              // '/' of "://"
	trigWord             // a letter that may start a scheme word or a provider key
)

// trigger marks the bytes at which a shape may be recognised.
var trigger = func() (t [256]uint8) {
	t[':'], t['='], t['/'] = trigField, trigField, trigURL
	t['b'], t['B'] = trigWord, trigWord
	for _, p := range keyPrefixes {
		t[p.prefix[0]] = trigWord
	}
	return t
}()

// tokenChar marks the bytes of a credential: base64 (standard and URL), hex, and the punctuation of JWTs and
// provider keys.
var tokenChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "-_.~+/=" {
		t[c] = true
	}
	return t
}()

// nameChar marks the bytes of a field name.
var nameChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	t['_'], t['-'], t['.'] = true, true, true
	return t
}()

// keyPrefixes are the key formats of the providers an OpenAI-compatible base URL may point at, and of the code
// hosts whose tokens end up in the same configuration. min is the fewest credential bytes after the prefix: fewer
// is a word ("sk-learn"), not a key.
var keyPrefixes = []struct {
	prefix string
	min    int
}{
	{"sk-", 20}, {"sk_", 20}, // OpenAI, Anthropic (sk-ant-), DeepSeek, OpenRouter (sk-or-), Stripe-style
	{"gsk_", 20}, {"xai-", 20}, {"pplx-", 20}, {"nvapi-", 20}, {"hf_", 20}, {"r8_", 20}, // Groq, xAI, Perplexity, NVIDIA, Hugging Face, Replicate
	{"AIza", 30},                                                    // Google
	{"ghp_", 30}, {"gho_", 30}, {"github_pat_", 30}, {"glpat-", 20}, // GitHub, GitLab
	{"xoxb-", 20}, {"xoxp-", 20}, // Slack
}

// keysByFirst indexes keyPrefixes by their first byte.
var keysByFirst = func() (t [256][]int) {
	for i, p := range keyPrefixes {
		t[p.prefix[0]] = append(t[p.prefix[0]], i)
	}
	return t
}()

// keyShape reports a provider key starting at s[i]: [start, end), or -1.
func keyShape(s string, i int) (int, int) {
	for _, k := range keysByFirst[s[i]] {
		p := keyPrefixes[k]
		if !strings.HasPrefix(s[i:], p.prefix) {
			continue
		}
		j := i + len(p.prefix)
		for j < len(s) && (tokenChar[s[j]] && s[j] != '.' && s[j] != '/' && s[j] != '=' || s[j] == '*') {
			j++
		}
		if j-i-len(p.prefix) >= p.min {
			return i, j
		}
	}
	return -1, -1
}

// schemeValue recognises "Bearer <credential>" and "Basic <credential>" where s[i] is the scheme's first letter.
func schemeValue(s string, i int) (int, int) {
	for _, w := range [...]string{"bearer ", "basic "} {
		if len(s)-i >= len(w) && strings.EqualFold(s[i:i+len(w)], w) {
			return credential(s, i+len(w))
		}
	}
	return -1, -1
}

// credential is the token after s[i] (spaces skipped): [start, end) when it is at least MinSecretLen long.
func credential(s string, i int) (int, int) {
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	k := j
	for k < len(s) && (tokenChar[s[k]] || s[k] == '*') {
		k++
	}
	if k-j < MinSecretLen {
		return -1, -1
	}
	return j, k
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// fieldValue recognises the value of a secret-named field where s[i] is the ':' or '=' after its name:
// "api_key": "v", api_key=v, Authorization: Bearer v, ?key=v, and the same inside an escaped JSON string
// (\"password\":\"v\").
func fieldValue(s string, i int) (int, int) {
	// The name: back over a closing quote (escaped or not) and spaces before ':'.
	k := i
	if s[i] == ':' {
		for k > 0 && s[k-1] == ' ' {
			k--
		}
	}
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		k--
		if k > 0 && s[k-1] == '\\' {
			k--
		}
	}
	n := k
	for n > 0 && nameChar[s[n-1]] {
		n--
	}
	if n == k {
		return -1, -1
	}
	name := s[n:k]
	query := n > 0 && (s[n-1] == '?' || s[n-1] == '&') && s[i] == '='
	if !secretName(name, query) {
		return -1, -1
	}
	// The value: spaces, then a quoted string or a bare run.
	j := i + 1
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || strings.HasPrefix(s[j:], Marker) {
		return -1, -1
	}
	switch {
	case s[j] == '"' || s[j] == '\'':
		return quoted(s, j+1, s[j:j+1])
	case s[j] == '\\' && j+1 < len(s) && s[j+1] == '"':
		return quoted(s, j+2, `\"`)
	}
	if strings.EqualFold(name, "authorization") || strings.EqualFold(name, "proxy-authorization") {
		// Keep the scheme: "Authorization: Bearer [redacted]" still says which kind of credential failed.
		w := j
		for w < len(s) && isLetter(s[w]) {
			w++
		}
		if w < len(s) && s[w] == ' ' && w > j {
			return credential(s, w)
		}
	}
	e := j
	for e < len(s) && !valueEnd[s[e]] {
		e++
	}
	v := s[j:e]
	if v == "" || v == "null" || v == "true" || v == "false" || numeric(v) {
		return -1, -1
	}
	return j, e
}

// quoted is the string value starting at s[j] and closed by quote: [j, end), skipping backslash escapes.
func quoted(s string, j int, quote string) (int, int) {
	e := j
	for e < len(s) {
		if strings.HasPrefix(s[e:], quote) {
			break
		}
		if s[e] == '\\' && quote != `\"` && e+1 < len(s) {
			e++
		}
		e++
	}
	v := s[j:e]
	if v == "" || v == Marker {
		return -1, -1
	}
	return j, e
}

// userinfoPassword recognises the password of scheme://user:password@host, where s[i] is the first '/' of "://",
// and a whole user info without a colon that is long enough to be a token (nats://<token>@host).
func userinfoPassword(s string, i int) (int, int) {
	if i == 0 || s[i-1] != ':' || i+1 >= len(s) || s[i+1] != '/' {
		return -1, -1
	}
	a := i + 2
	at := -1
	for e := a; e < len(s) && !authorityEnd[s[e]]; e++ {
		if s[e] == '@' {
			at = e
		}
	}
	if at < 0 {
		return -1, -1
	}
	if c := strings.IndexByte(s[a:at], ':'); c >= 0 {
		return a + c + 1, at
	}
	if at-a >= MinSecretLen && tokenSchemes[strings.ToLower(schemeBefore(s, i-1))] {
		return a, at
	}
	return -1, -1
}

// tokenSchemes are the URL schemes whose user info may be a bare token (NATS's token@host); elsewhere a user info
// without a password is a user name (postgres://postgres@host).
var tokenSchemes = map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true}

// schemeBefore is the URL scheme that ends at s[colon] (the ':' of "://").
func schemeBefore(s string, colon int) string {
	k := colon
	for k > 0 && (isLetter(s[k-1]) || s[k-1] >= '0' && s[k-1] <= '9' || s[k-1] == '+' || s[k-1] == '-' || s[k-1] == '.') {
		k--
	}
	return s[k:colon]
}

// authorityEnd marks the bytes that end a URL's authority.
var authorityEnd = func() (t [256]bool) {
	for _, c := range "/?# \t\r\n\"'<>" {
		t[c] = true
	}
	return t
}()

// valueEnd marks the bytes that end a bare value.
var valueEnd = func() (t [256]bool) {
	for _, c := range " \t\r\n&,;}])\"'<>\\" {
		t[c] = true
	}
	return t
}()

func numeric(v string) bool {
	for i := 0; i < len(v); i++ {
		if (v[i] < '0' || v[i] > '9') && v[i] != '.' && v[i] != '-' {
			return false
		}
	}
	return true
}

// secretName reports whether a field of this name holds a secret: one of the names below on its own or as the end
// of a longer name (OPENAI_API_KEY, x-api-key, admin_token, client_secret), compared without case and with '-' and
// '.' as '_'. "key", "sig" and "signature" alone count only as URL query parameters (?key=…, Google's API key):
// elsewhere they name too many ordinary things.
func secretName(name string, query bool) bool {
	if len(name) < 3 || len(name) > 64 {
		return false
	}
	// The last three bytes pick the few names to compare: most names (action, station, tokens) stop here.
	var b [3]byte
	for i := range b {
		b[i] = norm(name[len(name)-3+i])
	}
	switch string(b[:]) {
	case "key":
		return query && len(name) == 3 || endsWithName(name, "api_key") || endsWithName(name, "apikey") ||
			endsWithName(name, "access_key") || endsWithName(name, "secret_key") || endsWithName(name, "private_key")
	case "ord":
		return endsWithName(name, "password")
	case "swd":
		return endsWithName(name, "passwd")
	case "ret":
		return endsWithName(name, "secret")
	case "ken":
		return endsWithName(name, "token") && !endsWithName(name, "page_token") // pagination, not a credential
	case "ion":
		return endsWithName(name, "authorization")
	case "ode":
		return endsWithName(name, "registration_code")
	case "als":
		return endsWithName(name, "credentials")
	case "sig":
		return query && len(name) == 3
	case "ure":
		return query && endsWithName(name, "signature") && len(name) == len("signature")
	}
	return false
}

// endsWithName reports whether name is base or ends with "_"+base, compared as secretName says.
func endsWithName(name, base string) bool {
	off := len(name) - len(base)
	if off < 0 {
		return false
	}
	for i := 0; i < len(base); i++ {
		if norm(name[off+i]) != base[i] {
			return false
		}
	}
	return off == 0 || norm(name[off-1]) == '_'
}

// norm lowercases c and reads '-' and '.' as '_'.
func norm(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c + 'a' - 'A'
	case c == '-' || c == '.':
		return '_'
	}
	return c
}
