package replaybench

import (
	"encoding/json"
	"slices"
)

type param struct {
	name, typ, desc string
	required        bool
	enum            []string
}

// schema builds a tool's JSON schema the way the simulator does (services/spacemolt-sim/internal/mcpserver/args.go):
// every tool also accepts the optional session_id.
func schema(params ...param) string {
	props := map[string]any{}
	var required []string
	for _, p := range append(slices.Clone(params), param{name: "session_id", typ: "string",
		desc: "Game session id from login/register. Optional: the login is also bound to your MCP session."}) {
		prop := map[string]any{"type": p.typ, "description": p.desc}
		if len(p.enum) > 0 {
			prop["enum"] = p.enum
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	b, _ := json.Marshal(s) // map keys are sorted: the text is the same on every run
	return string(b)
}

const searchSchema = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"Words to find (web search syntax: \"exact phrase\", OR, -exclude). Identifiers like iron_ore work."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"Maximum results (default 10)."}},` +
	`"required":["query"],"additionalProperties":false}`

// SpaceMoltTools is the tool list sent with every request: the simulator's legacy SpaceMolt tools (names,
// descriptions and parameters as services/spacemolt-sim serves them), the live server's catalog, and the runner's
// three search tools — about 3,000 tokens, within the 2,000–5,000 the issue reports for real requests.
func SpaceMoltTools() []ToolDef {
	item := param{name: "item_id", typ: "string", desc: "Item id, e.g. iron_ore.", required: true}
	qty := param{name: "quantity", typ: "integer", desc: "How many units.", required: true}
	t := func(name, desc string, params ...param) ToolDef {
		return ToolDef{Name: name, Description: desc, Parameters: schema(params...)}
	}
	return []ToolDef{
		t("register", "Create an account. Returns your password (save it), player, ship and a session_id; you are logged in.",
			param{name: "username", typ: "string", desc: "3-24 characters: letters, digits, _ or -.", required: true},
			param{name: "empire", typ: "string", desc: "Your empire.", required: true, enum: []string{"solarian", "voidborn", "crimson", "nebula", "outerrim"}},
			param{name: "registration_code", typ: "string", desc: "Registration code, if the server requires one."}),
		t("login", "Log in with username and password. Returns a session_id; a new login replaces any previous session.",
			param{name: "username", typ: "string", desc: "Account name.", required: true},
			param{name: "password", typ: "string", desc: "The password register returned.", required: true}),
		t("logout", "End the current login."),
		t("get_status", "Your player (credits, location, dock state), ship and modules."),
		t("get_ship", "Your ship: hull, shield, fuel, cargo, speed, modules."),
		t("get_cargo", "Items in your cargo hold and free space."),
		t("get_system", "Your current system: connections (jump targets) and POIs."),
		t("get_poi", "Your current point of interest: resources, base and services."),
		t("get_nearby", "Other ships at your POI."),
		t("get_map", "The galaxy map: every system with its connections. Large; pass system_id for one system.",
			param{name: "system_id", typ: "string", desc: "Only this system."}),
		t("find_route", "Fewest-jumps route from your system to target_system, with estimated fuel.",
			param{name: "target_system", typ: "string", desc: "Destination system id.", required: true}),
		t("travel", "Travel to a POI in your current system. Takes ticks; blocks until arrival.",
			param{name: "target_poi", typ: "string", desc: "POI id from get_system.", required: true}),
		t("jump", "Jump to an adjacent system. Takes several ticks; blocks until arrival.",
			param{name: "target_system", typ: "string", desc: "Adjacent system id from get_system.", required: true}),
		t("dock", "Dock at the base at your POI."),
		t("undock", "Undock from the base."),
		t("mine", "Mine ore at an asteroid belt (one tick)."),
		t("sell", "Sell cargo into the station's buy orders (best price first).", item, qty),
		t("buy", "Buy from the station's sell orders.", item, qty),
		t("view_market", "Station market: best_buy (paid to you), best_sell (asked of you). item_id adds the order book.",
			param{name: "item_id", typ: "string", desc: "Only this item, with its order book."}),
		t("catalog", "Every tradeable item with its type, guide price, volume and description. type narrows the list.",
			param{name: "type", typ: "string", desc: "Item type.", enum: []string{"ore", "component", "consumable"}}),
		t("refuel", "Refuel at the station as far as your credits allow."),
		t("captains_log_add", "Add a captain's log entry (20 kept, newest is index 0, max 30,000 bytes).",
			param{name: "entry", typ: "string", desc: "The entry text.", required: true}),
		t("captains_log_list", "Read a captain's log entry (index 0 = newest).",
			param{name: "index", typ: "integer", desc: "Entry index, default 0."}),
		t("chat", "Send a chat message (max 500 characters).",
			param{name: "channel", typ: "string", desc: "Channel.", required: true, enum: []string{"system", "local", "faction", "private"}},
			param{name: "content", typ: "string", desc: "Message text.", required: true},
			param{name: "target_id", typ: "string", desc: "Recipient player id or username (private only)."}),
		t("get_notifications", "Queued events (chat, trade, system), oldest first. Once per tick.",
			param{name: "limit", typ: "integer", desc: "At most this many (1-100, default 50)."},
			param{name: "clear", typ: "boolean", desc: "Remove returned events from the queue (default true)."}),
		t("help", "How to play; topic narrows it (travel, jump, mining, market, fuel, session, limits, chat, log, notifications).",
			param{name: "topic", typ: "string", desc: "Topic."}),
		{Name: "zoea_search_messages", Parameters: searchSchema,
			Description: "Search everything you have seen and said before (your own messages, orders and tool results), best match first. Use it to recall facts that are no longer in view: prices, routes, ids, past results."},
		{Name: "zoea_search_reasoning", Parameters: searchSchema,
			Description: "Search your own past reasoning, best match first: why you decided something earlier."},
		{Name: "zoea_search_broadcasts", Parameters: searchSchema,
			Description: "Search the commander's broadcasts to the whole swarm, best match first: missions and standing orders."},
	}
}
