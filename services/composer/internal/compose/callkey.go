package compose

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// CallKey is the distinct-call key of a tool result: the tool name plus its call's canonical arguments (object keys
// sorted, no insignificant whitespace), or the name alone for the policy's snapshot tools, whose newest result
// supersedes every older one whatever its arguments. Arguments that are not a JSON object are keyed by their exact
// text. Two results with the same key answer the same question; the older one is superseded.
func (p Policy) CallKey(name, arguments string) string {
	if slices.Contains(p.SnapshotTools, name) {
		return name
	}
	return name + "\x00" + canonicalArgs(arguments)
}

func canonicalArgs(args string) string {
	t := strings.TrimSpace(args)
	if t == "" || t == "{}" {
		return "{}"
	}
	if t[0] != '{' {
		return t
	}
	if !strings.ContainsAny(t, ", \t\n\r\\") {
		// At most one key per object and nothing to unescape or reformat: already canonical (if it is JSON at all,
		// and if it is not, its exact text is its key anyway). The common case of a single argument, without a parse.
		return t
	}
	d := json.NewDecoder(strings.NewReader(t))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil || d.More() {
		return t
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil { // maps encode with sorted keys, recursively
		return t
	}
	return strings.TrimSuffix(b.String(), "\n")
}
