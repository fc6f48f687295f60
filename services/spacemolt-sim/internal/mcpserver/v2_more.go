package mcpserver

import (
	"context"
	"slices"
)

// v2Extend adds the missions, exchange-order, jettison, ship-listing, facility, catalog and version actions to the
// v2 table, each before its tool's help (the v2 names: id for a mission or an item, with the v1 names as aliases).
func (s *Server) v2Extend(tools []v2Tool, helpFor func(string) v2Action) []v2Tool {
	e := s.engine
	all := map[string]tool{}
	for _, t := range s.tools() {
		all[t.name] = t
	}
	// from reuses a v1 tool under its v2 parameter names.
	from := func(v1 string, rename map[string]string) v2Action {
		t := all[v1]
		t.params = slices.Clone(t.params)
		aliases := map[string]string{}
		for i, p := range t.params {
			if v2, ok := rename[p.name]; ok {
				aliases[p.name] = v2
				t.params[i].name = v2
			}
		}
		run := t.run
		t.run = func(ctx context.Context, c call) (any, error) {
			for v1, v2 := range aliases { // the v1 tool reads its own names
				if v, ok := c.args.raw[v2]; ok {
					c.args.raw[v1] = v
				}
			}
			return run(ctx, c)
		}
		a := v2Action{tool: t}
		if len(aliases) > 0 {
			a.aliases = map[string]string{}
			for v1, v2 := range aliases {
				a.aliases[v1] = v2
			}
		}
		return a
	}
	mission := map[string]string{"mission_id": "id"}
	accept := from("accept_mission", mission)
	accept.aliases["template_id"] = "id" // v2 accepts a mission by its template too
	more := map[string][]v2Action{
		"spacemolt": {
			from("get_missions", nil), accept, from("complete_mission", mission),
			from("get_active_missions", nil), from("abandon_mission", mission),
			from("decline_mission", map[string]string{"template_id": "id"}),
			from("jettison", map[string]string{"item_id": "id"}), // get_version is v2.go's, on the v2 shape
		},
		"spacemolt_market": {
			from("create_buy_order", nil), from("create_sell_order", nil), from("cancel_order", nil),
			from("modify_order", map[string]string{"new_price": "price_each"}), from("view_orders", nil),
			from("analyze_market", nil), from("estimate_purchase", nil),
		},
		"spacemolt_ship":     {from("list_ships", nil)},
		"spacemolt_storage":  {from("jettison", map[string]string{"item_id": "id"})}, // v2 has it on both tools
		"spacemolt_facility": {},
	}
	facility := from("facility", nil)
	facility.name = "list"
	facility.params = nil
	facility.run = func(_ context.Context, c call) (any, error) { return e.Facility(c.sid, "list") }
	more["spacemolt_facility"] = append(more["spacemolt_facility"], facility)
	for i, t := range tools {
		if t.name == "spacemolt_catalog" {
			cat := from("catalog", nil)
			tools[i].actions = []v2Action{cat}
			tools[i].desc = "Game reference data; takes no action. type=items lists the ores, type=ships the ship classes."
			continue
		}
		add, ok := more[t.name]
		if !ok {
			continue
		}
		if desc, helpOnly := map[string]string{
			"spacemolt_ship":     "Ship management; the simulator implements list_ships.",
			"spacemolt_storage":  "Station storage; the simulator implements jettison (it has no storage).",
			"spacemolt_facility": "Station facilities; the simulator implements list.",
		}[t.name]; helpOnly {
			tools[i].desc = desc
			tools[i].actions = append(add, helpFor(t.name))
			continue
		}
		h := slices.IndexFunc(t.actions, func(a v2Action) bool { return a.name == "help" })
		if h < 0 {
			h = len(t.actions)
		}
		tools[i].actions = slices.Concat(t.actions[:h], add, t.actions[h:])
	}
	return tools
}
