package autopilot

import (
	"encoding/json"

	"go.yaml.in/yaml/v3"
)

// SpaceMolt's MCP v2 endpoint (/mcp/v2) puts the legacy commands behind action-dispatched tools. The policy decides
// in legacy names; these helpers translate its calls to v2 and v2 calls back, so one policy plays both endpoints.

// v2Tools maps a legacy command to the v2 tool that carries it as an action.
var v2Tools = map[string]string{
	"get_status": "spacemolt", "get_ship": "spacemolt", "get_cargo": "spacemolt", "get_system": "spacemolt",
	"get_poi": "spacemolt", "travel": "spacemolt", "jump": "spacemolt", "dock": "spacemolt", "undock": "spacemolt",
	"mine": "spacemolt", "sell": "spacemolt", "buy": "spacemolt", "refuel": "spacemolt", "find_route": "spacemolt",
	"view_market": "spacemolt_market", "login": "spacemolt_auth", "register": "spacemolt_auth",
}

// v2Params are the legacy parameter names that v2 calls id.
var v2Params = map[string]bool{"target_poi": true, "target_system": true, "item_id": true}

// isV2 reports whether the offered tools are MCP v2's.
func isV2(available map[string]bool) bool {
	return available["spacemolt"] && available["spacemolt_auth"]
}

// legacyAvailable is what the policy may call on a v2 server: every command whose v2 tool is offered.
func legacyAvailable(available map[string]bool) map[string]bool {
	out := map[string]bool{}
	for cmd, tool := range v2Tools {
		if available[tool] {
			out[cmd] = true
		}
	}
	return out
}

// toV2 turns a legacy call into the v2 tool call.
func toV2(tool, args string) (string, string) {
	v2, ok := v2Tools[tool]
	if !ok {
		return tool, args
	}
	m := map[string]any{}
	_ = json.Unmarshal([]byte(args), &m)
	out := map[string]any{"action": tool}
	for k, v := range m {
		if v2Params[k] && !(tool == "view_market") {
			k = "id"
		}
		out[k] = v
	}
	b, _ := json.Marshal(out)
	return v2, string(b)
}

// fromV2 turns a v2 call back into the legacy one the state reader understands; other calls pass unchanged.
func fromV2(name, args string) (string, string) {
	if name != "spacemolt" && name != "spacemolt_market" && name != "spacemolt_auth" {
		return name, args
	}
	m := map[string]any{}
	if json.Unmarshal([]byte(args), &m) != nil {
		return name, args
	}
	action, _ := m["action"].(string)
	if action == "" {
		return name, args
	}
	delete(m, "action")
	if id, ok := m["id"]; ok {
		delete(m, "id")
		switch action {
		case "travel":
			m["target_poi"] = id
		case "jump", "find_route":
			m["target_system"] = id
		default:
			m["item_id"] = id
		}
	}
	b, _ := json.Marshal(m)
	return action, string(b)
}

// asJSON returns content as JSON: unchanged when it is JSON, converted when it is the YAML rendering v2 servers
// such as the simulator give as text, else unchanged (the reader then learns nothing from it).
func asJSON(content string) string {
	if json.Valid([]byte(content)) {
		return content
	}
	var v any
	if yaml.Unmarshal([]byte(content), &v) != nil {
		return content
	}
	if _, ok := v.(map[string]any); !ok {
		return content
	}
	b, err := json.Marshal(v)
	if err != nil {
		return content
	}
	return string(b)
}

// fromV2Result turns an API v2 state answer back into the legacy result the state reader understands: SpaceMolt's
// v2 get_status (and get_state, get_ship, get_cargo) answer the state blob {player, ship, modules, cargo, location,
// queue}, and a v2 mutation the sections it changed with its own result under details. The legacy reader finds the
// position on the player (current_system, current_poi, docked_at_base) and the hold on the ship; details' fields
// become top-level as in the legacy answer. Anything else passes unchanged.
func fromV2Result(content string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(content), &m) != nil {
		return content
	}
	_, hasDetails := m["details"]
	var loc struct {
		SystemID  *string `json:"system_id"`
		POIID     *string `json:"poi_id"`
		DockedAt  *string `json:"docked_at"`
		InTransit bool    `json:"in_transit"`
		DestPOI   string  `json:"transit_dest_poi_id"`
	}
	hasLoc := false
	if raw, ok := m["location"]; ok && json.Unmarshal(raw, &loc) == nil && loc.SystemID != nil {
		hasLoc = true
	}
	if !hasDetails && !hasLoc {
		return content
	}
	out := map[string]any{}
	if hasDetails {
		var d map[string]any
		if json.Unmarshal(m["details"], &d) == nil {
			for k, v := range d {
				out[k] = v
			}
		}
	}
	player := map[string]any{}
	if raw, ok := m["player"]; ok {
		_ = json.Unmarshal(raw, &player)
	}
	if hasLoc {
		player["current_system"] = *loc.SystemID
		if loc.POIID != nil {
			player["current_poi"] = *loc.POIID
		}
		if loc.DockedAt != nil {
			player["docked_at_base"] = *loc.DockedAt
		} else {
			player["docked_at_base"] = ""
		}
		player["in_transit"] = loc.InTransit
		if loc.InTransit && loc.DestPOI != "" {
			player["transit"] = map[string]any{"to_poi": loc.DestPOI}
		}
	}
	if len(player) > 0 {
		out["player"] = player
	}
	if raw, ok := m["ship"]; ok {
		ship := map[string]any{}
		if json.Unmarshal(raw, &ship) == nil {
			if cargo, ok := m["cargo"]; ok {
				var items any
				if json.Unmarshal(cargo, &items) == nil {
					ship["cargo"] = items
				}
			}
			out["ship"] = ship
			if _, set := out["used"]; !set && ship["cargo_used"] != nil {
				out["used"], out["capacity"] = ship["cargo_used"], ship["cargo_capacity"]
			}
		}
	}
	if raw, ok := m["cargo"]; ok {
		if _, set := out["cargo"]; !set {
			var items any
			if json.Unmarshal(raw, &items) == nil {
				out["cargo"] = items
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return content
	}
	return string(b)
}
