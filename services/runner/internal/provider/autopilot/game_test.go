package autopilot

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// The fixtures below reproduce the result JSON of services/spacemolt-sim (internal/game/views.go) field for field,
// which follows docs/SPACEMOLT.md: the autopilot must read what the game really sends.

func str(s string) *string { return &s }

// status renders get_status. poi "" means in transit (poi_id null); docked sets docked_at to the home base.
func status(poi string, docked bool, fuel, cargoUsed, credits int) string {
	var poiID, poiName, dockedAt *string
	if poi != "" {
		poiID, poiName = str(poi), str(map[string]string{"sol_central": "Sol Central", "main_belt": "Main Belt"}[poi])
	}
	if docked {
		dockedAt = str("confederacy_central_command")
	}
	v := map[string]any{
		"player": map[string]any{
			"id": "p_0001", "username": "miner", "empire": "solarian", "credits": credits,
			"system_id": "sol", "system_name": "Sol", "poi_id": poiID, "poi_name": poiName,
			"docked_at": dockedAt, "in_transit": poi == "",
		},
		"ship": map[string]any{
			"id": "s_0001", "class": "theoria", "name": "Theoria", "hull": 100, "hull_max": 100,
			"shield": 55, "shield_max": 55, "fuel": fuel, "fuel_max": 100, "cargo_used": cargoUsed,
			"cargo_max": 70, "speed": 1, "mining_power": 5,
		},
		"modules":      []any{map[string]any{"id": "m_1", "name": "Mining Laser I", "type": "mining", "stats": map[string]int{"mining_power": 5}}},
		"current_tick": 42,
	}
	if poi == "" {
		v["player"].(map[string]any)["transit"] = map[string]any{
			"type": "travel", "from_system": "sol", "from_poi": "sol_central", "to_system": "sol", "to_poi": "main_belt",
			"ticks_remaining": 1, "arrives_in_seconds": 10,
		}
	}
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
		list = append(list, map[string]any{"item_id": it.id, "name": itemName(it.id), "quantity": it.qty})
	}
	return mustJSON(map[string]any{"cargo": list, "used": used, "capacity": 70, "available": 70 - used})
}

func mineResult(resource string, qty, cargoUsed int) string {
	return mustJSON(map[string]any{
		"kind": "yield", "resource_id": resource, "name": itemName(resource), "quantity": qty, "remaining": 5940,
		"cargo_used": cargoUsed, "cargo_max": 70, "message": fmt.Sprintf("Mined %d %s.", qty, itemName(resource)),
	})
}

func travelResult(poi string, fuel int) string {
	return mustJSON(map[string]any{
		"poi": map[string]string{"sol_central": "Sol Central", "main_belt": "Main Belt"}[poi], "poi_id": poi,
		"system_id": "sol", "fuel_used": 1, "fuel": fuel, "ticks": 1, "message": "Arrived.",
	})
}

func dockResult() string {
	return mustJSON(map[string]any{
		"base":   map[string]any{"id": "confederacy_central_command", "name": "Confederacy Central Command", "services": []string{"market", "fuel"}, "fuel_price": 2},
		"poi_id": "sol_central", "message": "Docked at Confederacy Central Command.",
	})
}

func undockResult() string {
	return mustJSON(map[string]any{"ok": true, "poi_id": "sol_central", "message": "Undocked. You are in space at sol_central."})
}

func sellResult(item string, requested, sold, price, credits int) string {
	fills := []any{}
	if sold > 0 {
		fills = append(fills, map[string]int{"quantity": sold, "price_each": price})
	}
	return mustJSON(map[string]any{
		"item_id": item, "quantity_requested": requested, "quantity_sold": sold, "total_earned": sold * price,
		"fills": fills, "credits": credits, "message": fmt.Sprintf("Sold %d %s.", sold, itemName(item)),
	})
}

func refuelResult(fuel, added, cost, credits int) string {
	return mustJSON(map[string]any{"fuel": fuel, "fuel_max": 100, "fuel_added": added, "cost": cost, "credits": credits, "message": "Refuelled."})
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
		return status(g.poi, g.docked, g.fuel, g.used(), g.credits)
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
		return travelResult(g.poi, g.fuel)
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
				return sellResult(a.ItemID, a.Quantity, sold, price, g.credits)
			}
		}
		return gameErr("item_not_available", "You have no "+a.ItemID+" in your cargo.")
	case "refuel":
		add := min(100-g.fuel, g.credits/2)
		g.fuel += add
		g.credits -= 2 * add
		return refuelResult(g.fuel, add, 2*add, g.credits)
	}
	return gameErr("unknown_tool", name)
}
