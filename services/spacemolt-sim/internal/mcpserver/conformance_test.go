package mcpserver_test

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

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// v1Facts is testdata/v1-required.json: for each action, the result fields the published v1 description requires
// (with their JSON types) and the optional ones it allows. The file explains its path notation.
type v1Facts struct {
	Actions map[string]struct {
		Required map[string]string `json:"required"`
		Optional map[string]string `json:"optional"`
	} `json:"actions"`
}

func loadV1Facts(t *testing.T) v1Facts {
	t.Helper()
	b, err := os.ReadFile("testdata/v1-required.json")
	if err != nil {
		t.Fatal(err)
	}
	var f v1Facts
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("testdata/v1-required.json: %v", err)
	}
	return f
}

// simExtras are the fields the simulator serves beyond the v1 description, each for a reason docs/SPACEMOLT.md gives
// ("State reads"): the session id the runner and the MCP binding read, the transit block a travel leaves on the
// player, the yield the simulator reports in mine's answer (the real server notifies it later), get_map's layout, and
// auto_undocked, the envelope flag the live server sets on a travel or mine that undocked first (the clients read
// it; the v1 description leaves it out).
// A field outside the description and outside this list fails the test.
var simExtras = map[string][]string{
	"register":   {"session_id"},
	"login":      {"session_id"},
	"get_status": {"player.in_transit", "player.transit"},
	"mine":       {"auto_undocked", "resource_id", "name", "quantity", "remaining", "cargo_used", "cargo_capacity"},
	"travel":     {"auto_undocked"},
	// auto_docked: the live envelope flag on a trade at a station the player had not docked at (docs: travel.md).
	"sell":              {"auto_docked"},
	"buy":               {"auto_docked"},
	"refuel":            {"auto_docked"},
	"create_sell_order": {"auto_docked"},
	"create_buy_order":  {"auto_docked"},
	// view_market's base id (the composer keeps one market read per station by it), the log's count after an add,
	// chat's delivery report (sent_at, how many received it), help's rules text beside its command list.
	"view_market":      {"base_id"},
	"captains_log_add": {"total_count"},
	"chat":             {"sent_at", "recipients"},
	"help":             {"text"},
	"get_map": {"current_system", "systems[].empire", "systems[].security_status", "systems[].position",
		"systems[].connections", "systems[].pois", "systems[].has_station", "systems[].visited"},
}

// conformance is how one result measures up against its action's facts.
type conformance struct {
	present, total int
	missing        []string // "path (want type, got ...)"
	extras         []string
}

// checkV1 measures doc against the required and optional fields of one action. A field is counted when it applies:
// always for a plain path, for a[].b only when array a is present and not empty (and then it must hold in every
// element), for a?.b only when the optional parent a is present.
func checkV1(doc any, required, optional map[string]string, extras []string) conformance {
	var c conformance
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range required {
			if !yield(p) {
				return
			}
		}
	})
	allowed := map[string]bool{}
	for p := range required {
		allowed[strings.ReplaceAll(p, "?", "")] = true
	}
	for p := range optional {
		allowed[p] = true
	}
	for _, p := range extras {
		allowed[p] = true
	}
	for _, p := range paths {
		applies, ok, why := evalPath(doc, strings.Split(p, "."), required[p])
		if !applies {
			continue
		}
		c.total++
		if ok {
			c.present++
		} else {
			c.missing = append(c.missing, fmt.Sprintf("%s (want %s, %s)", p, required[p], why))
		}
	}
	collectExtras(doc, "", allowed, &c.extras)
	sort.Strings(c.extras)
	return c
}

func evalPath(v any, segs []string, typ string) (applies, ok bool, why string) {
	if len(segs) == 0 {
		if got := jsonType(v); !typeMatches(v, typ) {
			return true, false, "got " + got
		}
		return true, true, ""
	}
	seg := segs[0]
	isArray := strings.HasSuffix(seg, "[]")
	seg = strings.TrimSuffix(seg, "[]")
	optional := strings.HasSuffix(seg, "?")
	seg = strings.TrimSuffix(seg, "?")
	obj, isObj := v.(map[string]any)
	if !isObj {
		return true, false, "parent is " + jsonType(v)
	}
	child, has := obj[seg]
	if !has || child == nil && optional {
		if optional || isArray && len(segs) > 1 {
			// An absent optional parent, or an absent array whose own entry already reports it.
			return false, false, ""
		}
		return true, false, "absent"
	}
	if !isArray {
		return evalPath(child, segs[1:], typ)
	}
	arr, isArr := child.([]any)
	if !isArr {
		return true, false, seg + " is " + jsonType(child)
	}
	applies = false
	for i, el := range arr {
		a, good, w := evalPath(el, segs[1:], typ)
		if a && !good {
			return true, false, fmt.Sprintf("element %d: %s", i, w)
		}
		applies = applies || a
	}
	return applies, applies, ""
}

// collectExtras lists the fields of doc that the description does not name. It descends into an object only where
// the description names fields inside it (maps such as skills or revealed_pois are not walked).
func collectExtras(v any, prefix string, allowed map[string]bool, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if !allowed[p] {
				*out = append(*out, p)
				continue
			}
			if describesInside(allowed, p) {
				collectExtras(child, p, allowed, out)
			}
		}
	case []any:
		for _, el := range x {
			collectExtras(el, prefix+"[]", allowed, out)
		}
	}
}

func describesInside(allowed map[string]bool, p string) bool {
	for a := range allowed {
		if strings.HasPrefix(a, p+".") || strings.HasPrefix(a, p+"[].") {
			return true
		}
	}
	return false
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
	got := jsonType(v)
	switch typ {
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
	return got == typ
}

// decodeV1 decodes a result keeping numbers as written, so 5 and 5.0 stay apart.
func decodeV1(t *testing.T, action, text string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: result is not JSON: %v: %s", action, err, text)
	}
	return v
}

// TestV1Conformance plays the starter loop on /mcp through the MCP client and checks every result against the
// published v1 description's required fields and types: a missing field fails with the action and the field named.
// It also fails on a field the description does not allow unless simExtras lists it.
func TestV1Conformance(t *testing.T) {
	facts := loadV1Facts(t)
	s := newSim(t, simOptions{manual: true})
	s.tickOnDemand()

	var got []v1Sample
	call := func(p *player, action string, args map[string]any) map[string]any {
		t.Helper()
		text, isErr := p.call(action, args)
		if isErr {
			t.Fatalf("%s(%v) failed: %s", action, args, text)
		}
		got = append(got, v1Sample{action, action, text})
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		return m
	}

	// A neighbour waits at the belt so travel's online_players and get_nearby have someone in them.
	nb := s.connect(t)
	call(nb, "register", map[string]any{"username": "neighbour", "empire": "solarian"})
	call(nb, "undock", nil)
	call(nb, "travel", map[string]any{"target_poi": "main_belt"})

	first := s.connect(t)
	reg := call(first, "register", map[string]any{"username": "conformer", "empire": "solarian"})
	p := s.connect(t)
	call(p, "login", map[string]any{"username": "conformer", "password": reg["password"]})
	call(p, "get_status", nil)
	call(p, "get_ship", nil)
	call(p, "get_cargo", nil)
	sys := call(p, "get_system", nil)
	call(p, "get_poi", nil)
	call(p, "get_map", nil)
	call(p, "undock", nil)
	call(p, "travel", map[string]any{"target_poi": "main_belt"})
	call(p, "get_nearby", nil)
	call(p, "get_poi", nil)
	for range 3 {
		call(p, "mine", nil)
	}
	cargo := call(p, "get_cargo", nil)
	call(p, "get_status", nil)
	call(p, "get_ship", nil)
	call(p, "travel", map[string]any{"target_poi": "sol_central"})
	call(p, "dock", nil)
	call(p, "get_poi", nil)
	item := cargo["cargo"].([]any)[0].(map[string]any)["item_id"]
	call(p, "sell", map[string]any{"item_id": item, "quantity": 1})
	call(p, "buy", map[string]any{"item_id": item, "quantity": 1})
	call(p, "refuel", nil)
	call(p, "undock", nil)
	far := sys["system"].(map[string]any)["connections"].([]any)[0].(map[string]any)["system_id"]
	call(p, "jump", map[string]any{"target_system": far})
	call(p, "get_system", nil)
	call(p, "get_status", nil)

	if order := measureV1(t, facts, got); len(order) < 17 {
		t.Fatalf("the loop covered %d actions, want 17: %v", len(order), order)
	}
}

// v1Sample is one result and the facts it is held to (an action, or an action's transit form).
type v1Sample struct{ action, facts, text string }

// measureV1 checks every sample, fails on each missing field or undeclared extra, logs per action the fields of its
// least complete result and the sums, and returns the facts keys in the order first met.
func measureV1(t *testing.T, facts v1Facts, got []v1Sample) []string {
	t.Helper()
	return measureOn(t, "/mcp", facts, got)
}

// measureOn is measureV1 for the results of one endpoint, named in the log.
func measureOn(t *testing.T, endpoint string, facts v1Facts, got []v1Sample) []string {
	t.Helper()
	// Per action: the fields of its least complete result, and the sums over every result.
	type tally struct{ present, total, results, sumPresent, sumTotal int }
	tallies := map[string]*tally{}
	var order []string
	for _, sm := range got {
		f, ok := facts.Actions[sm.facts]
		if !ok {
			t.Fatalf("%s: no facts in testdata/v1-required.json", sm.facts)
		}
		c := checkV1(decodeV1(t, sm.action, sm.text), f.Required, f.Optional, simExtras[sm.action])
		for _, m := range c.missing {
			t.Errorf("%s: missing required field %s", sm.facts, m)
		}
		for _, x := range c.extras {
			t.Errorf("%s: field %s is not in the v1 description (add it to simExtras with a reason, or drop it)", sm.facts, x)
		}
		tl := tallies[sm.facts]
		if tl == nil {
			tl = &tally{present: c.present, total: c.total}
			tallies[sm.facts] = tl
			order = append(order, sm.facts)
		}
		if c.present*tl.total < tl.present*c.total {
			tl.present, tl.total = c.present, c.total
		}
		tl.results++
		tl.sumPresent += c.present
		tl.sumTotal += c.total
	}
	var sum tally
	lines := []string{"action                 least complete result   all results"}
	complete := 0
	for _, a := range order {
		tl := tallies[a]
		lines = append(lines, fmt.Sprintf("%-22s %4d/%-4d               %4d/%-4d (%d)", a, tl.present, tl.total, tl.sumPresent, tl.sumTotal, tl.results))
		sum.present += tl.present
		sum.total += tl.total
		if tl.sumPresent == tl.sumTotal {
			complete++
		}
	}
	t.Logf("v1 conformance on %s:\n%s\nall                    %d/%d, %d of %d actions complete", endpoint, strings.Join(lines, "\n"), sum.present, sum.total, complete, len(order))
	return order
}

// TestV1ConformanceInTransit holds the results read while a travel and a jump are under way to the description:
// get_poi and (in hyperspace) get_system answer their transit forms.
func TestV1ConformanceInTransit(t *testing.T) {
	facts := loadV1Facts(t)
	s := newSim(t, simOptions{manual: true, cfg: game.Config{Tick: 10 * time.Second}})
	p := s.register(t, "drifter")
	q := s.connect(t) // reads with p's session_id while p's call waits for the arrival
	var got []v1Sample
	read := func(action, factsKey string) map[string]any {
		t.Helper()
		text, isErr := q.call(action, map[string]any{"session_id": p.sid})
		if isErr {
			t.Fatalf("%s failed: %s", action, text)
		}
		got = append(got, v1Sample{action, factsKey, text})
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		return m
	}
	// move starts a mutation on p, ticks once so it departs, and returns a wait for its answer after n more ticks.
	move := func(action string, args map[string]any) func(n int) {
		// Should the test stop midway, tick the move out first, so the waiting call and the servers can end.
		t.Cleanup(func() {
			for s.engine.Pending() > 0 {
				s.engine.Tick()
			}
		})
		done := make(chan string, 1)
		go func() { text, _, _ := p.raw(action, args); done <- text }()
		waitPending(t, s.engine)
		s.engine.Tick()
		return func(n int) {
			for range n {
				s.engine.Tick()
			}
			select {
			case text := <-done:
				if strings.HasPrefix(text, "Error") {
					t.Fatalf("%s: %s", action, text)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not return", action)
			}
		}
	}
	move("undock", nil)(0)
	arrive := move("travel", map[string]any{"target_poi": "kuiper_belt"}) // 4 AU: 4 ticks
	if poi := read("get_poi", "get_poi in transit"); poi["in_transit"] != true || poi["to_poi"] != "kuiper_belt" {
		t.Fatalf("get_poi in transit = %v", poi)
	}
	if st := read("get_status", "get_status"); str(t, st, "player", "current_poi") != "sol_central" {
		t.Fatalf("status in transit = %v", st)
	}
	read("get_system", "get_system") // travelling inside the system: the system is known
	arrive(3)
	sys := read("get_system", "get_system")
	far := sys["system"].(map[string]any)["connections"].([]any)[0].(map[string]any)["system_id"].(string)
	arrive = move("jump", map[string]any{"target_system": far}) // speed 1: 6 ticks
	if sys := read("get_system", "get_system in transit"); sys["in_transit"] != true || sys["to_system"] != far || sys["system"] != nil {
		t.Fatalf("get_system in hyperspace = %v", sys)
	}
	read("get_poi", "get_poi in transit")
	read("get_status", "get_status")
	arrive(5)
	if st := read("get_status", "get_status"); str(t, st, "player", "current_system") != far {
		t.Fatalf("after the jump status = %v", st)
	}
	if order := measureV1(t, facts, got); len(order) != 4 {
		t.Fatalf("covered %v, want get_poi and get_system in transit, get_status and get_system", order)
	}
}

// The checker itself: what it must find missing, mistyped, vacuous or extra.
func TestCheckV1(t *testing.T) {
	required := map[string]string{
		"player":            "object",
		"player.id":         "string",
		"player.credits":    "integer",
		"player.created_at": "date-time",
		"player.stats":      "object",
		"player.stats.ore":  "integer",
		"ship.cargo":        "array",
		"ship.cargo[].qty":  "integer",
		"base?.id":          "string",
		"fuel":              "number",
	}
	optional := map[string]string{"ship": "object", "base": "object", "note": "string"}
	doc := func(s string) any { return decodeV1(t, "test", s) }

	c := checkV1(doc(`{"player":{"id":"p1","credits":5,"created_at":"2026-12-02T13:00:00Z","stats":{"ore":1}},
		"ship":{"cargo":[{"qty":2},{"qty":3}]},"fuel":1.5,"note":"n"}`), required, optional, nil)
	if c.present != 9 || c.total != 9 || len(c.missing) != 0 || len(c.extras) != 0 {
		t.Fatalf("complete result: %+v, want 9/9 (base?.id does not apply)", c)
	}
	c = checkV1(doc(`{"player":{"id":7,"credits":5.5,"created_at":"yesterday"},"ship":{"cargo":[]},"base":{},"fuel":2,"shiny":true}`),
		required, optional, nil)
	want := []string{
		"base?.id (want string, absent)",
		"player.created_at (want date-time, got string)",
		"player.credits (want integer, got number)",
		"player.id (want string, got integer)",
		"player.stats (want object, absent)",
		"player.stats.ore (want integer, absent)",
	}
	if c.present != 3 || c.total != 9 || !slices.Equal(c.missing, want) || !slices.Equal(c.extras, []string{"shiny"}) {
		t.Fatalf("broken result: %d/%d missing %q extras %q\nwant 3/9 missing %q extras [shiny]", c.present, c.total, c.missing, c.extras, want)
	}
	c = checkV1(doc(`{"player":{"id":"p","credits":1,"created_at":"2026-12-02T13:00:00Z","stats":{"ore":1}},"ship":{"cargo":[{"qty":1},{}]},"fuel":1}`),
		required, optional, []string{})
	if len(c.missing) != 1 || !strings.HasPrefix(c.missing[0], "ship.cargo[].qty (want integer, element 1: absent") {
		t.Fatalf("a field missing in one element: %q", c.missing)
	}
}
