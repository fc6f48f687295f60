package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// V2Tool is one of SpaceMolt's 16 action-dispatched MCP v2 tools as the simulator serves it, with the actions it
// implements (docs/SPACEMOLT.md, "MCP v2").
type V2Tool struct {
	Name    string
	Actions []string
}

// V2Tools lists the v2 tools and their actions in the order tools/list gives them. The composer's default policy
// and the runner read these names; TestV2ToolTable pins them.
func V2Tools() []V2Tool {
	var out []V2Tool
	for _, t := range (&Server{engine: game.New(game.Config{})}).v2Tools() {
		vt := V2Tool{Name: t.name}
		for _, a := range t.actions {
			vt.Actions = append(vt.Actions, a.name)
		}
		out = append(out, vt)
	}
	return out
}

// v2Tool is one action-dispatched tool. noAction marks spacemolt_catalog, whose only command takes no action.
type v2Tool struct {
	name     string
	desc     string
	noAction bool
	actions  []v2Action
}

// v2Action is one command of a v2 tool. aliases maps a legacy (v1) parameter name to the v2 name it stands for,
// so a client that still sends target_poi or item_id is understood.
type v2Action struct {
	tool
	aliases map[string]string
}

// actionParam selects the command of a v2 tool.
const actionParam = "action"

// NewV2 builds the /mcp/v2 endpoint over the same engine as New's /mcp: separate MCP sessions and a separate pool
// of game sessions.
func NewV2(engine *game.Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = nopLogger()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{engine: engine, log: opts.Logger, bound: map[string]string{}, onUnbind: opts.OnUnbind, pool: game.PoolV2, render: toResultV2, version: opts.Version}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "spacemolt-sim", Title: "SpaceMolt (offline simulator), MCP v2", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "SpaceMolt, an MMO for AI agents. Every tool takes an action; spacemolt_auth action=login (or register) first. action=help on any tool lists its actions; spacemolt action=get_commands lists them all.",
		Logger:       opts.Logger,
	})
	tools := s.v2Tools()
	for _, t := range tools {
		readOnly := !t.noAction && !slices.ContainsFunc(t.actions, func(a v2Action) bool { return !a.readOnly })
		if t.noAction {
			readOnly = true
		}
		s.mcp.AddTool(&mcp.Tool{
			Name: t.name, Description: t.desc, InputSchema: v2Schema(t),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, OpenWorldHint: new(false)},
		}, s.handleV2(t, tools))
	}
	s.mount(opts)
	return s
}

// v2Schema is a tool's input schema: action (an enum of the implemented actions) and the union of the actions'
// parameters, none required by the schema (which ones an action needs is checked per action, as the real server
// does, and help lists them).
func v2Schema(t v2Tool) *jsonschema.Schema {
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	if !t.noAction {
		act := &jsonschema.Schema{Type: "string", Description: "The command to run; help lists them with their parameters."}
		for _, a := range t.actions {
			act.Enum = append(act.Enum, a.name)
		}
		schema.Properties[actionParam] = act
		schema.PropertyOrder = append(schema.PropertyOrder, actionParam)
		schema.Required = []string{actionParam}
	}
	for _, a := range t.actions {
		for _, p := range a.params {
			if _, seen := schema.Properties[p.name]; seen {
				continue
			}
			prop := &jsonschema.Schema{Type: string(p.typ), Description: p.desc}
			for _, e := range p.enum {
				prop.Enum = append(prop.Enum, e)
			}
			schema.Properties[p.name] = prop
			schema.PropertyOrder = append(schema.PropertyOrder, p.name)
		}
	}
	schema.Properties[sessionParam.name] = &jsonschema.Schema{Type: "string", Description: sessionParam.desc}
	schema.PropertyOrder = append(schema.PropertyOrder, sessionParam.name)
	return schema
}

// handleV2 dispatches a call of t on its action.
func (s *Server) handleV2(t v2Tool, all []v2Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, b, err := resolveV2(t, req.Params.Arguments)
		if err != nil {
			s.engine.CountRejected("")
			return s.render(nil, err)
		}
		return s.invoke(ctx, req, a, b)
	}
}

// resolveV2 picks the action a call of t names (its "action" argument) and returns it with the remaining arguments,
// legacy parameter names turned into the v2 ones.
func resolveV2(t v2Tool, raw json.RawMessage) (tool, json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if b := strings.TrimSpace(string(raw)); b != "" && b != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return tool{}, nil, invalid("Arguments must be a JSON object with an action. Valid actions: " + actionList(t) + ".")
		}
	}
	name := ""
	if t.noAction {
		name = t.actions[0].name
	} else {
		if v, ok := args[actionParam]; ok {
			_ = json.Unmarshal(v, &name)
		}
		delete(args, actionParam)
	}
	i := slices.IndexFunc(t.actions, func(a v2Action) bool { return a.name == name })
	if i < 0 {
		if name == "" {
			return tool{}, nil, invalid("Missing 'action' for " + t.name + ". Valid actions: " + actionList(t) + ".")
		}
		return tool{}, nil, invalid("Unknown action '" + name + "' for " + t.name + ". Valid actions: " + actionList(t) + ".")
	}
	a := t.actions[i]
	for legacy, v2 := range a.aliases {
		if v, ok := args[legacy]; ok {
			if _, has := args[v2]; !has {
				args[v2] = v
			}
			delete(args, legacy)
		}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return tool{}, nil, err
	}
	return a.tool, b, nil
}

func actionList(t v2Tool) string {
	names := make([]string, len(t.actions))
	for i, a := range t.actions {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}

// ActionHelp is one action in a help or get_commands answer.
type ActionHelp struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Mutation    bool   `json:"mutation"`
	Params      string `json:"params"`
}

// ToolHelp answers help on a v2 tool.
type ToolHelp struct {
	Tool        string       `json:"tool"`
	Description string       `json:"description"`
	Actions     []ActionHelp `json:"actions"`
	Text        string       `json:"text,omitempty"`
}

// CommandsResult answers get_commands.
type CommandsResult struct {
	Tools []ToolHelp `json:"tools"`
}

func toolHelp(t v2Tool) ToolHelp {
	h := ToolHelp{Tool: t.name, Description: t.desc}
	for _, a := range t.actions {
		h.Actions = append(h.Actions, ActionHelp{Name: a.name, Description: a.desc, Mutation: !a.readOnly, Params: usage(a.params)})
	}
	return h
}

// v2Tools is the v2 table. Actions run the same engine calls as the legacy tools; parameter names follow the v2
// spec (id, quantity, content, target), with the legacy names accepted as aliases.
func (s *Server) v2Tools() []v2Tool {
	e := s.engine
	idPOI := param{name: "id", typ: tString, desc: "travel: target POI id (get_system lists them). jump/find_route: target system id. buy/sell: item id.", required: true}
	qty := param{name: "quantity", typ: tInteger, desc: "How many units.", required: true}
	act := func(name, desc string, readOnly bool, params []param, run func(ctx context.Context, c call) (any, error)) v2Action {
		return v2Action{tool: tool{name: name, desc: desc, readOnly: readOnly, params: params, run: run}}
	}
	withAliases := func(a v2Action, aliases map[string]string) v2Action { a.aliases = aliases; return a }
	strict := func(a v2Action) v2Action { a.tool.strict = true; return a } // movement: unknown parameters refused
	// shaped makes an action answer the v2 way: a state blob, or a mutation's delta with its result under details.
	shaped := func(shape v2Shape, a v2Action) v2Action { a.tool.run = s.v2Shaped(shape, a.tool.run); return a }
	mutation := func(a v2Action) v2Action { return shaped(shapeMutation, a) }

	var tools []v2Tool
	helpFor := func(name string) v2Action {
		return act("help", "Actions of this tool with their parameters.", true, nil, func(context.Context, call) (any, error) {
			for _, t := range tools {
				if t.name == name {
					h := toolHelp(t)
					if name == "spacemolt" {
						h.Text = e.Help("").Text
					}
					return &h, nil
				}
			}
			return nil, invalid("unknown tool " + name)
		})
	}
	unimplemented := func(name, desc string) v2Tool {
		return v2Tool{name: name, desc: desc + " (The simulator implements only help here.)", actions: []v2Action{helpFor(name)}}
	}
	tools = []v2Tool{
		{name: "spacemolt", desc: "Core gameplay: status, system, travel, jump, dock, undock, mine, buy, sell, refuel, notifications. Mutations take one tick (~10 s); travel and jump block until arrival.", actions: []v2Action{
			shaped(shapeState, act("get_status", "Your player (credits), ship, modules, cargo and location (system, POI, dock state). Instant.", true, nil, nil)),
			shaped(shapeState, act("get_state", "Every state section in one blob: player, ship, modules, cargo, location, queue, skills.", true, nil, nil)),
			shaped(shapeShip, act("get_ship", "Your ship: hull, shield, fuel, cargo, speed, modules.", true, nil, nil)),
			shaped(shapeCargo, act("get_cargo", "Items in your cargo hold and free space.", true, nil, nil)),
			act("get_version", "The server's version and release notes (count, page, id, text narrow the changelog).", true,
				[]param{
					{name: "id", typ: tString, desc: "Exact version to look up."},
					{name: "text", typ: tString, desc: "Search the release notes."},
					{name: "count", typ: tInteger, desc: "Releases per page (1-20, default 5)."},
					{name: "page", typ: tInteger, desc: "Page (default 1)."},
				},
				func(_ context.Context, c call) (any, error) {
					return versionResult(s.version, c.args.int("count", 5), c.args.int("page", 1), c.args.str("text")), nil
				}),
			act("get_system", "Your current system: connections (jump targets) and POIs.", true, nil, func(_ context.Context, c call) (any, error) { return e.System(c.sid) }),
			act("get_poi", "Your current point of interest: resources, base and services.", true, nil, func(_ context.Context, c call) (any, error) { return e.POI(c.sid) }),
			act("get_nearby", "Other ships at your POI.", true, nil, func(_ context.Context, c call) (any, error) { return e.Nearby(c.sid) }),
			act("get_map", "Every system with its connections; system_id for one.", true,
				[]param{{name: "system_id", typ: tString, desc: "Only this system."}},
				func(_ context.Context, c call) (any, error) { return e.Map(c.sid, c.args.str("system_id")) }),
			withAliases(act("find_route", "Fewest-jumps route to system id, with estimated fuel.", true, []param{idPOI},
				func(_ context.Context, c call) (any, error) { return e.Route(c.sid, c.args.str("id")) }),
				map[string]string{"target_system": "id"}),
			mutation(strict(withAliases(act("travel", "Travel to POI id in your system. Blocks until arrival.", false, []param{idPOI},
				func(ctx context.Context, c call) (any, error) { return e.Travel(ctx, c.sid, c.args.str("id")) }),
				map[string]string{"target_poi": "id"}))),
			mutation(strict(withAliases(act("jump", "Jump to adjacent system id. Blocks until arrival.", false, []param{idPOI},
				func(ctx context.Context, c call) (any, error) { return e.Jump(ctx, c.sid, c.args.str("id")) }),
				map[string]string{"target_system": "id"}))),
			mutation(act("dock", "Dock at the base at your POI.", false, nil, func(ctx context.Context, c call) (any, error) { return e.Dock(ctx, c.sid) })),
			mutation(act("undock", "Undock from the base.", false, nil, func(ctx context.Context, c call) (any, error) { return e.Undock(ctx, c.sid) })),
			mutation(act("mine", "Mine ore at an asteroid belt (one tick).", false, nil, func(ctx context.Context, c call) (any, error) { return e.Mine(ctx, c.sid) })),
			mutation(withAliases(act("sell", "Sell cargo item id into the station's buy orders (best price first).", false, []param{idPOI, qty},
				func(ctx context.Context, c call) (any, error) {
					return e.Sell(ctx, c.sid, c.args.str("id"), c.args.int("quantity", 0))
				}), map[string]string{"item_id": "id"})),
			mutation(withAliases(act("buy", "Buy item id from the station's sell orders.", false, []param{idPOI, qty},
				func(ctx context.Context, c call) (any, error) {
					return e.Buy(ctx, c.sid, c.args.str("id"), c.args.int("quantity", 0))
				}), map[string]string{"item_id": "id"})),
			mutation(act("refuel", "Refuel at the station as far as your credits allow.", false, nil, func(ctx context.Context, c call) (any, error) { return e.Refuel(ctx, c.sid) })),
			act("get_notifications", "Queued events (chat, trade, system), oldest first. Once per tick.", true,
				[]param{
					{name: "limit", typ: tInteger, desc: "At most this many (1-100, default 50)."},
					{name: "clear", typ: tBoolean, desc: "Remove returned events from the queue (default true)."},
				},
				func(_ context.Context, c call) (any, error) {
					return e.Notifications(c.sid, c.args.int("limit", 50), c.args.bool("clear", true))
				}),
			act("get_commands", "Every tool with its actions and parameters.", true, nil, func(context.Context, call) (any, error) {
				res := &CommandsResult{}
				for _, t := range tools {
					res.Tools = append(res.Tools, toolHelp(t))
				}
				return res, nil
			}),
			// help is spelled out here (not helpFor) because it also takes the rules' topics.
			act("help", "Actions of this tool; topic explains a rule (travel, jump, mining, market, fuel, session, limits, chat, log, notifications).", true,
				[]param{{name: "topic", typ: tString, desc: "Topic."}},
				func(_ context.Context, c call) (any, error) {
					if topic := c.args.str("topic"); topic != "" {
						return e.Help(topic), nil
					}
					h := toolHelp(tools[0])
					h.Text = e.Help("").Text
					return &h, nil
				}),
		}},
		{name: "spacemolt_auth", desc: "Register, log in and out. The session is bound to your MCP session.", actions: []v2Action{
			{tool: tool{name: "register", binds: true, desc: "Create an account. Returns your password (save it) and a session_id; you are logged in.",
				params: []param{
					{name: "username", typ: tString, desc: "3-24 characters: letters, digits, _ or -.", required: true},
					{name: "empire", typ: tString, desc: "Your empire.", required: true, enum: game.Empires(), enumByGame: true},
					{name: "registration_code", typ: tString, desc: "Registration code, if the server requires one."},
				},
				run: func(_ context.Context, c call) (any, error) {
					return e.RegisterIn(game.PoolV2, c.args.str("username"), c.args.str("empire"), c.args.str("registration_code"))
				}}},
			{tool: tool{name: "login", binds: true, desc: "Log in with username and password; a new login replaces any previous session.",
				params: []param{
					{name: "username", typ: tString, desc: "Account name.", required: true},
					{name: "password", typ: tString, desc: "The password register returned.", required: true},
				},
				run: func(_ context.Context, c call) (any, error) {
					return e.LoginIn(game.PoolV2, c.args.str("username"), c.args.str("password"))
				}}},
			act("logout", "End the current login.", false, nil, func(_ context.Context, c call) (any, error) { return e.Logout(c.sid) }),
			helpFor("spacemolt_auth"),
		}},
		unimplemented("spacemolt_ship", "Ship management, fitting, switching, naming."),
		unimplemented("spacemolt_storage", "Station storage deposits and withdrawals."),
		{name: "spacemolt_market", desc: "Exchange orders and market views.", actions: []v2Action{
			withAliases(act("view_market", "Station market: best_buy (paid to you), best_sell (asked of you). item_id adds the order book.", true,
				[]param{{name: "item_id", typ: tString, desc: "Only this item, with its order book."}},
				func(_ context.Context, c call) (any, error) { return e.Market(c.sid, c.args.str("item_id")) }),
				map[string]string{"id": "item_id"}),
			helpFor("spacemolt_market"),
		}},
		unimplemented("spacemolt_faction", "Faction membership and info."),
		unimplemented("spacemolt_faction_commerce", "Faction treasury, storage, and orders."),
		unimplemented("spacemolt_faction_admin", "Roles, diplomacy, faction administration."),
		{name: "spacemolt_social", desc: "Chat and captain's log.", actions: []v2Action{
			withAliases(act("chat", "Send a chat message (max 500 characters).", false,
				[]param{
					{name: "target", typ: tString, desc: "Channel.", required: true, enum: []string{"system", "local", "faction", "private"}},
					{name: "content", typ: tString, desc: "Message text.", required: true},
					{name: "target_id", typ: tString, desc: "Recipient player id or username (private only)."},
				},
				func(_ context.Context, c call) (any, error) {
					return e.Chat(c.sid, c.args.str("target"), c.args.str("content"), c.args.str("target_id"))
				}), map[string]string{"channel": "target"}),
			withAliases(act("captains_log_add", "Add a captain's log entry (20 kept, newest is index 0).", false,
				[]param{{name: "content", typ: tString, desc: "The entry text.", required: true}},
				func(_ context.Context, c call) (any, error) { return e.LogAdd(c.sid, c.args.str("content")) }),
				map[string]string{"entry": "content"}),
			act("captains_log_list", "Read a captain's log entry (index 0 = newest).", true,
				[]param{{name: "index", typ: tInteger, desc: "Entry index, default 0."}},
				func(_ context.Context, c call) (any, error) { return e.LogList(c.sid, c.args.int("index", 0)) }),
			helpFor("spacemolt_social"),
		}},
		{name: "spacemolt_catalog", noAction: true, desc: "Game catalog lookups; takes no action. type=items lists the tradeable items.", actions: []v2Action{
			act("catalog", "Catalog lookup.", true,
				[]param{{name: "type", typ: tString, desc: "What to list.", enum: []string{"items"}}},
				func(context.Context, call) (any, error) { return e.Catalog(), nil }),
		}},
		unimplemented("spacemolt_transfer", "Player-to-player trades and gifts."),
		unimplemented("spacemolt_intel", "Scanning and faction intelligence."),
		unimplemented("spacemolt_facility", "Production facility management."),
		unimplemented("spacemolt_battle", "Battle engagement, stances, targeting."),
		unimplemented("spacemolt_salvage", "Wrecks, looting, towing, scrapping."),
		unimplemented("spacemolt_fleet", "Fleet formation and passenger boarding."),
	}
	tools = s.v2Extend(tools, helpFor) // v2_more.go
	for i := range tools {
		for j := range tools[i].actions {
			a := &tools[i].actions[j]
			key := tools[i].name + "/" + a.name
			if tools[i].noAction {
				key = tools[i].name
			}
			a.run = s.patchedV2(key, a.run)
		}
	}
	return tools
}
