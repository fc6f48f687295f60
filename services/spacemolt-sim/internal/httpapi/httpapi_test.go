package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/httpapi"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

// sim is an in-process simulator with /mcp/v2 and /api/v2 over one engine ticking every few milliseconds.
type sim struct {
	engine *game.Engine
	api    *httpapi.API
	url    string
}

func newSim(t *testing.T, cfg game.Config, opts httpapi.Options) *sim {
	t.Helper()
	if cfg.Tick == 0 {
		cfg.Tick = 5 * time.Millisecond
	}
	cfg.MutationsPerMinute, cfg.ReadsPerMinute = max(cfg.MutationsPerMinute, -1), max(cfg.ReadsPerMinute, -1)
	if cfg.MutationsPerMinute == 0 {
		cfg.MutationsPerMinute = -1
	}
	if cfg.ReadsPerMinute == 0 {
		cfg.ReadsPerMinute = -1
	}
	e := game.New(cfg)
	v2 := mcpserver.NewV2(e, mcpserver.Options{})
	api := httpapi.New(e, v2, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp/v2", v2.Handler())
	mux.Handle(httpapi.Prefix, api.Handler())
	mux.Handle(httpapi.Prefix+"/", api.Handler())
	srv := httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx); close(done) }()
	t.Cleanup(func() { v2.Close(); srv.Close(); cancel(); <-done })
	return &sim{engine: e, api: api, url: srv.URL}
}

// client is one HTTP API v2 client: its session id and the envelopes it got.
type client struct {
	t    *testing.T
	base string
	sid  string
	chk  *checker
}

func (s *sim) client(t *testing.T, chk *checker) *client {
	c := &client{t: t, base: s.url + httpapi.Prefix, chk: chk}
	env, status := c.do(http.MethodPost, "/session", "", nil)
	if status != http.StatusOK {
		t.Fatalf("POST /session: %d %v", status, env)
	}
	c.sid = env["session"].(map[string]any)["id"].(string)
	return c
}

// do sends one request and returns the envelope (checked) and the status.
func (c *client) do(method, path, sid string, body any) (map[string]any, int) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if sid != "" {
		req.Header.Set(httpapi.SessionHeader, sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
		c.t.Fatalf("%s %s: content type %q", method, path, ct)
	}
	b, _ := io.ReadAll(resp.Body)
	env, ok := decode(c.t, b).(map[string]any)
	if !ok {
		c.t.Fatalf("%s %s: not an object: %s", method, path, b)
	}
	if c.chk != nil {
		c.chk.envelope(method+" "+path, env)
	}
	return env, resp.StatusCode
}

// ok runs a command that must succeed and returns its structuredContent (checked against the facts).
func (c *client) ok(command string, body any) map[string]any {
	c.t.Helper()
	env, status := c.do(http.MethodPost, "/"+command, c.sid, body)
	if status != http.StatusOK || env["error"] != nil {
		c.t.Fatalf("%s %v: %d %v", command, body, status, env["error"])
	}
	if r, _ := env["result"].(string); strings.TrimSpace(r) == "" {
		c.t.Fatalf("%s: no result text", command)
	}
	sc := env["structuredContent"]
	if c.chk != nil {
		c.chk.result(command, sc)
	}
	m, _ := sc.(map[string]any)
	return m
}

// fail runs a command that must fail with code and status, and returns the error.
func (c *client) fail(command, sid string, body any, status int, code string) map[string]any {
	c.t.Helper()
	env, got := c.do(http.MethodPost, "/"+command, sid, body)
	e, _ := env["error"].(map[string]any)
	if got != status || e == nil || e["code"] != code {
		c.t.Fatalf("%s %v: %d %v, want %d %s", command, body, got, env, status, code)
	}
	return e
}

func num(t *testing.T, m map[string]any, path ...string) int {
	t.Helper()
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: %s is not in an object", path, p)
		}
		v = mm[p]
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v = %v, not a number", path, v)
	}
	i, _ := n.Int64()
	return int(i)
}

func str(t *testing.T, m map[string]any, path ...string) string {
	t.Helper()
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: %s is not in an object", path, p)
		}
		v = mm[p]
	}
	s, _ := v.(string)
	return s
}

// starterLoop plays the whole loop and every other action the simulator serves through call, returning the credits
// before and after. call returns structuredContent.
func starterLoop(t *testing.T, user string, call func(command string, body any) map[string]any) (before, after int) {
	t.Helper()
	reg := call("spacemolt_auth/register", map[string]any{"username": user, "empire": "solarian", "registration_code": "any"})
	call("spacemolt_auth/login", map[string]any{"username": user, "password": reg["password"]})
	st := call("spacemolt/get_status", nil)
	if str(t, st, "location", "poi_id") != "sol_central" || st["location"].(map[string]any)["docked_at"] == nil {
		t.Fatalf("status = %v", st)
	}
	before = num(t, st, "player", "credits")
	call("spacemolt/get_state", nil)
	call("spacemolt/get_ship", nil)
	call("spacemolt/get_cargo", nil)
	if v := call("spacemolt/get_version", nil); str(t, v, "version") == "" {
		t.Fatalf("get_version = %v", v)
	}
	sys := call("spacemolt/get_system", nil)
	call("spacemolt/get_poi", nil)
	call("spacemolt/get_map", nil)
	call("spacemolt_market/view_market", nil)
	call("spacemolt_catalog", map[string]any{"type": "items"})
	call("spacemolt/get_commands", nil)
	if u := call("spacemolt/undock", nil); u["location"].(map[string]any)["docked_at"] != nil {
		t.Fatalf("undock delta = %v", u)
	}
	tr := call("spacemolt/travel", map[string]any{"id": "main_belt"})
	if str(t, tr, "details", "poi_id") != "main_belt" || str(t, tr, "location", "poi_id") != "main_belt" {
		t.Fatalf("travel = %v", tr)
	}
	call("spacemolt/get_nearby", nil)
	for range 3 {
		m := call("spacemolt/mine", nil)
		if m["cargo"] == nil || m["ship"] == nil {
			t.Fatalf("mine delta lacks the changed cargo and ship: %v", m)
		}
	}
	cargo := call("spacemolt/get_cargo", nil)
	call("spacemolt/travel", map[string]any{"target_poi": "sol_central"})
	call("spacemolt/dock", nil)
	for _, it := range cargo["cargo"].([]any) {
		item := it.(map[string]any)
		s := call("spacemolt/sell", map[string]any{"id": item["item_id"], "quantity": item["quantity"]})
		if num(t, s, "details", "quantity_sold") == 0 || s["player"] == nil {
			t.Fatalf("sell = %v", s)
		}
	}
	call("spacemolt/buy", map[string]any{"id": "iron_ore", "quantity": 1})
	call("spacemolt/refuel", nil)
	call("spacemolt_social/chat", map[string]any{"target": "system", "content": "hello"})
	call("spacemolt_social/captains_log_add", map[string]any{"content": "sold the first load"})
	// The log gives back what was written (a reshaping once dropped the entry), and a route names its target.
	if got := str(t, call("spacemolt_social/captains_log_list", nil), "entry", "entry"); got != "sold the first load" {
		t.Fatalf("captains_log_list entry = %q, want the entry just added", got)
	}
	call("spacemolt/get_notifications", nil)
	after = num(t, call("spacemolt/get_status", nil), "player", "credits")
	far := sys["system"].(map[string]any)["connections"].([]any)[0].(map[string]any)["system_id"]
	if route := call("spacemolt/find_route", map[string]any{"id": far}); str(t, route, "target_system") != far || num(t, route, "fuel_available") <= 0 {
		t.Fatalf("find_route = %v", route)
	}
	call("spacemolt/undock", nil)
	call("spacemolt/jump", map[string]any{"id": far})
	call("spacemolt_auth/logout", nil)
	return before, after
}

// TestAPIv2StarterLoop plays every served action over /api/v2 and holds every envelope and result to the facts.
func TestAPIv2StarterLoop(t *testing.T) {
	facts := loadV2Facts(t)
	s := newSim(t, game.Config{}, httpapi.Options{})
	chk := newChecker(facts)
	c := s.client(t, chk)
	before, after := starterLoop(t, "httppilot", c.ok)
	if after <= before {
		t.Fatalf("credits %d → %d, want more", before, after)
	}
	// A second login of the account over HTTP, then the notifications endpoint.
	c2 := s.client(t, chk)
	c2.fail("spacemolt/get_status", c2.sid, nil, http.StatusUnauthorized, httpapi.CodeNotAuthenticated)
	chk.verdict(t, "/api/v2", len(facts.Actions))
}

// TestMCPv2Conformance plays the same actions on /mcp/v2 and holds every structuredContent to the same facts: one
// action table and one shaping serve both.
func TestMCPv2Conformance(t *testing.T) {
	facts := loadV2Facts(t)
	s := newSim(t, game.Config{}, httpapi.Options{})
	chk := newChecker(facts)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "conformance", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp/v2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(command string, body any) map[string]any {
		t.Helper()
		tool, action, _ := strings.Cut(command, "/")
		args := map[string]any{}
		if body != nil {
			for k, v := range body.(map[string]any) {
				args[k] = v
			}
		}
		if action != "" {
			args["action"] = action
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		if res.IsError {
			t.Fatalf("%s %v: %v", command, body, res.Content[0].(*mcp.TextContent).Text)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; strings.TrimSpace(text) == "" {
			t.Fatalf("%s: no text", command)
		}
		b, _ := json.Marshal(res.StructuredContent)
		sc := decode(t, b)
		chk.result(command, sc)
		m, _ := sc.(map[string]any)
		return m
	}
	before, after := starterLoop(t, "mcpv2pilot", call)
	if after <= before {
		t.Fatalf("credits %d → %d, want more", before, after)
	}
	chk.verdict(t, "/mcp/v2", len(facts.Actions))
}

// TestAPIv2Errors: the envelope's error codes and HTTP statuses for the session, routing and body errors, and a
// game refusal with its code.
func TestAPIv2Errors(t *testing.T) {
	facts := loadV2Facts(t)
	s := newSim(t, game.Config{}, httpapi.Options{})
	chk := newChecker(facts)
	c := s.client(t, chk)
	c.fail("spacemolt/get_status", "", nil, http.StatusUnauthorized, httpapi.CodeSessionRequired)
	c.fail("spacemolt/get_status", "no-such-session", nil, http.StatusUnauthorized, httpapi.CodeSessionInvalid)
	c.fail("spacemolt/get_status", c.sid, nil, http.StatusUnauthorized, httpapi.CodeNotAuthenticated)
	c.fail("spacemolt/warp", c.sid, nil, http.StatusNotFound, httpapi.CodeUnknownCommand)
	c.fail("spacemolt", c.sid, nil, http.StatusBadRequest, httpapi.CodeMissingAction)
	env, status := c.do(http.MethodGet, "/spacemolt/get_status", c.sid, nil)
	if status != http.StatusMethodNotAllowed || env["error"].(map[string]any)["code"] != httpapi.CodeMethodNotAllowed {
		t.Fatalf("GET on a command: %d %v", status, env)
	}
	req, _ := http.NewRequest(http.MethodPost, c.base+"/spacemolt/get_status", strings.NewReader("{not json"))
	req.Header.Set(httpapi.SessionHeader, c.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if e := decode(t, b).(map[string]any)["error"].(map[string]any); resp.StatusCode != http.StatusBadRequest || e["code"] != httpapi.CodeInvalidJSON {
		t.Fatalf("bad JSON: %d %s", resp.StatusCode, b)
	}
	c.ok("spacemolt_auth/register", map[string]any{"username": "errpilot", "empire": "solarian"})
	e := c.fail("spacemolt/travel", c.sid, map[string]any{"destination": "main_belt"}, http.StatusBadRequest, httpapi.CodeInvalidParams)
	if !strings.Contains(e["message"].(string), "destination") {
		t.Fatalf("invalid_params message = %v", e)
	}
	c.fail("spacemolt/dock", c.sid, nil, http.StatusBadRequest, game.CodeAlreadyDocked) // a new player starts docked
	c.fail("spacemolt_auth/register", c.sid, map[string]any{"username": "errpilot", "empire": "solarian"}, http.StatusBadRequest, game.CodeUsernameTaken)
	c2 := s.client(t, chk)
	c2.fail("spacemolt_auth/login", c2.sid, map[string]any{"username": "errpilot", "password": "wrong"}, http.StatusBadRequest, game.CodeAuthFailed)
	// help over GET, with a topic.
	env, status = c.do(http.MethodGet, "/spacemolt/help?topic=travel", c.sid, nil)
	if status != http.StatusOK || !strings.Contains(env["result"].(string), "travel") {
		t.Fatalf("GET help: %d %v", status, env)
	}
	chk.verdict(t, "/api/v2 errors", 0)
}

// TestAPIv2SessionsAndNotifications: the envelope carries the notifications queued since the last request (once),
// the session says who is logged in and when it expires, an idle session expires, and session creation counts
// against the per-address auth limit.
func TestAPIv2SessionsAndNotifications(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := newSim(t, game.Config{}, httpapi.Options{SessionTTL: time.Minute, Now: clock})
	chk := newChecker(loadV2Facts(t))
	c := s.client(t, chk)
	env, _ := c.do(http.MethodPost, "/spacemolt_auth/register", c.sid, map[string]any{"username": "noted", "empire": "solarian"})
	notes := env["notifications"].([]any)
	if len(notes) == 0 || notes[0].(map[string]any)["msg_type"] == "" {
		t.Fatalf("register's envelope carries no notification: %v", env)
	}
	sess := env["session"].(map[string]any)
	if sess["player_id"] == "" || sess["expires_at"] != now.Add(time.Minute).Format(time.RFC3339) {
		t.Fatalf("session = %v", sess)
	}
	env, _ = c.do(http.MethodPost, "/spacemolt/get_status", c.sid, nil)
	if n := env["notifications"].([]any); len(n) != 0 {
		t.Fatalf("the notification came twice: %v", n)
	}
	env, status := c.do(http.MethodGet, "/notifications?limit=5", c.sid, nil)
	if status != http.StatusOK || len(env["notifications"].([]any)) != 0 {
		t.Fatalf("GET /notifications: %d %v", status, env)
	}
	advance(59 * time.Second)
	c.ok("spacemolt/get_status", nil) // renews
	advance(59 * time.Second)
	c.ok("spacemolt/get_status", nil)
	advance(61 * time.Second)
	c.fail("spacemolt/get_status", c.sid, nil, http.StatusUnauthorized, httpapi.CodeSessionInvalid)
	if n := s.api.Sessions(); n != 0 {
		t.Fatalf("%d sessions held after the only one expired", n)
	}
	chk.verdict(t, "/api/v2 sessions", 0)
}

// TestAPIv2SessionCreationIsLimited: POST /session shares the per-address limit with logins: beyond it, 429 with
// Retry-After and rate_limited.
func TestAPIv2SessionCreationIsLimited(t *testing.T) {
	e := game.New(game.Config{Tick: time.Hour})
	v2 := mcpserver.NewV2(e, mcpserver.Options{})
	guard := mcpserver.NewGuard(e, mcpserver.GuardOptions{AuthPerMinute: 3}, v2)
	srv := httptest.NewServer(httpapi.New(e, v2, httpapi.Options{Guard: guard}).Handler())
	defer srv.Close()
	for i := range 4 {
		resp, err := http.Post(srv.URL+httpapi.Prefix+"/session", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if i < 3 && resp.StatusCode != http.StatusOK {
			t.Fatalf("session %d: %d %s", i, resp.StatusCode, b)
		}
		if i == 3 && (resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"rate_limited"`)) {
			t.Fatalf("the fourth session: %d %s", resp.StatusCode, b)
		}
	}
}

// TestOpenAPIListsTheServedCommands: GET /api/v2/openapi.json names every served tool/action with an operationId,
// which is how admiral's HTTP v2 connection finds its routes.
func TestOpenAPIListsTheServedCommands(t *testing.T) {
	s := newSim(t, game.Config{}, httpapi.Options{})
	resp, err := http.Get(s.url + httpapi.Prefix + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v2/session", "/api/v2/spacemolt/get_status", "/api/v2/spacemolt/travel", "/api/v2/spacemolt_auth/login", "/api/v2/spacemolt_catalog"} {
		if doc.Paths[p]["post"].OperationID == "" {
			t.Errorf("%s: no POST with an operationId", p)
		}
	}
	if len(doc.Paths) < 40 {
		t.Errorf("%d paths", len(doc.Paths))
	}
}
