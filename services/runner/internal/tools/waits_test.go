package tools

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scripted is an MCP v2 server (official go-sdk) whose spacemolt tool answers from a script, to drive the runner
// through each refusal the live game sends; the simulator produces the same refusals (its own tests), but not on
// cue. The sim's real /mcp/v2 is played in TestV2SessionAgainstSimulator.
type scripted struct {
	mu      sync.Mutex
	auth    []*mcp.CallToolResult // answers of spacemolt_auth before the normal login
	answers []*mcp.CallToolResult
	calls   []string // actions called
	down    atomic.Bool
	url     string
}

func errResult(code, msg string, detail map[string]any) *mcp.CallToolResult {
	d := map[string]any{"code": code, "message": msg}
	for k, v := range detail {
		d[k] = v
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: " + code + ": " + msg}},
		StructuredContent: map[string]any{"error": d}}
}

func okResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]any{"ok": true}}
}

func newScripted(t *testing.T) *scripted {
	t.Helper()
	sc := &scripted{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "scripted", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "spacemolt_auth", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			if len(sc.auth) > 0 {
				a := sc.auth[0]
				sc.auth = sc.auth[1:]
				return a, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "session_id: s1"}},
				StructuredContent: map[string]any{"session_id": "s1", "password": "pw"}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "spacemolt", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			sc.calls = append(sc.calls, string(req.Params.Arguments))
			if len(sc.answers) == 0 {
				return okResult("done"), nil
			}
			a := sc.answers[0]
			sc.answers = sc.answers[1:]
			return a, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sc.down.Load() {
			// A cut connection: the client's request fails without an answer.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	sc.url = ts.URL
	return sc
}

func (sc *scripted) script(rs ...*mcp.CallToolResult) {
	sc.mu.Lock()
	sc.answers = append(sc.answers, rs...)
	sc.mu.Unlock()
}

// fakeTime is a clock that only Sleep advances; Sleep records what it was asked to wait.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	slept  []time.Duration
	onWait func(n int) // called (outside the lock) after the nth sleep
}

func (f *fakeTime) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeTime) Sleep(_ context.Context, d time.Duration) error {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.slept = append(f.slept, d)
	n, cb := len(f.slept), f.onWait
	f.mu.Unlock()
	if cb != nil {
		cb(n)
	}
	return nil
}

func scriptedSession(t *testing.T, sc *scripted, ft *fakeTime, maxWait time.Duration) *Session {
	t.Helper()
	accounts := newAccounts(t)
	accounts.pool(t, Account{Username: "scripted", Password: "pw", Empire: "solarian"})
	r := NewRouter(Config{Endpoint: sc.url, ResultView: ViewText, MaxWait: maxWait, UnreachableFor: 10 * time.Second, Sleep: ft.Sleep, Now: ft.Now}, accounts, &fakeSearch{})
	s := r.Open(accounts.mysis(t, "Scripted")).(*Session)
	t.Cleanup(s.Close)
	if _, err := s.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.v2 {
		t.Fatal("the scripted server was not recognised as MCP v2")
	}
	return s
}

// TestShortWaitsAreWaitedOutInsideTheCall: action_pending, in_transit and rate_limited within MaxWait are slept
// through and the call made again; the model sees only the final answer.
func TestShortWaitsAreWaitedOutInsideTheCall(t *testing.T) {
	sc := newScripted(t)
	ft := &fakeTime{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := scriptedSession(t, sc, ft, 30*time.Second)
	sc.script(
		errResult("action_pending", "Your previous action (undock) is still waiting for the next tick.", nil),
		errResult("in_transit", "Your ship is in transit to main_belt and arrives in 7 seconds.", map[string]any{"seconds_remaining": 7, "wait_seconds": 7}),
		errResult("rate_limited", "Too many actions. retry_after: 3s", map[string]any{"retry_after": 3, "wait_seconds": 3}),
		okResult("mined 5 iron_ore"),
	)
	res, err := s.Call(context.Background(), call("c1", "spacemolt", `{"action":"mine"}`))
	if err != nil || res.IsError || res.Content != "mined 5 iron_ore" {
		t.Fatalf("mine = %+v, %v", res, err)
	}
	if want := []time.Duration{10 * time.Second, 7 * time.Second, 3 * time.Second}; !equalDurations(ft.slept, want) {
		t.Fatalf("slept %v, want %v (tick, arrival, retry_after)", ft.slept, want)
	}
	if s.waits != 3 || len(sc.calls) != 4 {
		t.Fatalf("waits %d, calls %d; want 3 and 4", s.waits, len(sc.calls))
	}
}

// TestLongWaitGoesToTheModel: a wait beyond MaxWait is not slept; the model reads the refusal and a note.
func TestLongWaitGoesToTheModel(t *testing.T) {
	sc := newScripted(t)
	ft := &fakeTime{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := scriptedSession(t, sc, ft, 30*time.Second)
	sc.script(errResult("in_transit", "Your ship is in transit to far_away and arrives in 240 seconds.", map[string]any{"seconds_remaining": 240, "wait_seconds": 240}))
	res, err := s.Call(context.Background(), call("c1", "spacemolt", `{"action":"mine"}`))
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content, "Error: in_transit: ") || !strings.Contains(res.Content, "did not wait: 4m0s") {
		t.Fatalf("mine = %+v, %v", res, err)
	}
	if len(ft.slept) != 0 {
		t.Fatalf("slept %v on a long wait", ft.slept)
	}
	// The legacy text form is read too (no structuredContent): "retry_after: 45s".
	sc.script(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: rate_limited: Too many queries (limit 300/min). retry_after: 45s"}}})
	res, _ = s.Call(context.Background(), call("c2", "spacemolt", `{"action":"get_status"}`))
	if !strings.Contains(res.Content, "did not wait: 45s") {
		t.Fatalf("legacy rate_limited = %q", res.Content)
	}
}

// TestTransportFailureRetriedThenUnreachable: a read whose requests are cut is retried with backoff; when the
// server comes back the call succeeds; when it stays down the model reads "the game server is unreachable".
func TestTransportFailureRetriedThenUnreachable(t *testing.T) {
	sc := newScripted(t)
	ft := &fakeTime{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := scriptedSession(t, sc, ft, 30*time.Second)
	sc.down.Store(true)
	ft.onWait = func(n int) {
		if n == 3 {
			sc.down.Store(false) // back after the third backoff
		}
	}
	res, err := s.Call(context.Background(), call("c1", "spacemolt", `{"action":"get_status"}`))
	if err != nil || res.IsError || res.Content != "done" {
		t.Fatalf("get_status across a blip = %+v, %v", res, err)
	}
	if s.retries != 3 || !equalDurations(ft.slept, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}) {
		t.Fatalf("retries %d, slept %v", s.retries, ft.slept)
	}

	ft.onWait, ft.slept = nil, nil
	sc.down.Store(true)
	res, err = s.Call(context.Background(), call("c2", "spacemolt", `{"action":"get_status"}`))
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content, "Error: server_unreachable: the game server is unreachable") {
		t.Fatalf("persistent outage = %+v, %v", res, err)
	}
	var total time.Duration
	for _, d := range ft.slept {
		total += d
	}
	if total < 10*time.Second || total > 16*time.Second {
		t.Fatalf("retried for %s, want about UnreachableFor (10s)", total)
	}
	// A mutation cut mid-call may have run: it is not sent again, and the model is told its outcome is unknown.
	ft.slept = nil
	sc.mu.Lock()
	before := len(sc.calls)
	sc.mu.Unlock()
	res, err = s.Call(context.Background(), call("c3", "spacemolt", `{"action":"mine"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "whether it ran is unknown") || len(ft.slept) != 0 || len(sc.calls) != before {
		t.Fatalf("cut mutation = %+v, %v, slept %v; want the unknown-outcome answer and no retry", res, err, ft.slept)
	}
}

// TestDialFailureRetriesMutations: when nothing listens, even a mutation is retried (it cannot have run).
func TestDialFailureRetriesMutations(t *testing.T) {
	sc := newScripted(t)
	ft := &fakeTime{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := scriptedSession(t, sc, ft, 30*time.Second)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + lis.Addr().String()
	_ = lis.Close()
	s.endpoint = closed
	_ = s.cs.Close()
	s.cs = nil
	res, err := s.Call(context.Background(), call("c1", "spacemolt", `{"action":"mine"}`))
	if err != nil || !strings.HasPrefix(res.Content, "Error: server_unreachable: ") || s.retries < 3 {
		t.Fatalf("mine with nothing listening = %+v, %v (retries %d)", res, err, s.retries)
	}
}

// TestRestartWarningPausesTheNextCall: a result carrying server_restart_warning makes the next call wait until the
// restart has passed, inside the call.
func TestRestartWarningPausesTheNextCall(t *testing.T) {
	sc := newScripted(t)
	ft := &fakeTime{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := scriptedSession(t, sc, ft, 30*time.Second)
	warned := okResult("status")
	warned.Meta = mcp.Meta{"server_restart_warning": map[string]any{"type": "server_restart_warning", "seconds_until_restart": 60}}
	sc.script(warned)
	if res, err := s.Call(context.Background(), call("c1", "spacemolt", `{"action":"get_status"}`)); err != nil || res.Content != "status" {
		t.Fatalf("get_status = %+v, %v", res, err)
	}
	if len(ft.slept) != 0 {
		t.Fatal("the warned call itself waited")
	}
	if _, err := s.Call(context.Background(), call("c2", "spacemolt", `{"action":"mine"}`)); err != nil {
		t.Fatal(err)
	}
	if !equalDurations(ft.slept, []time.Duration{61 * time.Second}) || s.pauses != 1 {
		t.Fatalf("slept %v (pauses %d), want one pause of 61s", ft.slept, s.pauses)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLoginRateLimitedIsWaitedOut: a login refused by the per-address auth limit with a short retry_after is retried
// after the wait instead of failing the mysis.
func TestLoginRateLimitedIsWaitedOut(t *testing.T) {
	sc := newScripted(t)
	sc.auth = []*mcp.CallToolResult{errResult("rate_limited", "Too many session, login and register attempts. retry_after: 12s", map[string]any{"retry_after": 12, "wait_seconds": 12})}
	ft := &fakeTime{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := scriptedSession(t, sc, ft, 30*time.Second)
	if s.sessionID != "s1" || !equalDurations(ft.slept, []time.Duration{12 * time.Second}) {
		t.Fatalf("session %q after sleeping %v; want s1 after 12s", s.sessionID, ft.slept)
	}
}
