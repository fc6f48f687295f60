package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

// guarded is a simulator with both endpoints behind a Guard, on a manual clock.
type guarded struct {
	url, urlV2 string
	engine     *game.Engine
	guard      *mcpserver.Guard
	clock      *clock
}

func newGuarded(t *testing.T, opts mcpserver.GuardOptions) *guarded {
	t.Helper()
	return newGuardedWith(t, opts, func(h http.Handler) http.Handler { return h })
}

// newGuardedWith is newGuarded with mid between the guard and each endpoint's MCP handler.
func newGuardedWith(t *testing.T, opts mcpserver.GuardOptions, mid func(http.Handler) http.Handler) *guarded {
	t.Helper()
	g := &guarded{clock: &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}}
	g.engine = game.New(game.Config{Seed: 1, Tick: 2 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = g.engine.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	v1 := mcpserver.New(g.engine, mcpserver.Options{})
	v2 := mcpserver.NewV2(g.engine, mcpserver.Options{})
	opts.Now = g.clock.Now
	g.guard = mcpserver.NewGuard(g.engine, opts, v1, v2)
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.guard.Wrap(mid(v1.Handler())))
	mux.Handle("/mcp/v2", g.guard.Wrap(mid(v2.Handler())))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	t.Cleanup(v1.Close)
	t.Cleanup(v2.Close)
	g.url, g.urlV2 = ts.URL+"/mcp", ts.URL+"/mcp/v2"
	return g
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// initialize sends one bare initialize and returns the status and Retry-After.
func initialize(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestInitializeFloodIsBounded: many unauthenticated initialize requests hold at most the per-client cap of
// sessions (the rest 429 with Retry-After), goroutines stay bounded, and the idle uninitialised sessions are closed
// after UninitializedTTL, which frees the cap again.
func TestInitializeFloodIsBounded(t *testing.T) {
	g := newGuarded(t, mcpserver.GuardOptions{MaxSessions: 1000, MaxSessionsPerClient: 40, UninitializedTTL: 5 * time.Second, AuthPerMinute: -1})
	before := runtime.NumGoroutine()
	ok, limited := 0, 0
	for i := range 400 {
		url := g.url
		if i%2 == 1 {
			url = g.urlV2 // the cap spans both endpoints
		}
		switch status, retry := initialize(t, url); status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			if n, err := strconv.Atoi(retry); err != nil || n <= 0 {
				t.Fatalf("429 without a Retry-After in seconds: %q", retry)
			}
		default:
			t.Fatalf("initialize: HTTP %d", status)
		}
	}
	if ok != 40 || limited != 360 || g.guard.Sessions() != 40 {
		t.Fatalf("%d accepted, %d refused, %d sessions held; want 40, 360, 40", ok, limited, g.guard.Sessions())
	}
	if grown := runtime.NumGoroutine() - before; grown > 40*4 {
		t.Fatalf("goroutines grew by %d for 40 sessions", grown)
	}
	g.guard.Sweep(g.clock.Now().Add(4 * time.Second))
	if n := g.guard.Sessions(); n != 40 {
		t.Fatalf("before the TTL %d sessions, want 40", n)
	}
	g.guard.Sweep(g.clock.Now().Add(5 * time.Second))
	if n := g.guard.Sessions(); n != 0 {
		t.Fatalf("after the TTL %d uninitialised sessions are still held", n)
	}
	if status, _ := initialize(t, g.url); status != http.StatusOK {
		t.Fatalf("after the sweep initialize = %d", status)
	}
}

// TestSessionCapTotalIs503: the total cap answers 503 with Retry-After; a session that is used survives the sweep.
func TestSessionCapTotalIs503(t *testing.T) {
	g := newGuarded(t, mcpserver.GuardOptions{MaxSessions: 3, MaxSessionsPerClient: 100, UninitializedTTL: 5 * time.Second, AuthPerMinute: -1})
	// A request on the session marks it used; Connect's own follow-ups (the initialized notification, the event
	// stream) may reach the server after the sweep below under load.
	cs := usedSession(t, g.urlV2)
	for range 2 {
		if status, _ := initialize(t, g.url); status != http.StatusOK {
			t.Fatalf("initialize = %d", status)
		}
	}
	status, retry := initialize(t, g.url)
	if status != http.StatusServiceUnavailable || retry == "" {
		t.Fatalf("over the total cap: %d Retry-After %q, want 503 with Retry-After", status, retry)
	}
	g.guard.Sweep(g.clock.Now().Add(time.Minute))
	if n := g.guard.Sessions(); n != 1 {
		t.Fatalf("after the sweep %d sessions, want the used one", n)
	}
	if err := help(cs); err != nil {
		t.Fatalf("the used session was closed: %v", err)
	}
}

// usedSession connects a Go SDK client to url and makes one tool call on its session; the session is closed at
// the test's end.
func usedSession(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "used", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := help(cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// help calls spacemolt's help action on a /mcp/v2 session.
func help(cs *mcp.ClientSession) error {
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "spacemolt", Arguments: map[string]any{"action": "help"}})
	return err
}

// TestSessionUsedBeforeItsInitializeReturnsSurvives: a client may use its session as soon as it has read the
// initialize response, before the server's handler for the initialize has returned (on a loaded machine the
// scheduler can run the client's next requests first). The guard tracks the session from the moment the response
// is written, so those requests mark it used and the sweep does not close it. The middleware holds the initialize
// handler, its response sent, until the test has called a tool and swept.
func TestSessionUsedBeforeItsInitializeReturnsSurvives(t *testing.T) {
	release := make(chan struct{})
	hold := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if r.Header.Get("Mcp-Session-Id") == "" && w.Header().Get("Mcp-Session-Id") != "" {
				w.(http.Flusher).Flush()
				<-release
			}
		})
	}
	g := newGuardedWith(t, mcpserver.GuardOptions{MaxSessions: 3, UninitializedTTL: 5 * time.Second, AuthPerMinute: -1}, hold)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	cs := usedSession(t, g.urlV2)
	if n := g.guard.Sessions(); n != 1 {
		t.Fatalf("%d sessions tracked while the initialize handler has not returned, want 1", n)
	}
	g.guard.Sweep(g.clock.Now().Add(time.Minute))
	if n := g.guard.Sessions(); n != 1 {
		t.Fatalf("after the sweep %d sessions, want the used one", n)
	}
	free()
	if err := help(cs); err != nil {
		t.Fatalf("the used session was closed: %v", err)
	}
}

// TestAuthRateLimitSharedAndEscalating: session creation, login and register share AuthPerMinute per address;
// going over locks the address out for 2 minutes, then 4.
func TestAuthRateLimitSharedAndEscalating(t *testing.T) {
	g := newGuarded(t, mcpserver.GuardOptions{AuthPerMinute: 3})
	c := mcp.NewClient(&mcp.Implementation{Name: "auth", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.urlV2}, nil) // attempt 1
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	reg := func() *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "spacemolt_auth",
			Arguments: map[string]any{"action": "register", "username": "auth" + strconv.Itoa(int(g.clock.Now().Unix()%1000)), "empire": "solarian"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := reg(); r.IsError { // attempt 2
		t.Fatalf("register: %v", r.Content[0])
	}
	if status, _ := initialize(t, g.url); status != http.StatusOK { // attempt 3
		t.Fatalf("third attempt = %d", status)
	}
	status, retry := initialize(t, g.url) // attempt 4: over, locked out for 2 minutes
	if status != http.StatusTooManyRequests || retry != "120" {
		t.Fatalf("fourth attempt: %d Retry-After %q, want 429 and 120", status, retry)
	}
	r := reg()
	text := r.Content[0].(*mcp.TextContent).Text
	if !r.IsError || !strings.HasPrefix(text, "Error: rate_limited: ") || !strings.Contains(text, "retry_after: 120s") {
		t.Fatalf("register while locked out = %q", text)
	}
	g.clock.Advance(2 * time.Minute)
	for range 3 {
		if status, _ := initialize(t, g.url); status != http.StatusOK {
			t.Fatalf("after the lock-out: %d", status)
		}
	}
	if _, retry := initialize(t, g.url); retry != "240" {
		t.Fatalf("second lock-out Retry-After %q, want 240 (escalated)", retry)
	}
}

// TestRestartWarningThenSessionsDropped: after ScheduleRestart every result carries the warning; at the restart the
// MCP and game sessions are gone, the server answers 503 with Retry-After through the downtime, and after it a
// client initialises and logs in again.
func TestRestartWarningThenSessionsDropped(t *testing.T) {
	g := newGuarded(t, mcpserver.GuardOptions{AuthPerMinute: -1})
	c := mcp.NewClient(&mcp.Implementation{Name: "restart", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.urlV2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, error) {
		tool := "spacemolt"
		if args["action"] == "register" || args["action"] == "login" {
			tool = "spacemolt_auth"
		}
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	}
	reg, err := call(cs, map[string]any{"action": "register", "username": "restarter", "empire": "solarian"})
	if err != nil || reg.IsError {
		t.Fatalf("register: %v %v", err, reg)
	}
	sc := reg.StructuredContent.(map[string]any)
	sid, password := sc["session_id"].(string), sc["password"].(string)
	res, _ := call(cs, map[string]any{"action": "get_status"})
	if res.Meta["server_restart_warning"] != nil {
		t.Fatal("a warning before any restart was scheduled")
	}
	g.guard.ScheduleRestart(60*time.Second, 3*time.Second)
	res, _ = call(cs, map[string]any{"action": "get_status"})
	w, _ := res.Meta["server_restart_warning"].(map[string]any)
	if w == nil || w["seconds_until_restart"].(float64) != 60 {
		t.Fatalf("result meta = %v, want server_restart_warning with 60 s", res.Meta)
	}
	g.clock.Advance(60 * time.Second)
	g.guard.Sweep(g.clock.Now())
	if g.guard.Restarts() != 1 {
		t.Fatal("the restart did not happen")
	}
	if status, retry := initialize(t, g.urlV2); status != http.StatusServiceUnavailable || retry != "3" {
		t.Fatalf("during the downtime: %d Retry-After %q, want 503 and 3", status, retry)
	}
	if _, err := call(cs, map[string]any{"action": "get_status"}); err == nil {
		t.Fatal("the old MCP session still answers after the restart")
	}
	g.clock.Advance(3 * time.Second)
	cs2, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.urlV2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res, _ = call(cs2, map[string]any{"action": "get_status", "session_id": sid})
	if !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Error: session_invalid: ") {
		t.Fatalf("old game session after the restart: %v", res.Content[0])
	}
	res, _ = call(cs2, map[string]any{"action": "login", "username": "restarter", "password": password})
	if res.IsError || res.Meta["server_restart_warning"] != nil {
		t.Fatalf("login after the restart: %v meta %v", res.Content[0], res.Meta)
	}
}
