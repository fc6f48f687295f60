package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

func TestGameSessionBinding(t *testing.T) {
	s := newSim(t, simOptions{})
	a := s.register(t, "binder")

	// Bound to the MCP session: no session_id needed.
	if st := a.ok("get_status", nil); str(t, st, "player", "username") != "binder" {
		t.Fatalf("bound status = %v", st)
	}
	// Another MCP session that never logged in has no session...
	b := s.connect(t)
	b.fail("get_status", nil, "session_required")
	// ...but may act for the account with an explicit session_id.
	if st := b.ok("get_status", map[string]any{"session_id": a.sid}); str(t, st, "player", "username") != "binder" {
		t.Fatalf("explicit session_id status = %v", st)
	}
	b.ok("undock", map[string]any{"session_id": a.sid})
	if st := a.ok("get_status", nil); st["player"].(map[string]any)["docked_at_base"] != nil {
		t.Fatalf("undock through B not visible through A: %v", st)
	}
	b.fail("get_status", map[string]any{"session_id": "0123456789abcdef"}, "session_invalid")

	// A new login (from a third MCP session) displaces the old one everywhere.
	c := s.connect(t)
	l := c.ok("login", map[string]any{"username": "binder", "password": a.password})
	a.fail("get_status", nil, "session_invalid")
	b.fail("get_status", map[string]any{"session_id": a.sid}, "session_invalid")
	if st := c.ok("get_status", nil); str(t, st, "player", "username") != "binder" {
		t.Fatalf("new login status = %v", st)
	}
	// An explicit session_id wins over the binding.
	d := s.register(t, "other")
	if st := d.ok("get_status", map[string]any{"session_id": str(t, l, "session_id")}); str(t, st, "player", "username") != "binder" {
		t.Fatalf("explicit session_id over binding = %v", st)
	}
	// Logging in again on A re-binds it.
	a.ok("login", map[string]any{"username": "binder", "password": a.password})
	a.ok("get_status", nil)
	c.fail("get_status", nil, "session_invalid")

	// Logout leaves the bound session unauthenticated.
	a.ok("logout", nil)
	a.fail("get_status", nil, "not_authenticated")
}

func TestGameSessionExpiresAfterInactivity(t *testing.T) {
	s := newSim(t, simOptions{manual: true, cfg: game.Config{SessionTTL: 30 * time.Minute}})
	p := s.register(t, "sleeper")
	s.clock.Advance(29 * time.Minute)
	p.ok("get_status", nil) // renews
	s.clock.Advance(29 * time.Minute)
	p.ok("get_status", nil)
	s.clock.Advance(31 * time.Minute)
	text := p.fail("get_status", nil, "session_invalid")
	if !strings.Contains(text, "expired") {
		t.Fatalf("expiry text = %q", text)
	}
	p.ok("login", map[string]any{"username": "sleeper", "password": p.password})
	p.ok("get_status", nil)
}

// An idle MCP transport session is closed; the next request with its id gets
// HTTP 404 with JSON-RPC -32600 "Session not initialized", which go-sdk
// clients see as mcp.ErrSessionMissing. Re-initialising works, and the game
// session survives the transport.
//
// It runs in a testing/synctest bubble over an in-memory network, so the SDK's
// idle timer runs on the bubble's fake clock: nothing waits in real time.
func TestTransportSessionExpiry(t *testing.T) {
	synctest.Test(t, testTransportSessionExpiry)
}

func testTransportSessionExpiry(t *testing.T) {
	unbound := make(chan string, 1)
	s := newSim(t, simOptions{mcpTimeout: time.Second, inMemory: true, onUnbind: func(id string) { unbound <- id }})
	c := mcp.NewClient(&mcp.Implementation{Name: "expiry-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.client, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: liveProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &player{t: t, cs: cs}
	r := p.ok("register", map[string]any{"username": "drifter", "empire": "outerrim"})
	sid, password := str(t, r, "session_id"), str(t, r, "password")
	oldMCP := cs.ID()
	if s.srv.BoundSessions() != 1 {
		t.Fatalf("bound sessions = %d, want 1", s.srv.BoundSessions())
	}

	// The SDK closes the idle session on its own timer and the server forgets the binding (OnUnbind). Blocking here
	// lets the bubble's clock run to the timer; synctest.Wait then lets the SDK finish dropping the session (it does
	// so just after the session reports closed), so the next request cannot race it.
	if id := <-unbound; id != oldMCP {
		t.Fatalf("unbound MCP session %q, want the idle one %q", id, oldMCP)
	}
	synctest.Wait()
	if n := s.srv.BoundSessions(); n != 0 {
		t.Fatalf("bound sessions after the idle session closed = %d, want 0", n)
	}

	// Raw HTTP: what any client sees.
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_status","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", oldMCP)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusNotFound || json.Unmarshal(raw, &rpc) != nil || rpc.Error.Code != -32600 || rpc.Error.Message != "Session not initialized" {
		t.Fatalf("expired session: HTTP %d %s; want 404 with -32600 Session not initialized", resp.StatusCode, raw)
	}

	// go-sdk client: ErrSessionMissing.
	_, _, err = p.raw("get_status", nil)
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("call on expired transport session: %v, want mcp.ErrSessionMissing", err)
	}
	if n := s.srv.BoundSessions(); n != 0 {
		t.Fatalf("binding of the closed MCP session kept: %d", n)
	}

	// Re-initialise: the game session is still valid by explicit id...
	q := s.connect(t)
	if st := q.ok("get_status", map[string]any{"session_id": sid}); str(t, st, "player", "username") != "drifter" {
		t.Fatalf("status with old game session = %v", st)
	}
	// ...but the new MCP session is not bound until login.
	q.fail("get_status", nil, "session_required")
	q.ok("login", map[string]any{"username": "drifter", "password": password})
	q.ok("get_status", nil)
}

func TestSessionlessCallIsRejected(t *testing.T) {
	s := newSim(t, simOptions{})
	body := `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"get_status","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"jsonrpc":"2.0","id":"abc","error":{"code":-32600,"message":"Session not initialized"}}`
	if resp.StatusCode != http.StatusBadRequest || string(raw) != want {
		t.Fatalf("session-less call: HTTP %d %s", resp.StatusCode, raw)
	}
}

// The newest go-sdk clients try the stateless server/discover handshake first;
// the simulator, like the live server, is stateful and they fall back.
func TestLatestClientProtocolFallsBack(t *testing.T) {
	s := newSim(t, simOptions{})
	c := mcp.NewClient(&mcp.Implementation{Name: "latest", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.ID() == "" {
		t.Fatal("no MCP session id after fallback handshake")
	}
	p := &player{t: t, cs: cs}
	p.ok("register", map[string]any{"username": "modern", "empire": "crimson"})
	p.ok("get_status", nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 43 {
		t.Fatalf("tools/list: %d tools, want 43", len(tools.Tools))
	}
}
