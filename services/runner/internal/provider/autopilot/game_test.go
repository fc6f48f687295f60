package autopilot

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// The fixtures below reproduce the result JSON of services/spacemolt-sim (internal/game/views.go) field for field,
// which follows the published v1 description (docs/SPACEMOLT.md, "State reads"): the autopilot must read what the
// game really sends.

// status renders get_status. poi "" means in transit (current_poi is then where the move started); docked sets
// docked_at_base to the home base. The hold is cargoUsed units of iron ore; statusWith names the stacks.
func status(poi string, docked bool, fuel, cargoUsed, credits int) string {
	var hold []stack
	if cargoUsed > 0 {
		hold = []stack{{"iron_ore", cargoUsed}}
	}
	return statusWith(poi, docked, fuel, credits, hold...)
}

func statusWith(poi string, docked bool, fuel, credits int, hold ...stack) string {
	current := poi
	if poi == "" {
		current = "sol_central"
	}
	player := map[string]any{
		"id": "p_0001", "username": "miner", "empire": "solarian", "credits": credits,
		"current_system": "sol", "current_poi": current, "current_ship_id": "s_0001", "home_base": "confederacy_central_command",
		"created_at": "2026-12-01T10:00:00Z", "last_active_at": "2026-12-01T10:05:00Z", "last_login_at": "2026-12-01T10:00:00Z",
		"last_chat_check": "2026-12-01T10:00:00Z", "anonymous": false, "is_cloaked": false, "clan_tag": "",
		"primary_color": "#ffffff", "secondary_color": "#000000", "status_message": "", "revealed_pois": map[string]bool{},
		"skills": map[string]int{}, "experience": 0,
		"stats": map[string]int{"credits_earned": 0, "credits_spent": 0, "ore_mined": 0, "distance_traveled": 0, "time_played": 0,
			"trades_completed": 0, "items_crafted": 0, "systems_explored": 1, "ships_destroyed": 0, "ships_lost": 0,
			"pirates_destroyed": 0, "bases_destroyed": 0},
	}
	if docked {
		player["docked_at_base"] = "confederacy_central_command"
	}
	used, cargo := 0, []any{}
	for _, it := range hold {
		used += it.qty
		cargo = append(cargo, map[string]any{"item_id": it.id, "name": itemName(it.id), "quantity": it.qty, "size": 1})
	}
	v := map[string]any{
		"player": player,
		"ship": map[string]any{
			"id": "s_0001", "owner_id": "p_0001", "class_id": "theoria", "name": "Theoria", "created_at": "2026-12-01T10:00:00Z",
			"hull": 100, "max_hull": 100, "shield": 55, "max_shield": 55, "shield_recharge": 1, "armor": 0,
			"fuel": fuel, "max_fuel": 100, "speed": 1, "cargo_used": used, "cargo_capacity": 70,
			"cpu_capacity": 12, "cpu_used": 4, "power_capacity": 20, "power_used": 5,
			"weapon_slots": 1, "defense_slots": 1, "utility_slots": 3, "modules": []string{"s_0001-m1"}, "cargo": cargo,
		},
		"modules": []any{map[string]any{"id": "s_0001-m1", "type_id": "mining_laser_i", "name": "Mining Laser I", "type": "mining",
			"size": 1, "cpu_usage": 2, "power_usage": 3, "quality": 1, "quality_grade": "standard", "wear": 0, "wear_status": "pristine",
			"mining_power": 5}},
	}
	if poi == "" {
		player["in_transit"] = true
		player["transit"] = map[string]any{
			"type": "travel", "from_system": "sol", "from_poi": "sol_central", "to_system": "sol", "to_poi": "main_belt",
			"ticks_remaining": 1, "arrives_in_seconds": 10,
		}
	}
	return mustJSON(v)
}

// withoutHoldList drops ship.cargo from a status, as a result that does not list the hold.
func withoutHoldList(statusJSON string) string {
	var v map[string]any
	_ = json.Unmarshal([]byte(statusJSON), &v)
	delete(v["ship"].(map[string]any), "cargo")
	return mustJSON(v)
}

type stack struct {
	id  string
	qty int
}

func cargoResult(items ...stack) string {
	used := 0
	list := []any{}
	for _, it := range items {
		used += it.qty
		list = append(list, map[string]any{"item_id": it.id, "name": itemName(it.id), "quantity": it.qty, "size": 1})
	}
	return mustJSON(map[string]any{"cargo": list, "used": used, "capacity": 70, "available": 70 - used})
}

func mineResult(resource string, qty, cargoUsed int) string {
	return mustJSON(map[string]any{
		"command": "mine", "pending": false, "message": fmt.Sprintf("Mined %d %s.", qty, itemName(resource)),
		"resource_id": resource, "name": itemName(resource), "quantity": qty, "remaining": 5940,
		"cargo_used": cargoUsed, "cargo_capacity": 70,
	})
}

func travelResult(poi string) string {
	return mustJSON(map[string]any{
		"action": "travel", "poi": map[string]string{"sol_central": "Sol Central", "main_belt": "Main Belt"}[poi], "poi_id": poi,
		"online_players": []any{}, "online_players_count": 0, "online_players_truncated": false,
	})
}

func dockResult() string {
	return mustJSON(map[string]any{"command": "dock", "pending": false, "message": "Docked at Confederacy Central Command."})
}

func undockResult() string {
	return mustJSON(map[string]any{"action": "undock"})
}

func sellResult(item string, requested, sold, price int) string {
	fills := []any{}
	if sold > 0 {
		fills = append(fills, map[string]int{"quantity": sold, "price_each": price, "subtotal": sold * price})
	}
	return mustJSON(map[string]any{
		"action": "sell", "item": itemName(item), "item_id": item, "quantity_sold": sold, "total_earned": sold * price,
		"fills": fills, "unsold": requested - sold, "level_up": false, "message": fmt.Sprintf("Sold %d %s.", sold, itemName(item)),
	})
}

func refuelResult(fuel, cost int) string {
	return mustJSON(map[string]any{"action": "refuel", "source": "credits", "fuel": fuel, "fuel_now": fuel, "fuel_max": 100, "cost": cost})
}

func gameErr(code, msg string) string { return "Error: " + code + ": " + msg }

func itemName(id string) string {
	return map[string]string{"iron_ore": "Iron Ore", "copper_ore": "Copper Ore"}[id]
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v) // maps of plain values always marshal
	return string(b)
}

// spaceMoltTools is the tool list the runner offers (names as the MCP server lists them).
func spaceMoltTools(except ...string) []llm.Tool {
	var out []llm.Tool
	for _, n := range []string{"get_status", "get_ship", "get_cargo", "get_system", "get_poi", "travel", "dock", "undock",
		"mine", "sell", "buy", "view_market", "refuel", "captains_log_add", "zoea_search_messages"} {
		if !slices.Contains(except, n) {
			out = append(out, llm.Tool{Name: n, Description: n + " tool", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)})
		}
	}
	return out
}

// game is a tiny in-memory SpaceMolt for the walk-through test: the home system's starter loop with the
// simulator's numbers (cargo 70, mining power 5, fuel 1 per hop, iron 5 and copper 8 credits, fuel 2 a unit).
type game struct {
	poi     string
	docked  bool
	fuel    int
	credits int
	cargo   []stack
	mined   int
	// rateLimitOn makes the call with this index (0-based, across the game) fail rate_limited once.
	rateLimitOn int
	calls       int
}

func newGame() *game {
	return &game{poi: "sol_central", docked: true, fuel: 100, credits: 100, rateLimitOn: -1}
}

func (g *game) used() int {
	n := 0
	for _, s := range g.cargo {
		n += s.qty
	}
	return n
}

func (g *game) add(id string, qty int) {
	for i := range g.cargo {
		if g.cargo[i].id == id {
			g.cargo[i].qty += qty
			return
		}
	}
	g.cargo = append(g.cargo, stack{id, qty})
}

// call executes one tool call and returns the text the runner would store as the tool result.
func (g *game) call(name, args string) string {
	defer func() { g.calls++ }()
	if g.calls == g.rateLimitOn {
		return gameErr("rate_limited", "Too many actions; retry_after: 3")
	}
	var a struct {
		TargetPOI string `json:"target_poi"`
		ItemID    string `json:"item_id"`
		Quantity  int    `json:"quantity"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return gameErr("invalid_payload", err.Error())
	}
	switch name {
	case "get_status":
		return statusWith(g.poi, g.docked, g.fuel, g.credits, g.cargo...)
	case "get_cargo":
		return cargoResult(g.cargo...)
	case "undock":
		if !g.docked {
			return gameErr("not_docked", "You are not docked.")
		}
		g.docked = false
		return undockResult()
	case "dock":
		if g.docked {
			return gameErr("docked", "You are already docked.")
		}
		if g.poi != "sol_central" {
			return gameErr("invalid_poi", "There is no base here.")
		}
		g.docked = true
		return dockResult()
	case "travel":
		if a.TargetPOI == g.poi {
			return gameErr("invalid_poi", "You are already at "+g.poi+".")
		}
		g.docked, g.poi = false, a.TargetPOI
		g.fuel--
		return travelResult(g.poi)
	case "mine":
		if g.docked {
			return gameErr("docked", "Undock before mining.")
		}
		if g.poi != "main_belt" {
			return gameErr("invalid_poi", "Nothing to mine here.")
		}
		free := 70 - g.used()
		if free <= 0 {
			return gameErr("cargo_full", "Your cargo hold is full (70/70). Sell some cargo first.")
		}
		res := "iron_ore"
		if g.mined%4 == 3 {
			res = "copper_ore"
		}
		g.mined++
		qty := min(5, free)
		g.add(res, qty)
		return mineResult(res, qty, g.used())
	case "sell":
		price := map[string]int{"iron_ore": 5, "copper_ore": 8}[a.ItemID]
		for i, s := range g.cargo {
			if s.id == a.ItemID {
				sold := min(a.Quantity, s.qty)
				g.cargo[i].qty -= sold
				if g.cargo[i].qty == 0 {
					g.cargo = slices.Delete(g.cargo, i, i+1)
				}
				g.credits += sold * price
				g.docked = true
				return sellResult(a.ItemID, a.Quantity, sold, price)
			}
		}
		return gameErr("item_not_available", "You have no "+a.ItemID+" in your cargo.")
	case "refuel":
		add := min(100-g.fuel, g.credits/2)
		g.fuel += add
		g.credits -= 2 * add
		return refuelResult(g.fuel, 2*add)
	}
	return gameErr("unknown_tool", name)
}
