package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv"
)

type fakeSearch struct {
	mu     sync.Mutex
	ids    []string
	orders []SearchOrder
}

func (f *fakeSearch) SearchMessages(_ context.Context, id, q string, limit int, order SearchOrder) ([]Hit, SearchInfo, error) {
	f.mu.Lock()
	f.ids = append(f.ids, id)
	f.orders = append(f.orders, order)
	f.mu.Unlock()
	info := SearchInfo{Matches: 1}
	if order == OrderRelevance {
		info = SearchInfo{Matches: 4000, Estimated: true, Bounded: true, Note: "every word is common"}
	}
	return []Hit{{MemoryID: 1, Seq: 1, Role: "tool", Tool: "get_status", Snippet: "«" + q + "» of " + id}}, info, nil
}

func (f *fakeSearch) SearchReasoning(ctx context.Context, id, q string, limit int) ([]Hit, SearchInfo, error) {
	return f.SearchMessages(ctx, id, q, limit, "")
}

func (f *fakeSearch) SearchBroadcasts(_ context.Context, q string, limit int) ([]BroadcastHit, error) {
	return []BroadcastHit{{BroadcastID: "b1", Snippet: q}}, nil
}

// Recall knows memory 7 of mysis-a (a result larger than zoea_recall returns) and nothing else.
func (f *fakeSearch) Recall(_ context.Context, id string, memoryID int64) (Recalled, error) {
	f.mu.Lock()
	f.ids = append(f.ids, id)
	f.mu.Unlock()
	if id != "mysis-a" || memoryID != 7 {
		return Recalled{}, errs.NotFoundf("memory %d not found", memoryID)
	}
	return Recalled{MemoryID: 7, Seq: 7, Turn: 2, Role: "tool", Tool: "get_poi", Content: `{"poi":"Sol Belt","resources":["nickel"]}` + strings.Repeat("x", recallMaxBytes)}, nil
}

// zoea_recall returns the calling mysis's own memory by the id a note names, cut at recallMaxBytes with what the
// cut left out; a bad id is an error the model can read.
func TestRecallReturnsTheMysissOwnMemoryByID(t *testing.T) {
	search := &fakeSearch{}
	r := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp"}, newAccounts(t), search)
	a := r.Open(mysis.Mysis{ID: "mysis-a", Name: "a"})
	b := r.Open(mysis.Mysis{ID: "mysis-b", Name: "b"})
	ctx := context.Background()
	res, err := a.Call(ctx, call("1", toolRecall, `{"id":7}`))
	if err != nil || res.IsError {
		t.Fatalf("recall: %+v %v", res, err)
	}
	var got Recalled
	if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
		t.Fatal(err)
	}
	if got.MemoryID != 7 || got.Tool != "get_poi" || !strings.HasPrefix(got.Content, `{"poi":"Sol Belt"`) ||
		len(got.Content) > recallMaxBytes+100 || !strings.Contains(got.Content, "[cut: ") {
		t.Fatalf("recalled %+v (%d bytes)", got.Tool, len(got.Content))
	}
	for _, tc := range []struct {
		who        mysis.ToolSession
		args, want string
	}{
		{b, `{"id":7}`, "not_found"}, // another mysis's memory
		{a, `{"id":8}`, "not_found"},
		{a, `{"id":0}`, "invalid_arguments"},
		{a, `{"id":"7"}`, "invalid_arguments"},
		{a, `{"id":7,"mysis_id":"mysis-b"}`, "invalid_arguments"},
	} {
		res, err := tc.who.Call(ctx, call("2", toolRecall, tc.args))
		if err != nil || !res.IsError || !strings.Contains(res.Content, tc.want) {
			t.Errorf("%s → %+v, %v; want %s", tc.args, res, err, tc.want)
		}
	}
	found := false
	for _, d := range searchTools() {
		found = found || d.Name == toolRecall && d.ReadOnly
	}
	if !found {
		t.Fatal("zoea_recall is not offered (read-only) with the search tools")
	}
}

func call(id, name, args string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: name, Arguments: args}
}

// simRouter starts the real simulator (registration code "letmein") and returns a router to it with its accounts
// and a context that ends with the test (at most a minute).
func simRouter(t *testing.T) (context.Context, *Router, *memAccounts) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	sim := testenv.StartSim(t, "ZOEA_SIM_REGISTRATION_CODE=letmein")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	accounts := newAccounts(t)
	return ctx, NewRouter(Config{Endpoint: sim.MCPURL(), RegistrationCode: "letmein"}, accounts, &fakeSearch{}), accounts
}

// TestSessionAgainstSimulator drives one tool session against the real simulator binary: registration, login,
// credential hiding, session id injection, and transparent recovery from a displaced login. The sessions live as
// long as in production, so no step can expire under a slow machine; TestSessionRecoversFromExpiry covers expiry.
func TestSessionAgainstSimulator(t *testing.T) {
	ctx, r, accounts := simRouter(t)
	s := r.Open(accounts.mysis(t, "Ada Lovelace")).(*Session)
	defer s.Close()

	var seen []string // every text the model would read
	do := func(c chat.ToolCall) mysis.ToolResult {
		t.Helper()
		res, err := s.Call(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		seen = append(seen, res.Content)
		return res
	}

	defs, err := s.Prepare(ctx)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	names := map[string]bool{}
	readOnly := map[string]bool{}
	for _, d := range defs {
		names[d.Name] = true
		readOnly[d.Name] = d.ReadOnly
		if strings.Contains(string(d.Parameters), "session_id") {
			t.Errorf("tool %s exposes session_id to the model: %s", d.Name, d.Parameters)
		}
		if strings.HasPrefix(d.Name, "zoea_search") && strings.Contains(string(d.Parameters), "mysis") {
			t.Errorf("search tool %s has a mysis parameter", d.Name)
		}
	}
	for _, want := range []string{"get_status", "mine", "travel", "login", toolSearchMessages, toolSearchReasoning, toolSearchBroadcasts} {
		if !names[want] {
			t.Errorf("tool list lacks %s", want)
		}
	}
	// Which cut calls may be re-run on resume: the simulator's annotations and the search tools say read-only.
	for name, want := range map[string]bool{"get_status": true, "view_market": true, toolSearchMessages: true,
		"mine": false, "sell": false, "travel": false, "chat": false, "captains_log_add": false, "login": false} {
		if readOnly[name] != want {
			t.Errorf("tool %s: ReadOnly = %v, want %v", name, readOnly[name], want)
		}
	}
	if accounts.creates() != 1 {
		t.Fatalf("accounts created = %d, want 1 (registered on first use)", accounts.creates())
	}
	acct := accounts.stored()[0]
	if acct.Username != "Ada_Lovelace" || len(acct.Password) < 16 || acct.MysisID != s.mysisID {
		t.Errorf("stored account = %+v", Account{Username: acct.Username, MysisID: acct.MysisID})
	}

	st := do(call("1", "get_status", `{}`))
	if st.IsError || st.Credits == nil {
		t.Fatalf("get_status = %+v", st)
	}
	// The commander's view of the game comes from the same result, by the published names.
	if sh := st.Ship; sh == nil || sh.System == "" || sh.POI == "" || sh.MaxHull <= 0 || sh.Hull <= 0 || sh.MaxFuel <= 0 ||
		sh.CargoCapacity <= 0 || sh.Class == "" || sh.CreditsEarned < 0 || sh.At.IsZero() {
		t.Fatalf("get_status ship view = %+v (content %s)", st.Ship, st.Content)
	}
	// The model's own login attempt: the runner logs in with the stored account; the answer holds no password.
	if res := do(call("2", "login", `{"username":"hacker","password":"guess"}`)); res.IsError || strings.Contains(res.Content, "session_id") || s.sessionID == "" {
		t.Errorf("login = %+v", res)
	}
	if res := do(call("3", "register", `{"username":"another","empire":"voidborn"}`)); res.IsError {
		t.Errorf("register = %+v", res)
	}
	// A bogus session id from the model is replaced by the tracked one.
	if res := do(call("4", "get_status", `{"session_id":"forged"}`)); res.IsError {
		t.Errorf("get_status with a forged session id = %+v", res)
	}

	// Another client logs in with the same account: ours is displaced (session_invalid) and silently recovers.
	other, err := r.connect(ctx, r.cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "login", Arguments: map[string]any{"username": acct.Username, "password": acct.Password}}); err != nil || res.IsError {
		t.Fatalf("second login: %v %v", err, textOf(res))
	}
	_ = other.Close()
	if res := do(call("5", "get_status", `{}`)); res.IsError {
		t.Errorf("after displacement: %+v", res)
	}
	if s.relogins != 1 {
		t.Errorf("re-logins after displacement = %d, want 1", s.relogins)
	}

	if s.reconnects != 0 {
		t.Errorf("MCP re-initialisations = %d, want 0 (nothing expired)", s.reconnects)
	}

	// Model mistakes are results, not crashes.
	if res := do(call("8", "travel", `{"target_poi":`)); !res.IsError || !strings.HasPrefix(res.Content, "Error: invalid_arguments:") {
		t.Errorf("malformed JSON = %+v", res)
	}
	if res := do(call("9", "warp_drive", `{}`)); !res.IsError || !strings.HasPrefix(res.Content, "Error: unknown_tool:") {
		t.Errorf("unknown tool = %+v", res)
	}
	if res := do(call("10", "travel", `{"target_poi":"nowhere"}`)); !res.IsError || !strings.HasPrefix(res.Content, "Error: ") {
		t.Errorf("game error = %+v", res)
	}
	if res := do(call("11", "travel", `[1,2]`)); !res.IsError {
		t.Errorf("array arguments = %+v", res)
	}

	// LESSONS 7: the password never reaches the model; nor does the game session id, which would let anyone who
	// reads it drive the player (issue 13 item 7). The runner still tracks it and injects it.
	for i, text := range seen {
		if strings.Contains(text, acct.Password) || strings.Contains(text, `"password"`) {
			t.Errorf("result %d leaks the password: %s", i, text)
		}
		if strings.Contains(text, `"session_id"`) || s.sessionID != "" && strings.Contains(text, s.sessionID) {
			t.Errorf("result %d leaks the game session id: %s", i, text)
		}
	}
}

// Both the MCP transport session and the game session expire while the mysis is idle; its next call still just
// works, after one re-initialisation. The simulator is a separate process whose session clock is real time, so the
// test waits the lifetimes out (the only sleep here, and it is the scenario, not synchronisation); only one call
// precedes the wait, so the short lifetimes cannot expire anything mid-step.
func TestSessionRecoversFromExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	const mcpTTL, gameTTL = time.Second, 2 * time.Second
	sim := testenv.StartSim(t, "ZOEA_SIM_MCP_SESSION_TTL="+mcpTTL.String(), "ZOEA_SIM_SESSION_TTL="+gameTTL.String(), "ZOEA_SIM_REGISTRATION_CODE=letmein")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	accounts := newAccounts(t)
	r := NewRouter(Config{Endpoint: sim.MCPURL(), RegistrationCode: "letmein"}, accounts, &fakeSearch{})
	s := r.Open(accounts.mysis(t, "Grace Hopper")).(*Session)
	defer s.Close()
	if _, err := s.Prepare(ctx); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	do := func(c chat.ToolCall) mysis.ToolResult {
		t.Helper()
		res, err := s.Call(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		return res
	}
	if res := do(call("1", "get_status", `{}`)); res.IsError {
		t.Fatalf("get_status = %+v", res)
	}
	time.Sleep(gameTTL + 200*time.Millisecond)
	if res := do(call("2", "get_cargo", `{}`)); res.IsError {
		t.Errorf("after expiry: %+v", res)
	}
	if res := do(call("3", "get_status", `{}`)); res.IsError {
		t.Errorf("second call after expiry: %+v", res)
	}
	if s.reconnects != 1 {
		t.Errorf("MCP re-initialisations = %d, want 1", s.reconnects)
	}
}

// A mysis whose pool holds a free account claims it instead of registering.
func TestSessionClaimsPoolAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	sim := testenv.StartSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Register an account directly, as an operator would, and put it in the pool unbound.
	setup := NewRouter(Config{Endpoint: sim.MCPURL()}, newAccounts(t), &fakeSearch{})
	cs, err := setup.connect(ctx, setup.cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "register", Arguments: map[string]any{"username": "pooled", "empire": "nebula"}})
	if err != nil || res.IsError {
		t.Fatalf("register: %v %s", err, textOf(res))
	}
	var reg struct{ Password string }
	_ = json.Unmarshal([]byte(textOf(res)), &reg)
	_ = cs.Close()

	accounts := newAccounts(t)
	accounts.pool(t, Account{Username: "pooled", Password: reg.Password, Empire: "nebula"})
	m2 := accounts.mysis(t, "m2")
	s := NewRouter(Config{Endpoint: sim.MCPURL()}, accounts, &fakeSearch{}).Open(m2)
	defer s.Close()
	if _, err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if accounts.creates() != 0 || accounts.stored()[0].MysisID != m2.ID {
		t.Errorf("pool account not claimed: creates=%d binding=%q", accounts.creates(), accounts.stored()[0].MysisID)
	}
	got, err := s.Call(ctx, call("1", "get_status", `{}`))
	if err != nil || got.IsError || !strings.Contains(got.Content, "pooled") {
		t.Errorf("get_status = %+v, %v", got, err)
	}
}

// A stored account the game does not know (the simulator restarted with a fresh world) must not leave the mysis
// errored for ever: the runner registers the same username again and renews the stored password in place, so no
// dead account is left in the pool and no duplicate username is stored.
func TestSessionRenewsAnAccountTheGameForgot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	sim := testenv.StartSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accounts := newAccounts(t)
	m3 := accounts.mysis(t, "m3")
	accounts.pool(t, Account{Username: "ghost_pilot", Password: strings.Repeat("ab", 32), Empire: "solarian", MysisID: m3.ID})
	s := NewRouter(Config{Endpoint: sim.MCPURL()}, accounts, &fakeSearch{}).Open(m3)
	defer s.Close()
	if _, err := s.Prepare(ctx); err != nil {
		t.Fatalf("prepare with a forgotten account: %v", err)
	}
	if accounts.creates() != 1 || len(accounts.stored()) != 1 {
		t.Fatalf("want the one account renewed, got %d stores and %d accounts: %+v", accounts.creates(), len(accounts.stored()), accounts.stored())
	}
	bound, err := accounts.AccountForMysis(ctx, m3.ID)
	if err != nil || bound.Username != "ghost_pilot" || bound.Password == strings.Repeat("ab", 32) {
		t.Fatalf("bound account = %+v, %v; want ghost_pilot with a new password", bound, err)
	}
	got, err := s.Call(ctx, call("1", "get_status", `{}`))
	if err != nil || got.IsError || !strings.Contains(got.Content, "ghost_pilot") {
		t.Errorf("get_status after re-registration = %+v, %v", got, err)
	}
	if strings.Contains(got.Content, bound.Password) {
		t.Error("password leaked into a tool result")
	}
}

// When the game has given the forgotten username to someone else, the runner lets go of the dead account and
// registers a new name.
func TestSessionReplacesAnAccountTheGameRejects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	sim := testenv.StartSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Someone else registers the name the mysis's dead account had.
	setup := NewRouter(Config{Endpoint: sim.MCPURL()}, newAccounts(t), &fakeSearch{})
	cs, err := setup.connect(ctx, setup.cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "register", Arguments: map[string]any{"username": "taken_pilot", "empire": "nebula"}}); err != nil || res.IsError {
		t.Fatalf("register: %v %s", err, textOf(res))
	}
	_ = cs.Close()
	accounts := newAccounts(t)
	m3 := accounts.mysis(t, "m3")
	accounts.pool(t, Account{Username: "taken_pilot", Password: strings.Repeat("ab", 32), Empire: "solarian", MysisID: m3.ID})
	s := NewRouter(Config{Endpoint: sim.MCPURL()}, accounts, &fakeSearch{}).Open(m3)
	defer s.Close()
	if _, err := s.Prepare(ctx); err != nil {
		t.Fatalf("prepare with a rejected account: %v", err)
	}
	if accounts.creates() != 1 {
		t.Fatalf("want one new registration, got %d", accounts.creates())
	}
	if accounts.stored()[0].MysisID != "" {
		t.Errorf("the rejected account is still bound to the mysis")
	}
	bound, err := accounts.AccountForMysis(ctx, m3.ID)
	if err != nil || bound.Username == "taken_pilot" {
		t.Fatalf("bound account = %+v, %v", bound, err)
	}
	got, err := s.Call(ctx, call("1", "get_status", `{}`))
	if err != nil || got.IsError || !strings.Contains(got.Content, bound.Username) {
		t.Errorf("get_status after re-registration = %+v, %v", got, err)
	}
	if strings.Contains(got.Content, bound.Password) {
		t.Error("password leaked into a tool result")
	}
}

// LESSONS 6: a mysis searches only its own memories; any attempt to name another mysis is rejected.
func TestSearchIsScopedToTheCallingMysis(t *testing.T) {
	search := &fakeSearch{}
	r := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp"}, newAccounts(t), search)
	a := r.Open(mysis.Mysis{ID: "mysis-a", Name: "a"})
	ctx := context.Background()

	for _, tc := range []struct {
		args    string
		wantErr string
	}{
		{`{"query":"iron_ore","mysis_id":"mysis-b"}`, "invalid_arguments"},
		{`{"query":"iron_ore","mysis":"b"}`, "invalid_arguments"},
		{`{"query":""}`, "invalid_arguments"},
		{`{"query":"x","limit":0}`, "invalid_arguments"},
		{`{"query":"x","limit":2.5}`, "invalid_arguments"},
		{`not json`, "invalid_arguments"},
	} {
		res, err := a.Call(ctx, call("1", toolSearchMessages, tc.args))
		if err != nil || !res.IsError || !strings.Contains(res.Content, tc.wantErr) {
			t.Errorf("%s → %+v, %v", tc.args, res, err)
		}
	}
	res, err := a.Call(ctx, call("2", toolSearchMessages, `{"query":"iron_ore","limit":5}`))
	if err != nil || res.IsError {
		t.Fatalf("search: %+v %v", res, err)
	}
	if res, _ := a.Call(ctx, call("3", toolSearchReasoning, `{"query":"why"}`)); res.IsError {
		t.Errorf("reasoning search: %+v", res)
	}
	if res, _ := a.Call(ctx, call("4", toolSearchBroadcasts, `{"query":"mission"}`)); res.IsError {
		t.Errorf("broadcast search: %+v", res)
	}
	for _, id := range search.ids {
		if id != "mysis-a" {
			t.Errorf("search ran for mysis %q", id)
		}
	}
	if len(search.ids) != 2 {
		t.Errorf("searches = %d, want 2", len(search.ids))
	}
}

// zoea_search_messages takes an order (relevance by default, or recency) and says when relevance ranked only the
// newest matches; the other search tools have no order.
func TestSearchMessagesOrder(t *testing.T) {
	search := &fakeSearch{}
	r := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp"}, newAccounts(t), search)
	a := r.Open(mysis.Mysis{ID: "mysis-a", Name: "a"})
	ctx := context.Background()

	var schema struct {
		Properties map[string]struct {
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
		} `json:"properties"`
	}
	for _, d := range searchTools() {
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		o, ok := schema.Properties["order"]
		if d.Name != toolSearchMessages {
			if ok {
				t.Errorf("%s offers an order", d.Name)
			}
			continue
		}
		if !ok || strings.Join(o.Enum, ",") != "relevance,recency" || !strings.Contains(o.Description, "newest") {
			t.Errorf("%s order parameter: %+v", d.Name, o)
		}
		if !strings.Contains(d.Description, "tool calls") {
			t.Errorf("%s description does not say tool calls are searchable: %s", d.Name, d.Description)
		}
		schema.Properties = nil
	}

	for _, tc := range []struct {
		tool, args string
		want       SearchOrder
		note       bool
	}{
		{toolSearchMessages, `{"query":"sell"}`, OrderRelevance, true},
		{toolSearchMessages, `{"query":"sell","order":"relevance"}`, OrderRelevance, true},
		{toolSearchMessages, `{"query":"sell","order":"recency"}`, OrderRecency, false},
	} {
		search.orders = nil
		res, err := a.Call(ctx, call("1", tc.tool, tc.args))
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", tc.args, res, err)
		}
		if len(search.orders) != 1 || search.orders[0] != tc.want {
			t.Errorf("%s: searched with %v, want %s", tc.args, search.orders, tc.want)
		}
		var out struct {
			Order   string `json:"order"`
			Note    string `json:"note"`
			Matched any    `json:"matched"` // a count, or "at least N" when estimated
		}
		if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
			t.Fatal(err)
		}
		wantMatched := any(1.0)
		if tc.note {
			wantMatched = "at least 4000"
		}
		if out.Order != string(tc.want) || (out.Note != "") != tc.note || out.Matched != wantMatched {
			t.Errorf("%s: result %s", tc.args, res.Content)
		}
	}
	for _, tc := range []struct{ tool, args string }{
		{toolSearchMessages, `{"query":"sell","order":"newest"}`},
		{toolSearchMessages, `{"query":"sell","order":2}`},
		{toolSearchReasoning, `{"query":"sell","order":"recency"}`},
		{toolSearchBroadcasts, `{"query":"sell","order":"recency"}`},
	} {
		res, err := a.Call(ctx, call("2", tc.tool, tc.args))
		if err != nil || !res.IsError || !strings.Contains(res.Content, "invalid_arguments") {
			t.Errorf("%s %s → %+v, %v", tc.tool, tc.args, res, err)
		}
	}
}

func TestUsernameFor(t *testing.T) {
	for in, want := range map[string]string{
		"Ada Lovelace":                      "Ada_Lovelace",
		"x":                                 "x__",
		"émile/zola!":                       "milezola",
		"a-very-long-mysis-name-indeed-yes": "a-very-long-mysis-name-i",
	} {
		if got := usernameFor(in); got != want {
			t.Errorf("usernameFor(%q) = %q, want %q", in, got, want)
		}
	}
	if got := withSuffix("abcdefghijklmnopqrstuvwx"); len(got) != 24 || !strings.HasPrefix(got, "abcdefghijklmnopqr-") {
		t.Errorf("withSuffix = %q", got)
	}
}

func TestRedactRemovesPasswords(t *testing.T) {
	s := &Session{account: &Account{Password: "s3cr3t-hex"}, sessionID: "a3f9c2e1b7d04f55"}
	for _, in := range []string{
		`{"session_id":"a3f9c2e1b7d04f55","player":{"credits":5}}`,
		`{"message":"logged in","session":{"session_id":"other"}}`,
		`Your session a3f9c2e1b7d04f55 is active`,
		`{"password":"s3cr3t-hex","player":{"credits":5}}`,
		`{"nested":{"password":"zzz"}}`,
		`plain text with s3cr3t-hex inside`,
	} {
		out := s.redact(in)
		if strings.Contains(out, "s3cr3t-hex") || strings.Contains(out, `"password"`) || strings.Contains(out, "zzz") || strings.Contains(out, "a3f9c2e1b7d04f55") || strings.Contains(out, `"session_id"`) {
			t.Errorf("redact(%s) = %s", in, out)
		}
	}
}

// A server that does not annotate its tools (the live SpaceMolt may not): SpaceMolt's documented reads are still
// re-runnable, anything else is not; a server's read-only or idempotent hint is believed.
func TestReadOnlyTools(t *testing.T) {
	for _, tc := range []struct {
		tool *mcp.Tool
		want bool
	}{
		{&mcp.Tool{Name: "get_status"}, true},
		{&mcp.Tool{Name: "find_route"}, true},
		{&mcp.Tool{Name: "sell"}, false},
		{&mcp.Tool{Name: "chat"}, false},
		{&mcp.Tool{Name: "captains_log_add"}, false},
		{&mcp.Tool{Name: "get_notifications"}, false},
		{&mcp.Tool{Name: "scan_planet", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, true},
		{&mcp.Tool{Name: "set_flag", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, true},
		{&mcp.Tool{Name: "warp", Annotations: &mcp.ToolAnnotations{Title: "Warp"}}, false},
	} {
		if got := readOnly(tc.tool); got != tc.want {
			t.Errorf("readOnly(%s) = %v, want %v", tc.tool.Name, got, tc.want)
		}
	}
}

// Router.Tools lists what a session would offer before any mysis ran (a preview on a fresh replica) and afterwards
// returns what the sessions listed; an unreachable game server is an error, not an empty list.
func TestRouterToolsAgainstSimulator(t *testing.T) {
	ctx, r, accounts := simRouter(t)
	before, err := r.Tools(ctx, "")
	if err != nil {
		t.Fatalf("tools before any session: %v", err)
	}
	s := r.Open(accounts.mysis(t, "Grace Hopper")).(*Session)
	defer s.Close()
	defs, err := s.Prepare(ctx)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	after, err := r.Tools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ts []llm.Tool) string {
		var out []string
		for _, d := range ts {
			out = append(out, d.Name)
		}
		return strings.Join(out, ",")
	}
	if names(before) != names(defs) || names(after) != names(defs) || !strings.Contains(names(defs), toolSearchMessages) {
		t.Fatalf("tools before a session %s, a session's %s, after it %s: want the same, search tools included", names(before), names(defs), names(after))
	}
	for i := range defs {
		if string(before[i].Parameters) != string(defs[i].Parameters) || before[i].Description != defs[i].Description {
			t.Errorf("%s: listed alone %s, by the session %s", defs[i].Name, before[i].Parameters, defs[i].Parameters)
		}
	}
	down := NewRouter(Config{Endpoint: "http://127.0.0.1:1/mcp", ConnectTimeout: 2 * time.Second}, accounts, &fakeSearch{})
	if ts, err := down.Tools(ctx, ""); err == nil {
		t.Fatalf("tools from an unreachable game server: %d, no error", len(ts))
	}
}

// TestShipOfV2StateBlob: SpaceMolt v2's get_status is the state blob, whose player has no position: the ship view
// takes it from location and the hold from the top-level cargo.
func TestShipOfV2StateBlob(t *testing.T) {
	blob := `{"player":{"id":"p","credits":120,"stats":{"credits_earned":25}},` +
		`"ship":{"class_id":"theoria","hull":100,"max_hull":100,"shield":55,"max_shield":55,"fuel":98,"max_fuel":100,"cargo_used":5,"cargo_capacity":70},` +
		`"cargo":[{"item_id":"iron_ore","item_name":"Iron Ore","quantity":5,"size":1}],` +
		`"location":{"system_id":"sol","poi_id":"main_belt","docked_at":null,"in_transit":false},"queue":{"has_pending":false}}`
	sh := shipIn(blob, time.Now())
	if sh == nil || sh.System != "sol" || sh.POI != "main_belt" || sh.DockedAt != "" || sh.MaxHull != 100 || sh.CargoUsed != 5 ||
		len(sh.Cargo) != 1 || sh.Cargo[0].ItemID != "iron_ore" || sh.CreditsEarned != 25 {
		t.Fatalf("ship view of the v2 state blob = %+v", sh)
	}
	docked := strings.Replace(blob, `"docked_at":null`, `"docked_at":"confederacy_central_command"`, 1)
	if sh := shipIn(docked, time.Now()); sh == nil || sh.DockedAt != "confederacy_central_command" {
		t.Fatalf("docked ship view = %+v", sh)
	}
	// A mutation delta without the player (a travel's) is partial: no view.
	if sh := shipIn(`{"location":{"system_id":"sol","poi_id":"main_belt"},"ship":{"max_hull":100},"details":{"action":"travel"}}`, time.Now()); sh != nil {
		t.Fatalf("a travel delta gave a ship view: %+v", sh)
	}
}

// shipIn is the ship stateOf reads from a result.
func shipIn(text string, at time.Time) *mysis.Ship {
	_, ship := stateOf(text, at)
	return ship
}
