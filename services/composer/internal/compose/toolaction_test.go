package compose_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Policy entries name a tool or a tool and action (SpaceMolt's MCP v2 tools are action-dispatched): a
// "spacemolt.get_status" snapshot entry keys every get_status action of the spacemolt tool alike, whatever its other
// arguments, and no other action of that tool.
func TestCallKeyToolAction(t *testing.T) {
	p := compose.DefaultPolicy()
	status := p.CallKey("spacemolt", `{"action":"get_status"}`)
	if status != p.CallKey("spacemolt", `{"action": "get_status", "verbose": true}`) {
		t.Error("spacemolt.get_status is a snapshot call: its other arguments do not matter")
	}
	if status == p.CallKey("spacemolt", `{"action":"mine"}`) {
		t.Error("spacemolt.mine shares the key of spacemolt.get_status")
	}
	if p.CallKey("spacemolt", `{"action":"get_system","system_id":"sol"}`) != p.CallKey("spacemolt", `{"action":"get_system","system_id":"vega"}`) {
		t.Error("spacemolt.get_system is a snapshot call, like the legacy get_system")
	}
	if p.CallKey("spacemolt_market", `{"action":"view_market","station":"sol"}`) == p.CallKey("spacemolt_market", `{"action":"view_market","station":"vega"}`) {
		t.Error("markets of two stations share a key")
	}
	if p.CallKey("spacemolt_market", `{"station":"sol","action":"view_market"}`) != p.CallKey("spacemolt_market", `{"action":"view_market","station":"sol"}`) {
		t.Error("argument order changes a key")
	}
	// A legacy entry still names the whole tool, and an entry's action must be the call's own.
	if !p.IsSnapshot("get_status", `{}`) || p.IsSnapshot("spacemolt", `{}`) || p.IsSnapshot("spacemolt", `{"action":"mine"}`) ||
		p.IsSnapshot("spacemolt", `{"action":5}`) || p.IsSnapshot("spacemolt", `not json "action"`) {
		t.Error("IsSnapshot matched the wrong calls")
	}
	if !p.IsPinned("spacemolt_auth", `{"action":"login","username":"a","password":"b"}`) || p.IsPinned("spacemolt_auth", `{"action":"logout"}`) ||
		!p.IsPinned("login", `{}`) {
		t.Error("IsPinned matched the wrong calls")
	}
	q := p
	q.SnapshotTools = []string{"spacemolt"} // a plain entry names every action of the tool
	if q.CallKey("spacemolt", `{"action":"mine"}`) != q.CallKey("spacemolt", `{"action":"get_status"}`) {
		t.Error("a plain entry does not name the whole tool")
	}
}

// The memory service keys calls by tool name, so the composer asks it for a superset: pinned tool.action entries
// as their tools, snapshot tool.action entries not at all (the service then keys those calls by their arguments).
func TestWindowToolsForTheMemoryService(t *testing.T) {
	p := compose.DefaultPolicy()
	snap, pinned := p.WindowTools()
	if !slices.Equal(pinned, []string{"login", "register", "spacemolt_auth"}) {
		t.Errorf("pinned %v", pinned)
	}
	for _, s := range snap {
		if strings.Contains(s, ".") {
			t.Errorf("snapshot entry %q sent to the memory service", s)
		}
	}
	if !slices.Contains(snap, "get_status") {
		t.Errorf("snapshot %v lost the legacy tools", snap)
	}
}

// A v2 session keeps the same state a v1 session keeps: the same play, once with flat tools and once with
// action-dispatched ones, carries the newest status, system, cargo and each station's market, drops the superseded
// status, and carries the login from before the objective.
func TestV2SessionKeepsV1State(t *testing.T) {
	run := func(endpointV2 bool) compose.Result {
		h, mid := tradePlay(endpointV2)
		p := compose.DefaultPolicy()
		p.ScanWindow = 20
		p.TokenBudget = 1500 // over it, the boundary moves as far as it can on both endpoints
		return v2(t, h, missionOf(h, mid), p)
	}
	legacy, actions := run(false), run(true)
	// The same rows are kept, stubbed or dropped for the same reasons on both endpoints. (The v2 window may hold a
	// few more rows: the memory service keys tool.action snapshot calls by their arguments, a superset.)
	bySeq := map[int64]compose.Item{}
	for _, it := range legacy.Manifest.Items {
		bySeq[it.Seq] = it
	}
	for _, b := range actions.Manifest.Items {
		a, ok := bySeq[b.Seq]
		switch {
		case !ok && b.Disposition != compose.Dropped:
			t.Errorf("seq %d only in the v2 window, and sent: %s (%s)", b.Seq, b.Disposition, b.Reason)
		case ok && (a.Disposition != b.Disposition || a.Reason != b.Reason):
			t.Errorf("seq %d: legacy %s (%s), v2 %s (%s)", a.Seq, a.Disposition, a.Reason, b.Disposition, b.Reason)
		}
		delete(bySeq, b.Seq)
	}
	if len(bySeq) > 0 {
		t.Errorf("%d rows of the legacy window missing from the v2 window", len(bySeq))
	}
	for v2, res := range []compose.Result{legacy, actions} {
		out := sent(res)
		for _, want := range []string{`"session_id":"s-1"`, `{"iron":{"buy":10}}`, `{"iron":{"sell":19}}`, `{"credits":150,"location":"vega"}`,
			`{"system":"vega","pois":["vega_station"]}`, `{"iron_ore":30}`} {
			if !strings.Contains(out, want) {
				t.Errorf("endpoint %d: missing %s", v2+1, want)
			}
		}
		if res.Manifest.Tokens.Carried == 0 {
			t.Errorf("endpoint %d: nothing carried; the test wants the boundary past the earlier turns", v2+1)
		}
	}
}

// tradePlay is one mysis's play on either endpoint: a login, a commander order (its memory id is returned), then six
// rounds of status, system, cargo, travel, mine and two stations' markets with a nudge between them.
func tradePlay(endpointV2 bool) (*hist, int64) {
	type call struct{ v1, v1args, v2, v2args, result string }
	play := []call{
		{"view_market", `{"station":"sol"}`, "spacemolt_market", `{"action":"view_market","station":"sol"}`, `{"iron":{"buy":10}}`},
		{"get_status", `{}`, "spacemolt", `{"action":"get_status"}`, `{"credits":100,"location":"sol"}`},
		{"get_system", `{"id":"sol"}`, "spacemolt", `{"action":"get_system","id":"sol"}`, `{"system":"sol","pois":["belt_a"]}`},
		{"get_cargo", `{}`, "spacemolt", `{"action":"get_cargo"}`, `{"iron_ore":30}`},
		{"travel", `{"to":"belt_a"}`, "spacemolt", `{"action":"travel","to":"belt_a"}`, "arrived"},
		{"mine", `{}`, "spacemolt", `{"action":"mine"}`, `{"mined":3}`},
		{"view_market", `{"station":"vega"}`, "spacemolt_market", `{"action":"view_market","station":"vega"}`, `{"iron":{"sell":19}}`},
		{"get_status", `{}`, "spacemolt", `{"action":"get_status"}`, `{"credits":150,"location":"vega"}`},
		{"get_system", `{"id":"vega"}`, "spacemolt", `{"action":"get_system","id":"vega"}`, `{"system":"vega","pois":["vega_station"]}`},
	}
	h := &hist{}
	if endpointV2 {
		h.loop("spacemolt_auth", `{"action":"login","username":"m","password":"p"}`, `{"session_id":"s-1"}`)
	} else {
		h.loop("login", `{"username":"m","password":"p"}`, `{"session_id":"s-1"}`)
	}
	mid := h.user(compose.SourceBroadcast, "Commander: trade iron between Sol and Vega.")
	for i := range 6 {
		for _, c := range play {
			if endpointV2 {
				h.loop(c.v2, c.v2args, c.result)
			} else {
				h.loop(c.v1, c.v1args, c.result)
			}
		}
		if i < 5 {
			h.user(compose.SourceNudge, "Continue your mission.")
		}
	}
	h.loop("mine", `{}`, `{"mined":1}`)
	return h, mid
}

// The carry bound holds the same results on either endpoint: an action-dispatched call's action field
// ({"action":"get_status"}) is sent but not counted against it, so where the bound decides what is carried, MCP v2
// play carries what the same play on the legacy endpoint carries, not fewer results for its longer calls.
func TestCarryBoundCarriesTheSameOnEitherEndpoint(t *testing.T) {
	// Eight rounds, each at a station of its own: every round's market is the newest of its call, so the older
	// rounds' markets are carried while the bound lets them.
	play := func(endpointV2 bool) (*hist, int64) {
		h := &hist{}
		mid := h.user(compose.SourceBroadcast, "Commander: find the best iron price in the sector.")
		for i := range 8 {
			station, market := fmt.Sprintf("st_%d", i), fmt.Sprintf(`{"iron_ore":{"buy":%d,"sell":%d},"fuel":{"buy":%d}}`, 10+i, 12+i, 3+i)
			if endpointV2 {
				h.loop("spacemolt", fmt.Sprintf(`{"action":"travel","to":%q}`, station), "arrived")
				h.loop("spacemolt_market", fmt.Sprintf(`{"action":"view_market","station":%q}`, station), market)
			} else {
				h.loop("travel", fmt.Sprintf(`{"to":%q}`, station), "arrived")
				h.loop("view_market", fmt.Sprintf(`{"station":%q}`, station), market)
			}
			h.user(compose.SourceNudge, "Continue your mission.")
		}
		h.loop("mine", `{}`, `{"mined":1}`)
		return h, mid
	}
	carried := func(endpointV2 bool, bound int) []int64 {
		h, mid := play(endpointV2)
		p := compose.DefaultPolicy()
		p.ScanWindow = 20
		p.TokenBudget = 1500
		p.CarryTokens = bound
		var seqs []int64
		for _, it := range v2(t, h, missionOf(h, mid), p).Manifest.Items {
			if it.Reason == compose.ReasonCarried {
				seqs = append(seqs, it.Seq)
			}
		}
		return seqs
	}
	most, binding := len(carried(false, 0)), 0
	for bound := 20; bound <= 400; bound += 10 {
		legacy, actions := carried(false, bound), carried(true, bound)
		if !slices.Equal(legacy, actions) {
			t.Errorf("carry bound %d: legacy carries seqs %v, MCP v2 %v", bound, legacy, actions)
		}
		if len(legacy) > 0 && len(legacy) < most {
			binding++
		}
	}
	if binding < 3 {
		t.Fatalf("the bound decided what was carried at only %d of the bounds tried (%d results carried without one): the test no longer exercises it", binding, most)
	}
}

// The flat arguments an action-dispatched call stands for: the action member cut out with one comma, the rest
// byte for byte; anything else is left as it is.
func TestWithoutAction(t *testing.T) {
	for in, want := range map[string]string{
		`{"action":"travel","to":"sol"}`:        `{"to":"sol"}`,
		`{"to":"sol","action":"travel"}`:        `{"to":"sol"}`,
		`{"a":1,"action":"travel","to":"sol"}`:  `{"a":1,"to":"sol"}`,
		`{ "action" : "travel" , "to": "sol" }`: `{ "to": "sol" }`,
		`{"to": "sol", "action": "travel"}`:     `{"to": "sol"}`,
		`{"action":"mine"}`:                     `{}`,
		`{}`:                                    `{}`,
		`{"to":"sol"}`:                          `{"to":"sol"}`,
		`{"action":5}`:                          `{"action":5}`,
		`{"action":"a\"b"}`:                     `{"action":"a\"b"}`,
		`{"note":"action","x":1}`:               `{"note":"action","x":1}`,
		`{"action":"a","note":{"action":"b"}}`:  `{"action":"a","note":{"action":"b"}}`,
		`{"action":"unterminated`:               `{"action":"unterminated`,
		`not json`:                              `not json`,
	} {
		if got := compose.WithoutAction(in); got != want {
			t.Errorf("WithoutAction(%s) = %s, want %s", in, got, want)
		}
	}
}
