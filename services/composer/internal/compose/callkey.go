package compose

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/zoeaswarm/zoea/libs/callkey"
)

// Tool names in the policy (SnapshotTools, PinnedTools) are either a tool ("get_status", the legacy flat endpoint)
// or a tool and one of its actions ("spacemolt.get_status", SpaceMolt's MCP v2 endpoint, whose 16 tools each take
// an "action" argument that selects the command). A "tool.action" entry matches a call of that tool whose arguments
// name that action; a plain entry matches every call of the tool. So one policy covers both endpoints.

// actionOf returns the "action" argument of a call's arguments, "" when there is none (or they are not a JSON
// object). It decodes only when the text mentions an action at all.
func actionOf(arguments string) string {
	if !strings.Contains(arguments, `"action"`) {
		return ""
	}
	var v struct {
		Action json.RawMessage `json:"action"`
	}
	if json.Unmarshal([]byte(arguments), &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Action, &s) != nil {
		return ""
	}
	return s
}

// listed reports whether a call of tool name with these arguments is named in list, as "name" or "name.action";
// it returns the entry that matched.
func listed(list []string, name, arguments string) (string, bool) {
	action, decoded := "", false
	for _, e := range list {
		if e == name {
			return e, true
		}
		if len(e) > len(name)+1 && e[len(name)] == '.' && strings.HasPrefix(e, name) {
			if !decoded {
				action, decoded = actionOf(arguments), true
			}
			if action != "" && e[len(name)+1:] == action {
				return e, true
			}
		}
	}
	return "", false
}

// IsSnapshot reports whether a call of tool name with these arguments is a snapshot call: the policy's
// SnapshotTools name the tool, or the tool and the call's action.
func (p Policy) IsSnapshot(name, arguments string) bool {
	_, ok := listed(p.SnapshotTools, name, arguments)
	return ok
}

// IsPinned reports whether a call of tool name with these arguments is pinned (PinnedTools, by tool or tool.action).
func (p Policy) IsPinned(name, arguments string) bool {
	_, ok := listed(p.PinnedTools, name, arguments)
	return ok
}

// pinnedAs is the name a pinned call's newest result is kept under: the policy entry it matched (the tool, or the
// tool and action), "" when the call is not pinned.
func (p Policy) pinnedAs(name, arguments string) string {
	e, _ := listed(p.PinnedTools, name, arguments)
	return e
}

// CallKey is the distinct-call key of a tool result: for the policy's snapshot calls the policy entry alone (the
// tool, or "tool.action"), whose newest result supersedes every older one whatever its other arguments; for every
// other call the key the memory service stores with the result (libs/callkey: the tool name and its arguments in
// canonical form, numbers as numeric writes them, so {"qty":1e2} and {"qty":100} are one call). Two results with
// the same key answer the same question; the older one is superseded.
func (p Policy) CallKey(name, arguments string) string {
	if e, ok := listed(p.SnapshotTools, name, arguments); ok {
		return e
	}
	return callkey.Of(name, arguments)
}

// WindowTools returns the snapshot and pinned tools to ask the memory service's GetComposeWindow for, which keys
// calls by tool name: a "tool.action" pinned entry becomes its tool (the newest result of the tool is carried
// however old, a superset the composer narrows to the action), and "tool.action" snapshot entries are left out (the
// service then keys those calls by tool and arguments, the action among them: again a superset of what the composer
// keeps). Either way the composer receives every row it would carry.
func (p Policy) WindowTools() (snapshot, pinned []string) {
	for _, e := range p.SnapshotTools {
		if !strings.Contains(e, ".") {
			snapshot = append(snapshot, e)
		}
	}
	for _, e := range p.PinnedTools {
		if i := strings.IndexByte(e, '.'); i > 0 {
			e = e[:i]
		}
		if !slices.Contains(pinned, e) {
			pinned = append(pinned, e)
		}
	}
	return snapshot, pinned
}

// withoutAction is a call's arguments without their "action" member (the arguments of the flat call an
// action-dispatched one stands for: {"action":"travel","to":"sol"} is {"to":"sol"}). It cuts the member out of the
// text, with one comma beside it, and leaves the rest byte for byte; arguments it cannot read that way (no such
// member, an escaped action, not an object) stay as they are.
func withoutAction(arguments string) string {
	i := strings.Index(arguments, `"action"`)
	if i < 0 || strings.Count(arguments, `"action"`) != 1 {
		return arguments
	}
	j := skipSpace(arguments, i+len(`"action"`))
	if j >= len(arguments) || arguments[j] != ':' {
		return arguments
	}
	j = skipSpace(arguments, j+1)
	if j >= len(arguments) || arguments[j] != '"' {
		return arguments
	}
	end := strings.IndexByte(arguments[j+1:], '"')
	if end < 0 || strings.IndexByte(arguments[j+1:j+1+end], '\\') >= 0 {
		return arguments
	}
	end += j + 2 // past the closing quote
	if k := skipSpace(arguments, end); k < len(arguments) && arguments[k] == ',' {
		return arguments[:i] + arguments[skipSpace(arguments, k+1):]
	}
	k := i - 1
	for k >= 0 && isSpace(arguments[k]) {
		k--
	}
	if k >= 0 && arguments[k] == ',' {
		return arguments[:k] + arguments[end:]
	}
	return arguments[:i] + arguments[end:]
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
