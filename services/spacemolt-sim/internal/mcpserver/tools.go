package mcpserver

import (
	"context"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// call is one tool invocation after argument validation.
type call struct {
	sid  string // the game session: explicit session_id, else the MCP-bound one
	args args
}

// tool is one legacy flat SpaceMolt tool.
type tool struct {
	name     string
	desc     string
	readOnly bool
	params   []param
	run      func(ctx context.Context, c call) (any, error)
	// binds is set for register/login, whose session_id gets bound to the MCP session.
	binds bool
	// strict refuses parameters the tool does not take (invalid_payload); the others ignore them, as the live
	// server does everywhere but on movement (a mine with a resource_id, a sell with a price were accepted there).
	strict bool
}

func (s *Server) tools() []tool {
	e := s.engine
	itemParam := param{name: "item_id", typ: tString, desc: "Item id, e.g. iron_ore.", required: true}
	qtyParam := param{name: "quantity", typ: tInteger, desc: "How many units.", required: true}
	priceParam := param{name: "price_each", typ: tInteger, desc: "Price per unit in credits.", required: true}
	missionParam := param{name: "mission_id", typ: tString, desc: "Mission id from get_missions or get_active_missions.", required: true}
	return []tool{
		{
			name: "register", binds: true,
			desc: "Create an account. Returns your password (save it), player, ship and a session_id; you are logged in.",
			params: []param{
				{name: "username", typ: tString, desc: "3-24 characters: letters, digits, _ or -.", required: true},
				{name: "empire", typ: tString, desc: "Your empire.", required: true, enum: game.Empires(), enumByGame: true},
				{name: "registration_code", typ: tString, desc: "Registration code, if the server requires one."},
			},
			run: func(_ context.Context, c call) (any, error) {
				return e.Register(c.args.str("username"), c.args.str("empire"), c.args.str("registration_code"))
			},
		},
		{
			name: "login", binds: true,
			desc: "Log in with username and password. Returns a session_id; a new login replaces any previous session.",
			params: []param{
				{name: "username", typ: tString, desc: "Account name.", required: true},
				{name: "password", typ: tString, desc: "The password register returned.", required: true},
			},
			run: func(_ context.Context, c call) (any, error) {
				return e.Login(c.args.str("username"), c.args.str("password"))
			},
		},
		{
			name: "logout", desc: "End the current login.",
			run: func(_ context.Context, c call) (any, error) { return e.Logout(c.sid) },
		},
		{
			name: "get_status", readOnly: true, desc: "Your player (credits, location, dock state), ship and modules.",
			run: func(_ context.Context, c call) (any, error) { return e.Status(c.sid) },
		},
		{
			name: "get_ship", readOnly: true, desc: "Your ship: hull, shield, fuel, cargo, speed, modules.",
			run: func(_ context.Context, c call) (any, error) { return e.Ship(c.sid) },
		},
		{
			name: "get_cargo", readOnly: true, desc: "Items in your cargo hold and free space.",
			run: func(_ context.Context, c call) (any, error) { return e.Cargo(c.sid) },
		},
		{
			name: "get_system", readOnly: true, desc: "Your current system: connections (jump targets) and POIs.",
			run: func(_ context.Context, c call) (any, error) { return e.System(c.sid) },
		},
		{
			name: "get_poi", readOnly: true, desc: "Your current point of interest: resources, base and services.",
			run: func(_ context.Context, c call) (any, error) { return e.POI(c.sid) },
		},
		{
			name: "get_nearby", readOnly: true, desc: "Other ships at your POI.",
			run: func(_ context.Context, c call) (any, error) { return e.Nearby(c.sid) },
		},
		{
			name: "get_map", readOnly: true, desc: "The galaxy map: every system with its connections. Large; pass system_id for one system.",
			params: []param{{name: "system_id", typ: tString, desc: "Only this system."}},
			run:    func(_ context.Context, c call) (any, error) { return e.Map(c.sid, c.args.str("system_id")) },
		},
		{
			name: "find_route", readOnly: true, desc: "Fewest-jumps route from your system to target_system, with estimated fuel.",
			params: []param{{name: "target_system", typ: tString, desc: "Destination system id.", required: true}},
			run:    func(_ context.Context, c call) (any, error) { return e.Route(c.sid, c.args.str("target_system")) },
		},
		{
			name: "travel", strict: true, desc: "Travel to a POI in your current system. Takes ticks; blocks until arrival.",
			params: []param{{name: "target_poi", typ: tString, desc: "POI id from get_system.", required: true}},
			run:    func(ctx context.Context, c call) (any, error) { return e.Travel(ctx, c.sid, c.args.str("target_poi")) },
		},
		{
			name: "jump", strict: true, desc: "Jump to an adjacent system. Takes several ticks; blocks until arrival.",
			params: []param{{name: "target_system", typ: tString, desc: "Adjacent system id from get_system.", required: true}},
			run:    func(ctx context.Context, c call) (any, error) { return e.Jump(ctx, c.sid, c.args.str("target_system")) },
		},
		{
			name: "dock", desc: "Dock at the base at your POI.",
			run: func(ctx context.Context, c call) (any, error) { return e.Dock(ctx, c.sid) },
		},
		{
			name: "undock", desc: "Undock from the base.",
			run: func(ctx context.Context, c call) (any, error) { return e.Undock(ctx, c.sid) },
		},
		{
			name: "mine", desc: "Mine ore at an asteroid belt (one tick).",
			run: func(ctx context.Context, c call) (any, error) { return e.Mine(ctx, c.sid) },
		},
		{
			name: "sell", desc: "Sell cargo into the station's buy orders (best price first).",
			params: []param{itemParam, qtyParam},
			run: func(ctx context.Context, c call) (any, error) {
				return e.Sell(ctx, c.sid, c.args.str("item_id"), c.args.int("quantity", 0))
			},
		},
		{
			name: "buy", desc: "Buy from the station's sell orders.",
			params: []param{itemParam, qtyParam},
			run: func(ctx context.Context, c call) (any, error) {
				return e.Buy(ctx, c.sid, c.args.str("item_id"), c.args.int("quantity", 0))
			},
		},
		{
			name: "view_market", readOnly: true, desc: "Station market: best_buy (paid to you), best_sell (asked of you). item_id adds the order book.",
			params: []param{{name: "item_id", typ: tString, desc: "Only this item, with its order book."}},
			run:    func(_ context.Context, c call) (any, error) { return e.Market(c.sid, c.args.str("item_id")) },
		},
		{
			name: "refuel", desc: "Refuel at the station as far as your credits allow.",
			run: func(ctx context.Context, c call) (any, error) { return e.Refuel(ctx, c.sid) },
		},
		{
			name: "captains_log_add", desc: "Add a captain's log entry (20 kept, newest is index 0, max 30,000 bytes).",
			params: []param{{name: "entry", typ: tString, desc: "The entry text.", required: true}},
			run:    func(_ context.Context, c call) (any, error) { return e.LogAdd(c.sid, c.args.str("entry")) },
		},
		{
			name: "captains_log_list", readOnly: true, desc: "Read a captain's log entry (index 0 = newest).",
			params: []param{{name: "index", typ: tInteger, desc: "Entry index, default 0."}},
			run:    func(_ context.Context, c call) (any, error) { return e.LogList(c.sid, c.args.int("index", 0)) },
		},
		{
			name: "chat", desc: "Send a chat message (max 500 characters).",
			params: []param{
				{name: "channel", typ: tString, desc: "Channel.", required: true, enum: []string{"system", "local", "faction", "private"}},
				{name: "content", typ: tString, desc: "Message text.", required: true},
				{name: "target_id", typ: tString, desc: "Recipient player id or username (private only)."},
			},
			run: func(_ context.Context, c call) (any, error) {
				return e.Chat(c.sid, c.args.str("channel"), c.args.str("content"), c.args.str("target_id"))
			},
		},
		{
			name: "get_notifications", readOnly: true, desc: "Queued events (chat, trade, system), oldest first. Once per tick.",
			params: []param{
				{name: "limit", typ: tInteger, desc: "At most this many (1-100, default 50)."},
				{name: "clear", typ: tBoolean, desc: "Remove returned events from the queue (default true)."},
			},
			run: func(_ context.Context, c call) (any, error) {
				return e.Notifications(c.sid, c.args.int("limit", 50), c.args.bool("clear", true))
			},
		},
		{
			name: "get_missions", readOnly: true, desc: "Missions offered at the station you are docked at: type, objectives, rewards, time limit.",
			run: func(_ context.Context, c call) (any, error) { return e.GetMissions(c.sid) },
		},
		{
			name: "accept_mission", desc: "Accept a mission from the board of the station you are docked at (at most 5 active).",
			params: []param{missionParam},
			run: func(ctx context.Context, c call) (any, error) {
				return e.AcceptMission(ctx, c.sid, c.args.str("mission_id"))
			},
		},
		{
			name: "complete_mission", desc: "Complete a mission and claim its reward: deliveries are handed in docked at the mission's station.",
			params: []param{missionParam},
			run: func(ctx context.Context, c call) (any, error) {
				return e.CompleteMission(ctx, c.sid, c.args.str("mission_id"))
			},
		},
		{
			name: "get_active_missions", readOnly: true, desc: "Your accepted missions with progress and time remaining.",
			run: func(_ context.Context, c call) (any, error) { return e.ActiveMissions(c.sid) },
		},
		{
			name: "abandon_mission", desc: "Abandon an active mission. No penalty; cargo stays in your hold.",
			params: []param{missionParam},
			run:    func(_ context.Context, c call) (any, error) { return e.AbandonMission(c.sid, c.args.str("mission_id")) },
		},
		{
			name: "decline_mission", readOnly: true, desc: "Decline a mission and hear the giver's reply; it stays on the board.",
			params: []param{{name: "template_id", typ: tString, desc: "Mission template id from get_missions.", required: true}},
			run: func(_ context.Context, c call) (any, error) {
				return e.DeclineMission(c.sid, c.args.str("template_id"))
			},
		},
		{
			name: "create_sell_order", desc: "List cargo on the station exchange at your price (1% fee on the listed part; crosses the book at once where it can).",
			params: []param{itemParam, qtyParam, priceParam},
			run: func(ctx context.Context, c call) (any, error) {
				return e.CreateSellOrder(ctx, c.sid, c.args.str("item_id"), c.args.int("quantity", 0), c.args.int("price_each", 0))
			},
		},
		{
			name: "create_buy_order", desc: "Place a buy offer on the station exchange; credits are escrowed (1% fee on the listed part).",
			params: []param{itemParam, qtyParam, priceParam, {name: "deliver_to", typ: tString, desc: "cargo (default)."}},
			run: func(ctx context.Context, c call) (any, error) {
				return e.CreateBuyOrder(ctx, c.sid, c.args.str("item_id"), c.args.int("quantity", 0), c.args.int("price_each", 0))
			},
		},
		{
			name: "cancel_order", desc: "Cancel an order and get its escrow back; order_id 'all' cancels every order at this station.",
			params: []param{{name: "order_id", typ: tString, desc: "Order id from view_orders, or all.", required: true}},
			run: func(ctx context.Context, c call) (any, error) {
				return e.CancelOrder(ctx, c.sid, c.args.str("order_id"))
			},
		},
		{
			name: "modify_order", desc: "Change the price of one of your orders (a buy order's escrow follows).",
			params: []param{
				{name: "order_id", typ: tString, desc: "Order id from view_orders.", required: true},
				{name: "new_price", typ: tInteger, desc: "New price per unit.", required: true},
			},
			run: func(ctx context.Context, c call) (any, error) {
				return e.ModifyOrder(ctx, c.sid, c.args.str("order_id"), c.args.int("new_price", 0))
			},
		},
		{
			name: "view_orders", readOnly: true, desc: "Your orders at a station (station_id, else the one you are at), with fill progress.",
			params: viewOrdersParams,
			run: func(_ context.Context, c call) (any, error) {
				return e.ViewOrders(c.sid, c.args.str("station_id"), c.args.str("order_type"), c.args.str("item_id"), c.args.str("sort_by"), c.args.int("page", 1), c.args.int("page_size", 20))
			},
		},
		{
			name: "estimate_purchase", readOnly: true, desc: "What buying quantity of item_id here would cost, level by level. Read-only.",
			params: []param{itemParam, qtyParam},
			run: func(_ context.Context, c call) (any, error) {
				return e.EstimatePurchase(c.sid, c.args.str("item_id"), c.args.int("quantity", 0))
			},
		},
		{
			name: "analyze_market", readOnly: true, desc: "Trading insights at your station: demand, low prices, better bids at stations you have visited.",
			run: func(_ context.Context, c call) (any, error) { return e.AnalyzeMarket(c.sid) },
		},
		{
			name: "jettison", desc: "Jettison cargo into space.",
			params: []param{itemParam, qtyParam},
			run: func(ctx context.Context, c call) (any, error) {
				return e.Jettison(ctx, c.sid, c.args.str("item_id"), c.args.int("quantity", 0))
			},
		},
		{
			name: "list_ships", readOnly: true, desc: "The ships you own and where they are.",
			run: func(_ context.Context, c call) (any, error) { return e.ListShips(c.sid) },
		},
		{
			name: "facility", readOnly: true, desc: "Station facilities; the simulator answers action=list (the facilities of the station you are docked at; also without an action or with help).",
			params: []param{{name: "action", typ: tString, desc: "list (default)."}},
			run:    func(_ context.Context, c call) (any, error) { return e.Facility(c.sid, c.args.str("action")) },
		},
		{
			name: "catalog", readOnly: true, desc: "Game reference data: type items (the ores) or ships; id, category, search, page, page_size filter.",
			params: catalogParams,
			run:    func(_ context.Context, c call) (any, error) { return e.CatalogFor(catalogQuery(c)) },
		},
		{
			name: "get_version", readOnly: true, desc: "Game version and release notes.",
			params: []param{{name: "count", typ: tInteger, desc: "Releases per page."}, {name: "page", typ: tInteger, desc: "Page."}},
			run:    func(context.Context, call) (any, error) { return e.Version(), nil },
		},
		{
			name: "help", readOnly: true, desc: "How to play; topic narrows it (travel, jump, mining, market, fuel, session, limits, chat, log, notifications).",
			params: []param{{name: "topic", typ: tString, desc: "Topic."}},
			run: func(_ context.Context, c call) (any, error) {
				h := e.Help(c.args.str("topic"))
				for _, t := range s.tools() {
					h.Commands = append(h.Commands, game.HelpCommand{Name: t.name, Description: t.desc, IsMutation: !t.readOnly, RequiresAuth: !t.binds && t.name != "help"})
				}
				return h, nil
			},
		},
	}
}

// viewOrdersParams are view_orders' filters (v1 and v2 share the names).
var viewOrdersParams = []param{
	{name: "station_id", typ: tString, desc: "Base id of the station; default the one you are at."},
	{name: "order_type", typ: tString, desc: "buy or sell.", enum: []string{"buy", "sell"}},
	{name: "item_id", typ: tString, desc: "Only this item."},
	{name: "sort_by", typ: tString, desc: "newest (default), oldest, price_asc, price_desc.", enum: []string{"newest", "oldest", "price_asc", "price_desc"}},
	{name: "page", typ: tInteger, desc: "Page, default 1."},
	{name: "page_size", typ: tInteger, desc: "Per page, default 20, max 50."},
}

// catalogParams are catalog's filters (v1 catalog and v2 spacemolt_catalog).
var catalogParams = []param{
	{name: "type", typ: tString, desc: "ships, skills, recipes or items.", required: true, enum: []string{"ships", "skills", "recipes", "items"}},
	{name: "id", typ: tString, desc: "One entry by id."},
	{name: "category", typ: tString, desc: "Only this category."},
	{name: "search", typ: tString, desc: "Text search over name and description."},
	{name: "page", typ: tInteger, desc: "Page, default 1."},
	{name: "page_size", typ: tInteger, desc: "Per page, default 20, max 50."},
}

func catalogQuery(c call) game.CatalogQuery {
	return game.CatalogQuery{
		Type: c.args.str("type"), ID: c.args.str("id"), Category: c.args.str("category"), Search: c.args.str("search"),
		Page: c.args.int("page", 1), PageSize: c.args.int("page_size", 20),
	}
}
