package mcpserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

// v2player is one MCP client session on /mcp/v2.
type v2player struct {
	t  testing.TB
	cs *mcp.ClientSession
}

func (s *sim) connectV2(t testing.TB) *v2player {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sim-test-v2", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.urlV2, HTTPClient: s.client}, nil)
	if err != nil {
		t.Fatalf("connect v2: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &v2player{t: t, cs: cs}
}

// call runs tool with action and args and returns the result.
func (p *v2player) call(tool, action string, args map[string]any) *mcp.CallToolResult {
	p.t.Helper()
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	if action != "" {
		a["action"] = action
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		p.t.Fatalf("%s.%s: transport error: %v", tool, action, err)
	}
	return res
}

// ok calls an action that must succeed and returns its structuredContent, checking that the text is its rendering.
func (p *v2player) ok(tool, action string, args map[string]any) map[string]any {
	p.t.Helper()
	res := p.call(tool, action, args)
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		p.t.Fatalf("%s.%s(%v) failed: %s", tool, action, args, text)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		p.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		p.t.Fatalf("%s.%s: structuredContent is not an object: %s", tool, action, raw)
	}
	if v2StateActions[action] {
		// A state read or a mutation: the text is prose, the structuredContent the state (and details).
		if strings.TrimSpace(text) == "" {
			p.t.Fatalf("%s.%s: no prose", tool, action)
		}
		return out
	}
	var fromText any
	if err := yaml.Unmarshal([]byte(text), &fromText); err != nil {
		p.t.Fatalf("%s.%s: text is not YAML: %v\n%s", tool, action, err, text)
	}
	back, _ := json.Marshal(fromText)
	var same map[string]any
	if err := json.Unmarshal(back, &same); err != nil || !reflect.DeepEqual(same, out) {
		p.t.Fatalf("%s.%s: text is not a rendering of structuredContent:\n%s\nstructured: %s", tool, action, text, raw)
	}
	return out
}

// v2StateActions answer the v2 state blob (or a mutation's delta with details) and prose; the others their own
// object, rendered as YAML text.
var v2StateActions = map[string]bool{"get_status": true, "get_state": true, "get_ship": true, "get_cargo": true,
	"travel": true, "jump": true, "dock": true, "undock": true, "mine": true, "sell": true, "buy": true, "refuel": true}

// fail calls an action that must fail with code and returns the structured error.
func (p *v2player) fail(tool, action string, args map[string]any, code string) map[string]any {
	p.t.Helper()
	res := p.call(tool, action, args)
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.HasPrefix(text, "Error: "+code+": ") {
		p.t.Fatalf("%s.%s(%v) = %q (isError %v), want Error: %s", tool, action, args, text, res.IsError, code)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Error["code"] != code || out.Error["message"] == "" {
		p.t.Fatalf("%s.%s: structured error = %s", tool, action, raw)
	}
	return out.Error
}

func TestV2ToolTable(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.connectV2(t)
	var names []string
	for tool, err := range p.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	want := []string{"spacemolt", "spacemolt_auth", "spacemolt_ship", "spacemolt_storage", "spacemolt_market", "spacemolt_faction",
		"spacemolt_faction_commerce", "spacemolt_faction_admin", "spacemolt_social", "spacemolt_catalog", "spacemolt_transfer",
		"spacemolt_intel", "spacemolt_facility", "spacemolt_battle", "spacemolt_salvage", "spacemolt_fleet"}
	slices.Sort(names)
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	if !slices.Equal(names, sorted) {
		t.Fatalf("tools = %v, want the 16 of the docs %v", names, want)
	}
	var table []string
	for _, vt := range mcpserver.V2Tools() {
		table = append(table, vt.Name)
	}
	if !slices.Equal(table, want) {
		t.Fatalf("V2Tools() = %v, want %v", table, want)
	}
	got := map[string][]string{}
	for _, vt := range mcpserver.V2Tools() {
		got[vt.Name] = vt.Actions
	}
	for tool, actions := range map[string][]string{
		"spacemolt": {"get_status", "get_state", "get_ship", "get_cargo", "get_version", "get_system", "get_poi", "get_nearby", "get_map", "find_route", "travel",
			"jump", "dock", "undock", "mine", "sell", "buy", "refuel", "get_notifications", "get_commands", "get_missions",
			"accept_mission", "complete_mission", "get_active_missions", "abandon_mission", "decline_mission", "jettison", "help"},
		"spacemolt_auth": {"register", "login", "logout", "help"},
		"spacemolt_market": {"view_market", "create_buy_order", "create_sell_order", "cancel_order", "modify_order",
			"view_orders", "analyze_market", "estimate_purchase", "help"},
		"spacemolt_ship":     {"list_ships", "help"},
		"spacemolt_storage":  {"jettison", "help"},
		"spacemolt_facility": {"list", "help"},
		"spacemolt_social":   {"chat", "captains_log_add", "captains_log_list", "help"},
		"spacemolt_catalog":  {"catalog"},
		"spacemolt_fleet":    {"help"},
	} {
		if !slices.Equal(got[tool], actions) {
			t.Errorf("%s actions = %v, want %v", tool, got[tool], actions)
		}
	}
}

// TestV2StarterLoopGoSDK plays the starter loop with the official Go SDK client on /mcp/v2.
func TestV2StarterLoopGoSDK(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.connectV2(t)
	reg := p.ok("spacemolt_auth", "register", map[string]any{"username": "v2starter", "empire": "solarian"})
	if reg["password"] == "" || reg["session_id"] == "" {
		t.Fatalf("register = %v", reg)
	}
	// A second client logs in with the password: the first session is replaced, the second plays.
	p = s.connectV2(t)
	p.ok("spacemolt_auth", "login", map[string]any{"username": "v2starter", "password": reg["password"]})
	st := p.ok("spacemolt", "get_status", nil)
	if str(t, st, "location", "poi_id") != "sol_central" || num(t, st, "player", "credits") != 100 {
		t.Fatalf("status = %v", st)
	}
	p.ok("spacemolt", "undock", nil)
	tr := p.ok("spacemolt", "travel", map[string]any{"id": "main_belt"})
	if str(t, tr, "details", "poi_id") != "main_belt" || str(t, tr, "location", "poi_id") != "main_belt" {
		t.Fatalf("travel = %v", tr)
	}
	for range 4 {
		p.ok("spacemolt", "mine", nil)
	}
	cargo := p.ok("spacemolt", "get_cargo", nil)
	if num(t, cargo, "ship", "cargo_used") != 20 || len(cargo["cargo"].([]any)) == 0 {
		t.Fatalf("cargo = %v", cargo)
	}
	p.ok("spacemolt", "travel", map[string]any{"target_poi": "sol_central"}) // the legacy name is an alias
	p.ok("spacemolt", "dock", nil)
	p.ok("spacemolt_market", "view_market", nil)
	earned := 0
	for _, it := range cargo["cargo"].([]any) {
		item := it.(map[string]any)
		sell := p.ok("spacemolt", "sell", map[string]any{"id": item["item_id"], "quantity": item["quantity"]})
		earned += num(t, sell, "details", "total_earned")
	}
	st = p.ok("spacemolt", "get_status", nil)
	if earned == 0 || num(t, st, "player", "credits") != 100+earned {
		t.Fatalf("earned %d, status %v", earned, st)
	}
}

func TestV2UnknownActionListsValidOnes(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.connectV2(t)
	e := p.fail("spacemolt_market", "subscribe_market", nil, game.CodeInvalidPayload)
	if msg := e["message"].(string); !strings.Contains(msg, "Unknown action 'subscribe_market'") || !strings.Contains(msg, "view_market, create_buy_order") {
		t.Fatalf("message = %q", msg)
	}
	e = p.fail("spacemolt", "", nil, game.CodeInvalidPayload)
	if msg := e["message"].(string); !strings.Contains(msg, "Missing 'action'") || !strings.Contains(msg, "get_status") {
		t.Fatalf("message = %q", msg)
	}
	// A known action with a wrong parameter is invalid_payload naming the parameter.
	p.ok("spacemolt_auth", "register", map[string]any{"username": "paramcheck", "empire": "solarian"})
	e = p.fail("spacemolt", "travel", map[string]any{"destination": "main_belt"}, game.CodeInvalidPayload)
	if msg := e["message"].(string); !strings.Contains(msg, "destination") {
		t.Fatalf("message = %q", msg)
	}
}

func TestV2HelpAndGetCommands(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.connectV2(t)
	h := p.ok("spacemolt_market", "help", nil)
	if h["tool"] != "spacemolt_market" || len(h["actions"].([]any)) != 9 {
		t.Fatalf("help = %v", h)
	}
	h = p.ok("spacemolt", "help", map[string]any{"topic": "travel"})
	if !strings.Contains(h["text"].(string), "target_poi") {
		t.Fatalf("help travel = %v", h)
	}
	cmds := p.ok("spacemolt", "get_commands", nil)
	tools := cmds["tools"].([]any)
	if len(tools) != 16 {
		t.Fatalf("get_commands lists %d tools, want 16", len(tools))
	}
	cat := p.ok("spacemolt_catalog", "", map[string]any{"type": "items"})
	if num(t, cat, "total") == 0 {
		t.Fatalf("catalog = %v", cat)
	}
}

// TestV2SessionPoolsAreSeparate: a session id from one endpoint is session_invalid on the other.
func TestV2SessionPoolsAreSeparate(t *testing.T) {
	s := newSim(t, simOptions{})
	v1 := s.register(t, "pooled")
	v2 := s.connectV2(t)
	e := v2.fail("spacemolt", "get_status", map[string]any{"session_id": v1.sid}, game.CodeSessionInvalid)
	if !strings.Contains(e["message"].(string), "separate") {
		t.Fatalf("message = %v", e)
	}
	reg := v2.ok("spacemolt_auth", "login", map[string]any{"username": "pooled", "password": v1.password})
	v1c := s.connect(t)
	v1c.fail("get_status", map[string]any{"session_id": reg["session_id"]}, game.CodeSessionInvalid)
}

// TestV2ErrorsCarryWaits: action_pending, in_transit and rate_limited come with the seconds to wait, in the text and
// in structuredContent.error.
func TestV2ErrorsCarryWaits(t *testing.T) {
	s := newSim(t, simOptions{manual: true, cfg: game.Config{Tick: 10 * time.Second, ReadsPerMinute: 3}})
	p := s.connectV2(t)
	p.ok("spacemolt_auth", "register", map[string]any{"username": "waiter", "empire": "solarian"})
	// undock waits for a tick; a second mutation meanwhile is action_pending.
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- p.call("spacemolt", "undock", nil) }()
	waitPending(t, s.engine)
	p.fail("spacemolt", "mine", nil, game.CodeActionPending)
	s.engine.Tick()
	if r := <-done; r.IsError {
		t.Fatalf("undock: %v", r.Content[0])
	}
	// A far travel: the next mutation is in_transit with the seconds left.
	go func() { done <- p.call("spacemolt", "travel", map[string]any{"id": game.StrippedBelt}) }()
	waitPending(t, s.engine)
	s.engine.Tick()
	e := p.fail("spacemolt", "mine", nil, game.CodeInTransit)
	if e["seconds_remaining"].(float64) <= 0 || e["wait_seconds"] != e["seconds_remaining"] {
		t.Fatalf("in_transit detail = %v", e)
	}
	// Reads are limited to 3 a minute here: the fourth is rate_limited with retry_after.
	for range 3 {
		p.call("spacemolt", "get_status", nil)
	}
	e = p.fail("spacemolt", "get_status", nil, game.CodeRateLimited)
	if e["retry_after"].(float64) <= 0 || e["wait_seconds"] != e["retry_after"] {
		t.Fatalf("rate_limited detail = %v", e)
	}
	for {
		select {
		case r := <-done:
			if r.IsError {
				t.Fatalf("travel: %v", r.Content[0])
			}
			return
		default:
			s.engine.Tick()
		}
	}
}

// v2 accepts a mission by its template id, and has jettison on spacemolt_storage as well as on spacemolt.
func TestV2MissionByTemplateAndStorageJettison(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.connectV2(t)
	p.ok("spacemolt_auth", "register", map[string]any{"username": "v2contract", "empire": "solarian"})
	acc := p.ok("spacemolt", "accept_mission", map[string]any{"template_id": "supply_copper_ore"})
	active := p.ok("spacemolt", "get_active_missions", nil)
	if num(t, active, "total_count") != 1 || active["missions"].([]any)[0].(map[string]any)["mission_id"] != acc["mission_id"] {
		t.Fatalf("accepted %v, active %v", acc, active)
	}
	p.fail("spacemolt_storage", "jettison", map[string]any{"id": "iron_ore", "quantity": 1}, game.CodeItemNotAvailable)
}
