package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

func TestInvalidPayloadLikeTheLiveServer(t *testing.T) {
	s := newSim(t, simOptions{})
	p := s.register(t, "payload")
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"travel", map[string]any{"x": 1}, "Error: invalid_payload: Unknown parameter(s): [x]. Requires 'target_poi' (string)."},
		{"travel", map[string]any{"target": "main_belt", "b": 2}, "Error: invalid_payload: Unknown parameter(s): [b, target]. Requires 'target_poi'"},
		{"travel", map[string]any{}, "Error: invalid_payload: Missing required parameter(s): [target_poi]. Requires 'target_poi' (string). Example: {\"target_poi\": \"<target_poi>\"}"},
		{"sell", map[string]any{"item_id": "iron_ore", "quantity": "lots"}, "Error: invalid_payload: Parameter 'quantity' must be an integer. Requires 'item_id' (string), 'quantity' (integer). Example: {\"item_id\": \"<item_id>\", \"quantity\": 1}"},
		{"sell", map[string]any{"item_id": 5, "quantity": 1}, "Error: invalid_payload: Parameter 'item_id' must be a string."},
		{"get_notifications", map[string]any{"limit": 101}, "Error: invalid_payload: limit must be between 1 and 100."},
		{"chat", map[string]any{"channel": "shout", "content": "x"}, "Error: invalid_payload: Parameter 'channel' must be one of system, local, faction, private."},
		{"register", map[string]any{"username": "zz", "empire": "solarian"}, "Error: invalid_username: username must be"},
		{"register", map[string]any{"username": "zzz", "empire": "martian"}, "Error: invalid_empire: empire must be one of"},
	}
	for _, c := range cases {
		text, isErr := p.call(c.tool, c.args)
		if !isErr || !strings.HasPrefix(text, c.want) {
			t.Errorf("%s(%v) = %q (isError %v), want prefix %q", c.tool, c.args, text, isErr, c.want)
		}
	}
	// Rejected payloads count against the player's score; the two bad registers
	// reached the game without a player of their own.
	if st := s.engine.Stats(); st.Players[0].Errors != int64(len(cases)-2) {
		t.Fatalf("player errors = %d, want %d", st.Players[0].Errors, len(cases)-2)
	}
	// session_id is accepted by every tool, and numeric strings are tolerated.
	p.ok("get_status", map[string]any{"session_id": p.sid})
	// Parameters a tool does not take are ignored, as the live server ignores them everywhere but on movement
	// (recorded real play: the simulator refused 14% of the calls the real server accepted, most for these).
	p.ok("get_status", map[string]any{"verbose": true})
	p.ok("get_system", map[string]any{"system_id": "sol"})
	p.ok("get_poi", map[string]any{"poi_id": "anything"})
	p.ok("get_cargo", map[string]any{"item_id": "iron_ore"})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"mine", map[string]any{"resource_id": "iron_ore"}},
		{"sell", map[string]any{"item_id": "iron_ore", "quantity": 1, "price": 5}},
		{"view_market", map[string]any{"base_id": "x", "category": "ore"}},
	} {
		if text, _ := p.call(c.tool, c.args); strings.Contains(text, "invalid_payload") {
			t.Errorf("%s(%v) = %q: an ignored parameter was refused", c.tool, c.args, text)
		}
	}
	q := s.connect(t)
	if text, isErr := q.call("register", map[string]any{"username": "lenient", "empire": "solarian", "password": "mine"}); isErr {
		t.Errorf("register with a password = %q", text)
	}
	p.ok("captains_log_list", map[string]any{"index": "0"})
}

func TestAccountErrors(t *testing.T) {
	s := newSim(t, simOptions{cfg: game.Config{RegistrationCode: "letmein"}})
	p := s.connect(t)
	p.fail("register", map[string]any{"username": "acct", "empire": "solarian"}, "invalid_registration_code")
	p.fail("register", map[string]any{"username": "acct", "empire": "solarian", "registration_code": "nope"}, "invalid_registration_code")
	r := p.ok("register", map[string]any{"username": "acct", "empire": "nebula", "registration_code": "letmein"})
	if str(t, r, "player", "empire") != "nebula" || len(str(t, r, "password")) != 64 || str(t, r, "session_id") == "" {
		t.Fatalf("register = %v", r)
	}
	p.fail("register", map[string]any{"username": "ACCT", "empire": "solarian", "registration_code": "letmein"}, "username_taken")
	p.fail("login", map[string]any{"username": "acct", "password": "wrong"}, "auth_failed")
	p.fail("login", map[string]any{"username": "ghost", "password": str(t, r, "password")}, "auth_failed")
	l := p.ok("login", map[string]any{"username": "acct", "password": str(t, r, "password")})
	if str(t, l, "player", "username") != "acct" || str(t, l, "session_id") == str(t, r, "session_id") {
		t.Fatalf("login = %v", l)
	}
}

func TestGameRuleErrors(t *testing.T) {
	s := newSim(t, simOptions{cfg: game.Config{MutationsPerMinute: -1, ReadsPerMinute: -1}})
	p := s.register(t, "rules")

	p.fail("dock", nil, "already_docked")
	p.fail("mine", nil, "no_resources") // undocked first (auto_undocked), then nothing to mine at a station
	if st := p.ok("get_status", nil); str(t, st, "player", "docked_at_base") != "" {
		t.Fatalf("still docked after mining while docked: %v", st["player"])
	}
	p.fail("buy", map[string]any{"item_id": "iron_ore", "quantity": 71}, "no_cargo_space")
	p.fail("buy", map[string]any{"item_id": "iron_ore", "quantity": 60}, "no_credits")
	p.fail("buy", map[string]any{"item_id": "unobtainium", "quantity": 1}, "item_not_available")
	p.fail("sell", map[string]any{"item_id": "iron_ore", "quantity": 1}, "item_not_available")
	p.fail("travel", map[string]any{"target_poi": "nowhere"}, "invalid_poi")
	p.fail("jump", map[string]any{"target_system": "nowhere"}, "invalid_system")

	sys := p.ok("get_system", nil)["system"].(map[string]any)
	adjacent := map[string]bool{"sol": true}
	for _, c := range sys["connections"].([]any) {
		adjacent[str(t, c.(map[string]any), "system_id")] = true
	}
	neighbour := str(t, sys["connections"].([]any)[0].(map[string]any), "system_id")
	var far, farPOI string
	for _, raw := range p.ok("get_map", nil)["systems"].([]any) {
		ms := raw.(map[string]any)
		if id := str(t, ms, "system_id"); !adjacent[id] {
			far, farPOI = id, str(t, ms["pois"].([]any)[0].(map[string]any), "id")
			break
		}
	}
	p.fail("jump", map[string]any{"target_system": far}, "not_connected")
	p.fail("travel", map[string]any{"target_poi": farPOI}, "wrong_system")

	p.ok("dock", nil) // mining undocked it above
	p.ok("undock", nil)
	p.fail("undock", nil, "not_docked")
	p.fail("mine", nil, "no_resources")
	p.ok("travel", map[string]any{"target_poi": "kuiper_belt"})
	p.fail("mine", nil, "deposit_too_sparse")
	p.fail("dock", nil, "invalid_poi")
	p.fail("sell", map[string]any{"item_id": "iron_ore", "quantity": 1}, "not_docked")
	p.fail("view_market", nil, "not_docked")

	p.ok("travel", map[string]any{"target_poi": "main_belt"})
	for range 14 {
		p.ok("mine", nil)
	}
	p.fail("mine", nil, "cargo_full")

	p.fail("captains_log_add", map[string]any{"entry": "   "}, "empty_entry")
	p.fail("captains_log_add", map[string]any{"entry": strings.Repeat("x", 30001)}, "invalid_payload")
	p.fail("chat", map[string]any{"channel": "private", "content": "hi", "target_id": "nobody"}, "player_not_found")

	// Burn fuel by jumping back and forth until a jump is refused.
	var text string
	for i := 0; i < 60; i++ {
		target := neighbour
		if i%2 == 1 {
			target = "sol"
		}
		var isErr bool
		if text, isErr = p.call("jump", map[string]any{"target_system": target}); isErr {
			break
		}
	}
	if !strings.HasPrefix(text, "Error: no_fuel: ") {
		t.Fatalf("after burning fuel: %q, want no_fuel", text)
	}
}

func TestRateLimitedWithRetryAfter(t *testing.T) {
	s := newSim(t, simOptions{cfg: game.Config{ReadsPerMinute: 2, MutationsPerMinute: 1, ChatPerMinute: 1}})
	p := s.register(t, "limited")
	p.ok("get_status", nil)
	p.ok("get_cargo", nil)
	text := p.fail("get_ship", nil, "rate_limited")
	if !strings.Contains(text, "retry_after: 30s") {
		t.Fatalf("rate_limited text = %q, want retry_after: 30s", text)
	}
	p.ok("undock", nil)
	p.fail("dock", nil, "rate_limited")
	p.ok("chat", map[string]any{"channel": "system", "content": "one"})
	p.fail("chat", map[string]any{"channel": "system", "content": "two"}, "rate_limited")
}

// Mutations from the same player collide: a second one while the first waits
// for its tick is action_pending; anything while travelling is in_transit,
// even from another MCP session with an explicit session_id.
func TestActionPendingAndInTransitOverMCP(t *testing.T) {
	s := newSim(t, simOptions{manual: true, cfg: game.Config{Tick: 10 * time.Second}})
	p := s.register(t, "pilot")

	done := make(chan string, 1)
	go func() { text, _, _ := p.raw("undock", nil); done <- text }()
	waitPending(t, s.engine)
	p.fail("mine", nil, "action_pending")
	s.engine.Tick()
	if text := <-done; !strings.Contains(text, `"action":"undock"`) {
		t.Fatalf("undock = %s", text)
	}

	go func() { text, _, _ := p.raw("travel", map[string]any{"target_poi": "kuiper_belt"}); done <- text }()
	waitPending(t, s.engine)
	s.engine.Tick() // departs; 4 AU = 4 ticks
	q := s.connect(t)
	text := q.fail("mine", map[string]any{"session_id": p.sid}, "in_transit")
	if !strings.Contains(text, "arrives in 30 seconds") {
		t.Fatalf("in_transit text = %q, want 30 seconds remaining", text)
	}
	st := q.ok("get_status", map[string]any{"session_id": p.sid})
	if st["player"].(map[string]any)["in_transit"] != true || str(t, st, "player", "current_poi") != "sol_central" || num(t, st, "player", "transit", "ticks_remaining") != 3 {
		t.Fatalf("status in transit = %v", st)
	}
	for range 3 {
		s.engine.Tick()
	}
	select {
	case text := <-done:
		if !strings.Contains(text, `"poi_id":"kuiper_belt"`) {
			t.Fatalf("travel = %s", text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("travel did not return at arrival")
	}
}

func waitPending(t *testing.T, e *game.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		queued := e.Queued()
		if e.Pending() > 0 {
			return
		}
		select {
		case <-queued:
		case <-ctx.Done():
			t.Fatal("no action was queued")
		}
	}
}
