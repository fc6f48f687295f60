package mcpserver_test

import (
	"testing"
)

func TestStarterLoopOverMCP(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.register(t, "starter")

	st := p.ok("get_status", nil)
	if str(t, st, "player", "current_poi") != "sol_central" || str(t, st, "player", "docked_at_base") != "confederacy_central_command" ||
		str(t, st, "player", "current_system") != "sol" || num(t, st, "player", "credits") != 100 {
		t.Fatalf("initial status = %v", st)
	}
	ship := p.ok("get_ship", nil)
	for field, want := range map[string]int{"hull": 100, "max_hull": 100, "shield": 55, "max_shield": 55, "fuel": 100, "max_fuel": 100, "cargo_capacity": 70, "speed": 1} {
		if got := num(t, ship, "ship", field); got != want {
			t.Fatalf("starter ship %s = %d, want %d", field, got, want)
		}
	}
	if str(t, ship, "ship", "class_id") != "theoria" || num(t, ship, "cargo_max") != 70 {
		t.Fatalf("ship class = %v", ship)
	}
	if laser := ship["modules"].([]any)[0].(map[string]any); str(t, laser, "type_id") != "mining_laser_i" || num(t, laser, "mining_power") != 5 {
		t.Fatalf("mining laser = %v", laser)
	}

	p.ok("undock", nil)
	tr := p.ok("travel", map[string]any{"target_poi": "main_belt"})
	if str(t, tr, "poi_id") != "main_belt" || str(t, tr, "poi") != "Main Belt" {
		t.Fatalf("travel = %v", tr)
	}
	if fuel := num(t, p.ok("get_ship", nil), "ship", "fuel"); fuel != 99 {
		t.Fatalf("fuel after a 2 AU travel = %d, want 99", fuel)
	}
	iron := 0
	for range 12 {
		m := p.ok("mine", nil)
		if str(t, m, "command") != "mine" || m["pending"] != false || num(t, m, "quantity") != 5 {
			t.Fatalf("mine = %v", m)
		}
		if str(t, m, "resource_id") == "iron_ore" {
			iron += 5
		}
	}
	if iron == 0 {
		t.Fatal("12 mining rolls at main_belt yielded no iron")
	}
	cargo := p.ok("get_cargo", nil)
	if num(t, cargo, "used") != 60 || num(t, cargo, "available") != 10 {
		t.Fatalf("cargo = %v", cargo)
	}
	p.ok("travel", map[string]any{"target_poi": "sol_central"})
	d := p.ok("dock", nil)
	if str(t, d, "command") != "dock" || str(t, p.ok("get_status", nil), "player", "docked_at_base") != "confederacy_central_command" {
		t.Fatalf("dock = %v", d)
	}
	market := p.ok("view_market", map[string]any{"item_id": "iron_ore"})
	items := market["items"].([]any)
	if len(items) != 1 || num(t, items[0].(map[string]any), "best_buy") != 5 {
		t.Fatalf("market = %v", market)
	}
	sell := p.ok("sell", map[string]any{"item_id": "iron_ore", "quantity": iron})
	if num(t, sell, "quantity_sold") != iron || num(t, sell, "total_earned") != 5*iron || str(t, sell, "item") != "Iron Ore" {
		t.Fatalf("sell = %v", sell)
	}
	fills := sell["fills"].([]any)
	if len(fills) == 0 || num(t, fills[0].(map[string]any), "price_each") != 5 || num(t, fills[0].(map[string]any), "subtotal") != 5*num(t, fills[0].(map[string]any), "quantity") {
		t.Fatalf("fills = %v", fills)
	}
	rf := p.ok("refuel", nil)
	if num(t, rf, "fuel") != 100 || num(t, rf, "cost") != 4 || str(t, rf, "source") != "credits" {
		t.Fatalf("refuel = %v", rf)
	}
	st = p.ok("get_status", nil)
	if num(t, st, "player", "credits") != 100+5*iron-4 || num(t, st, "player", "stats", "ore_mined") != 60 ||
		num(t, st, "player", "stats", "credits_earned") != 5*iron || num(t, st, "player", "stats", "credits_spent") != 4 {
		t.Fatalf("credits and counters after the loop: %v", st["player"])
	}
	stats := s.engine.Stats()
	if len(stats.Players) != 1 || stats.Players[0].CreditsEarned != 5*iron || stats.Players[0].OreMined != 60 || stats.Players[0].Errors != 0 {
		t.Fatalf("stats = %+v", stats.Players)
	}
}

func TestReadToolsShapes(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.register(t, "reader")
	sys := p.ok("get_system", nil)
	if str(t, sys, "system", "id") != "sol" || len(sys["system"].(map[string]any)["connections"].([]any)) == 0 {
		t.Fatalf("get_system = %v", sys)
	}
	poi := p.ok("get_poi", nil)
	if str(t, poi, "poi", "id") != "sol_central" || str(t, poi, "base", "id") != "confederacy_central_command" {
		t.Fatalf("get_poi = %v", poi)
	}
	m := p.ok("get_map", nil)
	if num(t, m, "total_count") < 12 {
		t.Fatalf("get_map total_count = %d", num(t, m, "total_count"))
	}
	text, _ := p.call("get_map", nil)
	if len(text) < 20_000 {
		t.Fatalf("get_map is %d bytes; it should be big like the real one", len(text))
	}
	var far string
	for _, raw := range m["systems"].([]any) {
		if id := str(t, raw.(map[string]any), "system_id"); id != "sol" {
			far = id
		}
	}
	route := p.ok("find_route", map[string]any{"target_system": far})
	if route["found"] != true || num(t, route, "total_jumps") < 1 || num(t, route, "estimated_fuel") < 1 {
		t.Fatalf("find_route = %v", route)
	}
	one := p.ok("get_map", map[string]any{"system_id": "sol"})
	if num(t, one, "total_count") != 1 {
		t.Fatalf("get_map(sol) = %v", one)
	}
	other := s.register(t, "neighbour")
	near := other.ok("get_nearby", nil)
	if num(t, near, "count") != 1 || str(t, near["nearby"].([]any)[0].(map[string]any), "username") != "reader" {
		t.Fatalf("get_nearby = %v", near)
	}
	h := p.ok("help", map[string]any{"topic": "market"})
	if str(t, h, "text") == "" {
		t.Fatalf("help = %v", h)
	}
	fresh := s.connect(t)
	if h := fresh.ok("help", nil); str(t, h, "text") == "" {
		t.Fatal("help without a session failed")
	}
	la := p.ok("captains_log_add", map[string]any{"entry": "Day 1: undocked."})
	if num(t, la, "index") != 0 || num(t, la, "total_count") != 1 {
		t.Fatalf("captains_log_add = %v", la)
	}
	ll := p.ok("captains_log_list", nil)
	if str(t, ll, "entry", "entry") != "Day 1: undocked." {
		t.Fatalf("captains_log_list = %v", ll)
	}
	c := p.ok("chat", map[string]any{"channel": "local", "content": "hello"})
	if num(t, c, "recipients") != 1 {
		t.Fatalf("chat = %v", c)
	}
	n := other.ok("get_notifications", map[string]any{"limit": 100})
	found := false
	for _, raw := range n["notifications"].([]any) {
		nn := raw.(map[string]any)
		if str(t, nn, "type") == "chat" && str(t, nn, "data", "content") == "hello" && str(t, nn, "data", "from") == "reader" {
			found = true
		}
	}
	if !found {
		t.Fatalf("chat not delivered: %v", n)
	}
}
