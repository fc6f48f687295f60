package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// endpoint plays v1 tool calls on /mcp or, translated to the v2 tool, action and parameter names, on /mcp/v2.
type endpoint struct {
	name string
	// call returns the result document (v1 text, v2 structuredContent, its details when there are any) or the error
	// text ("Error: code: message").
	call func(v1 string, args map[string]any) (doc string, errText string)
}

// v2Route is where a v1 tool lives on /mcp/v2, and the v2 names of its parameters.
var v2Route = map[string]struct {
	tool, action string
	rename       map[string]string
}{
	"register":            {"spacemolt_auth", "register", nil},
	"undock":              {"spacemolt", "undock", nil},
	"dock":                {"spacemolt", "dock", nil},
	"travel":              {"spacemolt", "travel", map[string]string{"target_poi": "id"}},
	"mine":                {"spacemolt", "mine", nil},
	"get_cargo":           {"spacemolt", "get_cargo", nil},
	"sell":                {"spacemolt", "sell", map[string]string{"item_id": "id"}},
	"buy":                 {"spacemolt", "buy", map[string]string{"item_id": "id"}},
	"get_missions":        {"spacemolt", "get_missions", nil},
	"accept_mission":      {"spacemolt", "accept_mission", map[string]string{"mission_id": "id"}},
	"complete_mission":    {"spacemolt", "complete_mission", map[string]string{"mission_id": "id"}},
	"get_active_missions": {"spacemolt", "get_active_missions", nil},
	"abandon_mission":     {"spacemolt", "abandon_mission", map[string]string{"mission_id": "id"}},
	"decline_mission":     {"spacemolt", "decline_mission", map[string]string{"template_id": "id"}},
	"jettison":            {"spacemolt", "jettison", map[string]string{"item_id": "id"}},
	"get_version":         {"spacemolt", "get_version", nil},
	"create_sell_order":   {"spacemolt_market", "create_sell_order", nil},
	"create_buy_order":    {"spacemolt_market", "create_buy_order", nil},
	"cancel_order":        {"spacemolt_market", "cancel_order", nil},
	"modify_order":        {"spacemolt_market", "modify_order", map[string]string{"new_price": "price_each"}},
	"view_orders":         {"spacemolt_market", "view_orders", nil},
	"analyze_market":      {"spacemolt_market", "analyze_market", nil},
	"estimate_purchase":   {"spacemolt_market", "estimate_purchase", nil},
	"list_ships":          {"spacemolt_ship", "list_ships", nil},
	"facility":            {"spacemolt_facility", "list", map[string]string{"action": ""}},
	"catalog":             {"spacemolt_catalog", "", nil},
	"find_route":          {"spacemolt", "find_route", map[string]string{"target_system": "id"}},
	"view_market":         {"spacemolt_market", "view_market", nil},
	"captains_log_add":    {"spacemolt_social", "captains_log_add", map[string]string{"entry": "content"}},
	"captains_log_list":   {"spacemolt_social", "captains_log_list", nil},
	"chat":                {"spacemolt_social", "chat", map[string]string{"channel": "target"}},
	"logout":              {"spacemolt_auth", "logout", nil},
	"help":                {"spacemolt", "help", nil},
	"get_system":          {"spacemolt", "get_system", nil},
}

func v1Endpoint(s *sim, t *testing.T) endpoint {
	p := s.connect(t)
	return endpoint{name: "/mcp", call: func(v1 string, args map[string]any) (string, string) {
		t.Helper()
		text, isErr := p.call(v1, args)
		if isErr {
			return "", text
		}
		return text, ""
	}}
}

func v2Endpoint(s *sim, t *testing.T) endpoint {
	p := s.connectV2(t)
	return endpoint{name: "/mcp/v2", call: func(v1 string, args map[string]any) (string, string) {
		t.Helper()
		r, ok := v2Route[v1]
		if !ok {
			t.Fatalf("no v2 route for %s", v1)
		}
		a := map[string]any{}
		for k, v := range args {
			if to, ok := r.rename[k]; ok {
				if to == "" {
					continue
				}
				k = to
			}
			a[k] = v
		}
		res := p.call(r.tool, r.action, a)
		if res.IsError {
			return "", res.Content[0].(*mcp.TextContent).Text
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		// A v2 answer that carries the action's own result under details is held to the facts there.
		var env map[string]json.RawMessage
		if json.Unmarshal(raw, &env) == nil && env["details"] != nil && string(env["details"]) != "null" {
			raw = env["details"]
		}
		return string(raw), ""
	}}
}

// TestConformanceMoreOfTheGame plays missions, exchange orders, market analysis, jettison, ship listing, facilities,
// the catalog and the version on /mcp and on /mcp/v2, and holds every result to the published v1 description's
// required fields (v2 shares its schemas), and every error to the live form: a known code, a message, and an
// Example hint on invalid_payload.
func TestConformanceMoreOfTheGame(t *testing.T) {
	facts := loadV1Facts(t)
	for _, mk := range []func(*sim, *testing.T) endpoint{v1Endpoint, v2Endpoint} {
		s := newSim(t, simOptions{manual: true})
		s.tickOnDemand()
		ep := mk(s, t)
		t.Run(strings.TrimPrefix(ep.name, "/"), func(t *testing.T) {
			got := playMoreOfTheGame(t, ep)
			order := measureOn(t, ep.name, facts, got)
			want := []string{"get_missions", "accept_mission", "get_active_missions", "complete_mission", "abandon_mission",
				"decline_mission", "catalog", "create_buy_order", "create_sell_order", "cancel_order", "modify_order",
				"view_orders", "analyze_market", "estimate_purchase", "jettison", "facility", "list_ships", "get_version"}
			for _, a := range want {
				if !slices.Contains(order, a) {
					t.Errorf("%s: %s was not measured", ep.name, a)
				}
			}
		})
	}
}

func playMoreOfTheGame(t *testing.T, ep endpoint) []v1Sample {
	var got []v1Sample
	do := func(action string, args map[string]any) map[string]any {
		t.Helper()
		doc, errText := ep.call(action, args)
		if errText != "" {
			t.Fatalf("%s %s(%v) failed: %s", ep.name, action, args, errText)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s %s: %v: %s", ep.name, action, err, doc)
		}
		if _, measured := v2Route[action]; measured && action != "register" && action != "undock" && action != "dock" &&
			action != "travel" && action != "mine" && action != "get_cargo" {
			got = append(got, v1Sample{action, action, doc})
		}
		return m
	}
	fail := func(action string, args map[string]any, code string) {
		t.Helper()
		_, errText := ep.call(action, args)
		if !strings.HasPrefix(errText, "Error: "+code+": ") || len(errText) <= len("Error: "+code+": ") {
			t.Fatalf("%s %s(%v) = %q, want Error: %s: <message>", ep.name, action, args, errText, code)
		}
		if code == game.CodeInvalidPayload && !strings.Contains(errText, "Example: {") {
			t.Errorf("%s %s: invalid_payload without an Example hint: %q", ep.name, action, errText)
		}
	}
	do("register", map[string]any{"username": "contractor", "empire": "solarian"})

	// Reference reads, docked at Sol Central.
	do("catalog", map[string]any{"type": "items"})
	do("catalog", map[string]any{"type": "ships", "page": 1, "page_size": 5})
	do("get_version", nil)
	do("list_ships", nil)
	do("facility", map[string]any{"action": "list"})
	do("estimate_purchase", map[string]any{"item_id": "iron_ore", "quantity": 5})
	do("analyze_market", nil)

	// A mission: accept the iron supply run, mine its iron, hand it in.
	board := do("get_missions", nil)
	var iron, other map[string]any
	for _, m := range board["missions"].([]any) {
		mm := m.(map[string]any)
		if mm["template_id"] == "supply_iron_ore" {
			iron = mm
		} else if other == nil {
			other = mm
		}
	}
	if iron == nil || other == nil {
		t.Fatalf("board = %v, want an iron supply run and another", board)
	}
	need := int(iron["objectives"].([]any)[0].(map[string]any)["quantity"].(float64))
	do("accept_mission", map[string]any{"mission_id": iron["mission_id"]})
	// Another, taken and dropped before any ore is aboard.
	do("accept_mission", map[string]any{"mission_id": other["mission_id"]})
	fail("accept_mission", map[string]any{"mission_id": other["mission_id"]}, game.CodeMissionAlreadyAccepted)
	fail("complete_mission", map[string]any{"mission_id": other["mission_id"]}, game.CodeMissionIncomplete)
	do("get_active_missions", nil)
	do("abandon_mission", map[string]any{"mission_id": other["mission_id"]})
	do("decline_mission", map[string]any{"template_id": other["template_id"]})
	do("undock", nil)
	fail("get_missions", nil, game.CodeNotDocked)
	do("travel", map[string]any{"target_poi": "main_belt"})
	for range 14 {
		cargo := do("get_cargo", nil)
		have := 0
		for _, c := range cargo["cargo"].([]any) {
			if c.(map[string]any)["item_id"] == "iron_ore" {
				have = int(c.(map[string]any)["quantity"].(float64))
			}
		}
		if have >= need+5 { // the mission, a jettison, a sell, two resting and one crossing order
			break
		}
		do("mine", nil)
	}
	do("jettison", map[string]any{"item_id": "iron_ore", "quantity": 1})
	do("travel", map[string]any{"target_poi": "sol_central"})
	// Undocked at the station: the trade docks first and says so.
	sold := do("sell", map[string]any{"item_id": "iron_ore", "quantity": 1})
	if sold["auto_docked"] != true {
		t.Errorf("%s: sell at a station while undocked = %v, want auto_docked", ep.name, sold)
	}
	do("get_active_missions", nil)
	done := do("complete_mission", map[string]any{"mission_id": iron["mission_id"]})
	if done["credits_earned"].(float64) <= 0 {
		t.Fatalf("complete_mission = %v", done)
	}
	fail("complete_mission", map[string]any{"mission_id": iron["mission_id"]}, game.CodeMissionNotFound)
	fail("accept_mission", map[string]any{"mission_id": "no-such-mission"}, game.CodeMissionNotFound)
	fail("accept_mission", nil, game.CodeInvalidPayload)

	// Exchange orders: a sell order that rests, one that crosses the book, a buy order; reprice, view, cancel.
	rest := do("create_sell_order", map[string]any{"item_id": "iron_ore", "quantity": 2, "price_each": 500})
	if rest["order_id"] == nil || rest["quantity_listed"].(float64) != 2 {
		t.Fatalf("resting sell order = %v", rest)
	}
	cross := do("create_sell_order", map[string]any{"item_id": "iron_ore", "quantity": 1, "price_each": 1})
	if cross["quantity_filled"].(float64) != 1 || cross["order_id"] != nil {
		t.Fatalf("crossing sell order = %v", cross)
	}
	bid := do("create_buy_order", map[string]any{"item_id": "gold_ore", "quantity": 2, "price_each": 3})
	do("modify_order", map[string]any{"order_id": bid["order_id"], "new_price": 4})
	orders := do("view_orders", nil)
	if orders["total"].(float64) != 2 {
		t.Fatalf("view_orders = %v", orders)
	}
	do("view_orders", map[string]any{"station_id": game.HomeBase, "order_type": "buy", "sort_by": "price_desc"})
	back := do("cancel_order", map[string]any{"order_id": rest["order_id"]})
	if back["returned_items"] == nil {
		t.Fatalf("cancel sell order = %v", back)
	}
	do("cancel_order", map[string]any{"order_id": "all"})
	fail("cancel_order", map[string]any{"order_id": "nope"}, game.CodeOrderNotFound)
	fail("create_sell_order", map[string]any{"item_id": "iron_ore", "quantity": 0, "price_each": 5}, game.CodeInvalidPayload)
	fail("create_sell_order", map[string]any{"item_id": "iron_ore", "quantity": 1, "price_each": game.MaxOrderPrice + 1}, game.CodePriceTooHigh)
	fail("catalog", map[string]any{"type": "planets"}, game.CodeInvalidPayload)
	if ep.name == "/mcp" { // v2 names facility's actions as actions of spacemolt_facility
		fail("facility", map[string]any{"action": "build"}, game.CodeInvalidPayload)
	}
	return got
}

// TestConformanceReads holds the remaining reads and the log, chat and logout to the v1 facts on /mcp. On /mcp/v2
// these answer in their v2 response types (v2patch.go), held to the v2 facts by httpapi's TestMCPv2Conformance.
func TestConformanceReads(t *testing.T) {
	facts := loadV1Facts(t)
	for _, mk := range []func(*sim, *testing.T) endpoint{v1Endpoint} {
		s := newSim(t, simOptions{manual: true})
		s.tickOnDemand()
		ep := mk(s, t)
		t.Run(strings.TrimPrefix(ep.name, "/"), func(t *testing.T) {
			var got []v1Sample
			do := func(action string, args map[string]any) map[string]any {
				t.Helper()
				doc, errText := ep.call(action, args)
				if errText != "" {
					t.Fatalf("%s %s(%v) failed: %s", ep.name, action, args, errText)
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(doc), &m); err != nil {
					t.Fatalf("%s %s: %v", ep.name, action, err)
				}
				if action != "register" && action != "get_system" {
					got = append(got, v1Sample{action, action, doc})
				}
				return m
			}
			do("register", map[string]any{"username": "reader", "empire": "solarian"})
			sys := do("get_system", nil)
			far := sys["system"].(map[string]any)["connections"].([]any)[0].(map[string]any)["system_id"]
			do("find_route", map[string]any{"target_system": far})
			do("find_route", map[string]any{"target_system": "nowhere"})
			do("view_market", nil)
			do("view_market", map[string]any{"item_id": "iron_ore"})
			do("captains_log_list", nil) // empty
			do("captains_log_add", map[string]any{"entry": "Day 1."})
			do("captains_log_add", map[string]any{"entry": "Day 2."})
			do("captains_log_list", map[string]any{"index": 1})
			do("chat", map[string]any{"channel": "local", "content": "hello"})
			if ep.name == "/mcp" {
				do("help", nil)
				do("help", map[string]any{"topic": "market"})
			}
			do("logout", nil)
			order := measureOn(t, ep.name, facts, got)
			if len(order) < 6 {
				t.Fatalf("measured %v", order)
			}
		})
	}
}
