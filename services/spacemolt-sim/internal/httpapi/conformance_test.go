package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// v2Facts is testdata/v2-facts.json: what the published v2 description says of the envelope, the state blob and
// each action's result (the file explains its form).
type v2Facts struct {
	Envelope struct {
		Fields       []string          `json:"fields"`
		Error        map[string]string `json:"error"`
		Session      map[string]string `json:"session"`
		Notification map[string]string `json:"notification"`
	} `json:"envelope"`
	State struct {
		Fields   map[string]string            `json:"fields"`
		Sections map[string]map[string]string `json:"sections"`
	} `json:"state"`
	Actions map[string]struct {
		Result  string `json:"result"`
		Details string `json:"details"`
	} `json:"actions"`
	Schemas map[string]struct {
		Required []string          `json:"required"`
		Fields   map[string]string `json:"fields"`
		Closed   bool              `json:"closed"`
	} `json:"schemas"`
}

func loadV2Facts(t *testing.T) *v2Facts {
	t.Helper()
	b, err := os.ReadFile("testdata/v2-facts.json")
	if err != nil {
		t.Fatal(err)
	}
	var f v2Facts
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("testdata/v2-facts.json: %v", err)
	}
	return &f
}

// simExtras are the fields the simulator's results carry beyond a closed schema of the description, per schema,
// each for a reason: session_id is how the simulator's clients (and Zoea's runner) resume a game session; the
// mine and travel extras are the v1 results' (docs/SPACEMOLT.md, "State reads": the simulator reports the yield at
// once where the real server notifies it); the login/register player, ship, system and poi blocks are the v1
// objects. A field outside the description and this list fails the test.
var simExtras = map[string][]string{
	"LoginResponse":    {"session_id"},
	"RegisterResponse": {"session_id"},
	"TravelResponse":   {"auto_undocked"},
}

// knownGaps are the differences from the description the simulator still has, by "schema: finding": get_commands
// keeps its {tools: [{tool, actions: [{name, mutation, ...}]}]} form, whose mutation flags Zoea's runner reads to
// tell reads from mutations (v2's {actions: [{tool, action, endpoint}]} has no such flag).
// The full-loop tests fail when one of them goes away (remove it here) or a new one appears; docs/SPACEMOLT.md,
// "API v2 results", counts them.
var knownGaps = []string{
	"V2GetCommandsResponse: field tools is not in the description",
	"V2GetCommandsResponse: missing required field actions",
}

// checker collects every deviation of the results it is shown from the facts.
type checker struct {
	f        *v2Facts
	findings map[string]bool
	seen     map[string]int // per action, results checked
}

func newChecker(f *v2Facts) *checker {
	return &checker{f: f, findings: map[string]bool{}, seen: map[string]int{}}
}

func (c *checker) add(format string, args ...any) { c.findings[fmt.Sprintf(format, args...)] = true }

// envelope checks one HTTP answer's envelope; ok reports whether it is a success.
func (c *checker) envelope(where string, env map[string]any) {
	for k := range env {
		if !slices.Contains(c.f.Envelope.Fields, k) {
			c.add("envelope: field %s is not in the description (%s)", k, where)
		}
	}
	notes, isArr := env["notifications"].([]any)
	if !isArr {
		c.add("envelope: notifications is %s, want an array (%s)", jsonType(env["notifications"]), where)
	}
	for _, n := range notes {
		c.fields("envelope.notifications[]", n, c.f.Envelope.Notification, true)
	}
	if s, has := env["session"]; has {
		c.fields("envelope.session", s, c.f.Envelope.Session, true)
	}
	if e, has := env["error"]; has {
		c.fields("envelope.error", e, c.f.Envelope.Error, true)
		em, _ := e.(map[string]any)
		for _, req := range []string{"code", "message"} {
			if _, ok := em[req]; !ok {
				c.add("envelope.error: no %s (%s)", req, where)
			}
		}
		if _, has := env["structuredContent"]; has {
			c.add("envelope: structuredContent beside an error (%s)", where)
		}
	} else if _, has := env["structuredContent"]; !has && where != "POST /session" {
		c.add("envelope: a success without structuredContent (%s)", where)
	}
}

// result checks the structuredContent of a success of action (tool/action).
func (c *checker) result(action string, sc any) {
	c.seen[action]++
	facts, ok := c.f.Actions[action]
	if !ok {
		c.add("%s: no facts in testdata/v2-facts.json", action)
		return
	}
	if facts.Result == "V2GameState" {
		c.state(action, sc)
		if facts.Details != "" {
			m, _ := sc.(map[string]any)
			d, has := m["details"]
			if !has {
				c.add("%s: a mutation without details", action)
				return
			}
			c.schema(facts.Details, d)
		}
		return
	}
	c.schema(facts.Result, sc)
}

func (c *checker) state(action string, sc any) {
	m, isObj := sc.(map[string]any)
	if !isObj {
		c.add("V2GameState: structuredContent is %s (%s)", jsonType(sc), action)
		return
	}
	c.fields("V2GameState", m, c.f.State.Fields, true)
	for path, fields := range c.f.State.Sections {
		for _, v := range sectionValues(m, path) {
			c.fields("V2GameState."+path, v, fields, true)
		}
	}
}

// sectionValues finds the values a section path names: a.b, a[] (every element), m{} (every value).
func sectionValues(doc any, path string) []any {
	vals := []any{doc}
	for _, seg := range strings.Split(path, ".") {
		var next []any
		name := strings.TrimSuffix(strings.TrimSuffix(seg, "[]"), "{}")
		for _, v := range vals {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			child, has := m[name]
			if !has || child == nil {
				continue
			}
			switch {
			case strings.HasSuffix(seg, "[]"):
				arr, _ := child.([]any)
				next = append(next, arr...)
			case strings.HasSuffix(seg, "{}"):
				obj, _ := child.(map[string]any)
				for _, k := range slices.Sorted(func(yield func(string) bool) {
					for k := range obj {
						if !yield(k) {
							return
						}
					}
				}) {
					next = append(next, obj[k])
				}
			default:
				next = append(next, child)
			}
		}
		vals = next
	}
	return vals
}

func (c *checker) schema(name string, v any) {
	s, ok := c.f.Schemas[name]
	if !ok {
		c.add("%s: no schema in testdata/v2-facts.json", name)
		return
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		c.add("%s: is %s, want an object", name, jsonType(v))
		return
	}
	for _, r := range s.Required {
		if _, has := m[r]; !has {
			c.add("%s: missing required field %s", name, r)
		}
	}
	allowed := map[string]string{}
	for k, t := range s.Fields {
		allowed[k] = t
	}
	for _, x := range simExtras[name] {
		allowed[x] = "any"
	}
	c.fields(name, m, allowed, s.Closed)
}

// fields checks the types of the known fields of v and, when closed, that it has no others.
func (c *checker) fields(where string, v any, fields map[string]string, closed bool) {
	m, isObj := v.(map[string]any)
	if !isObj {
		c.add("%s: is %s, want an object", where, jsonType(v))
		return
	}
	for k, val := range m {
		want, known := fields[k]
		if !known {
			if closed {
				c.add("%s: field %s is not in the description", where, k)
			}
			continue
		}
		if !typeMatches(val, want) {
			c.add("%s: field %s is %s, want %s", where, k, jsonType(val), want)
		}
	}
}

// verdict fails on every finding that is not a known gap and on every known gap no longer found, and logs what was
// covered.
func (c *checker) verdict(t *testing.T, surface string, wantActions int) {
	t.Helper()
	var found []string
	for f := range c.findings {
		found = append(found, f)
	}
	sort.Strings(found)
	for _, f := range found {
		if !slices.Contains(knownGaps, f) {
			t.Errorf("%s: %s", surface, f)
		}
	}
	for _, g := range knownGaps {
		if wantActions > 0 && !c.findings[g] {
			t.Errorf("%s: known gap %q no longer found: remove it from knownGaps (and docs/SPACEMOLT.md)", surface, g)
		}
	}
	var actions []string
	for a, n := range c.seen {
		actions = append(actions, fmt.Sprintf("%s×%d", a, n))
	}
	sort.Strings(actions)
	t.Logf("%s: %d actions checked against the v2 facts: %s", surface, len(c.seen), strings.Join(actions, " "))
	if len(c.seen) < wantActions {
		t.Errorf("%s: covered %d actions, want %d", surface, len(c.seen), wantActions)
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "number"
		}
		return "integer"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(v any, typ string) bool {
	base, nullable := strings.CutSuffix(typ, "|null")
	if v == nil {
		return nullable || base == "any"
	}
	got := jsonType(v)
	switch base {
	case "any":
		return true
	case "number":
		return got == "number" || got == "integer"
	case "date-time":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	}
	return got == base
}
