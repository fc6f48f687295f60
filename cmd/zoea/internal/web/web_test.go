package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
)

const testToken = "s3cret-admin-token"

// scripted is a small swarm in memory; the real services drive the browser test in cmd/zoea.
type scripted struct {
	backend.Backend // what these tests do not call: nil
	mu              sync.Mutex
	myses           []*runnerv1.MysisStatus
	calls           []string
	lists           int
	getCount        int
	events          chan *busv1.Event
}

// gets is how many times a mysis was read (Get).
func (s *scripted) gets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getCount
}

func newScripted() *scripted {
	mk := func(name string, state memoryv1.MysisState, turn, credits int64, lastErr string) *runnerv1.MysisStatus {
		return &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-" + name, Name: name, State: state, Provider: "autopilot",
			Model: "autopilot", CurrentTurn: turn}, Credits: credits, LastAction: "mine", LastError: lastErr, Owner: "runner-a"}
	}
	return &scripted{events: make(chan *busv1.Event, 16), myses: []*runnerv1.MysisStatus{
		mk("scout-1", memoryv1.MysisState_MYSIS_STATE_RUNNING, 12, 1250, ""),
		mk("miner-2", memoryv1.MysisState_MYSIS_STATE_IDLE, 3, 80, ""),
		// A model's text that tries to reorder the line (U+202E) and to inject markup.
		mk("trader-3", memoryv1.MysisState_MYSIS_STATE_ERRORED, 7, 10, "bad \u202eevil <script>alert(1)</script>"),
	}}
}

func (s *scripted) record(c string) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *scripted) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *scripted) List(context.Context) ([]*runnerv1.MysisStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return slices.Clone(s.myses), nil
}

func (s *scripted) Get(_ context.Context, ref string) (*runnerv1.MysisStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.getCount++
	for _, st := range s.myses {
		if st.GetMysis().GetName() == ref || st.GetMysis().GetId() == ref {
			return st, nil
		}
	}
	return nil, status.Error(codes.NotFound, "no such mysis")
}

func (s *scripted) Delete(_ context.Context, ref string) error {
	s.record("delete " + ref)
	return nil
}

func (s *scripted) Broadcast(_ context.Context, text string) (int32, error) {
	s.record("broadcast " + text)
	return 3, nil
}

func (s *scripted) History(context.Context, string, int32) ([]*memoryv1.Memory, error) {
	return []*memoryv1.Memory{{Seq: 1, Turn: 1, Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM,
		ToolCalls: []*memoryv1.ToolCall{{Name: "sell", ArgumentsJson: `{"item_id":"titanium_ore"}`}}}}, nil
}

func (s *scripted) Watch(ctx context.Context, connected func(), fn func(*busv1.Event)) error {
	if connected != nil {
		connected()
	}
	for {
		select {
		case e := <-s.events:
			fn(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *scripted) Preview(context.Context, string) (*runnerv1.PreviewContextResponse, error) {
	i := func(n int32) *int32 { return &n }
	return &runnerv1.PreviewContextResponse{
		Messages: []*composerv1.ChatMessage{
			{Role: memoryv1.Role_ROLE_SYSTEM, Content: "You are a SpaceMolt pilot."},
			{Role: memoryv1.Role_ROLE_USER, Content: "Mine ore."},
			{Role: memoryv1.Role_ROLE_USER, Content: "Keep going."},
		},
		Manifest: &composerv1.Manifest{
			Entries: []*composerv1.ManifestEntry{
				{MemoryId: 5, Seq: 5, Disposition: composerv1.Disposition_DISPOSITION_INCLUDED, MessageIndex: i(1), Reason: "current turn", Tokens: 9},
				{MemoryId: 2, Seq: 2, Disposition: composerv1.Disposition_DISPOSITION_DROPPED, Reason: "over budget", Tokens: 40},
			},
			Synthetic:   []*composerv1.SyntheticMessage{{Index: 2, Kind: "nudge", Reason: "no prompt this turn", Tokens: 6}},
			Tokens:      &composerv1.SectionTokens{System: 12, CurrentTurn: 9, Synthetic: 6, Tools: 100, Total: 130},
			TokenBudget: 8000, CompactionBoundarySeq: 3, Tokenizer: "o200k_base",
			Tools: []*composerv1.ToolTokens{{Name: "mine", Tokens: 58}, {Name: "sell", Tokens: 42}},
		},
		Tools: []*composerv1.ToolDefinition{
			{Name: "mine", Description: "Mine the asteroid you are at.\nNeeds a mining laser.", ParametersJson: `{"type":"object","properties":{}}`},
			{Name: "sell", Description: "Sell <cargo> at the station's \u202emarket", ParametersJson: `{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`},
		},
	}, nil
}

// console is a logged-in browser stand-in: a cookie jar, and the CSRF token of the last page.
type console struct {
	t    *testing.T
	srv  *httptest.Server
	c    *http.Client
	csrf string
}

func startConsole(t *testing.T, b backend.Backend) *console {
	t.Helper()
	s := New(b, Options{Token: testToken, CallTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	return &console{t: t, srv: srv, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func (c *console) get(path string) (int, string) {
	c.t.Helper()
	resp, err := c.c.Get(c.srv.URL + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindSubmatch(b); m != nil {
		c.csrf = string(m[1])
	}
	return resp.StatusCode, string(b)
}

// post sends a form as a browser on this origin does.
func (c *console) post(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *console) login(token string) *http.Response {
	c.t.Helper()
	c.get("/login")
	resp, _ := c.post("/login", url.Values{"csrf": {c.csrf}, "token": {token}})
	return resp
}

func TestLoginRefusesAWrongTokenAndKeepsOnlyASessionCookie(t *testing.T) {
	c := startConsole(t, newScripted())
	if code, _ := c.get("/"); code != http.StatusSeeOther {
		t.Fatalf("the swarm page without a session: %d, want a redirect to the login form", code)
	}
	resp := c.login("wrong")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d, want 401", resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			t.Fatal("a wrong token got a session cookie")
		}
	}
	resp = c.login(testToken)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token: %d, want 303", resp.StatusCode)
	}
	var sc *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			sc = ck
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || strings.Contains(sc.Value, testToken) {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, and not the token", sc)
	}
	for _, p := range []string{"/", "/mysis/scout-1", "/mysis/scout-1/anatomy", "/help", "/mysis/scout-1/delete"} {
		code, body := c.get(p)
		if code != http.StatusOK {
			t.Errorf("%s: %d", p, code)
		}
		if strings.Contains(body, testToken) {
			t.Errorf("%s shows the admin token", p)
		}
	}
}

func TestLoginWithoutItsCSRFTokenIsRefused(t *testing.T) {
	c := startConsole(t, newScripted())
	c.get("/login")
	resp, _ := c.post("/login", url.Values{"token": {testToken}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login without the form's CSRF token: %d, want 403", resp.StatusCode)
	}
}

func TestChangesNeedTheCSRFTokenAndThisOrigin(t *testing.T) {
	b := newScripted()
	c := startConsole(t, b)
	c.login(testToken)
	c.get("/")
	resp, body := c.post("/broadcast", url.Values{"text": {"mine"}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF token is missing") {
		t.Fatalf("a broadcast without the CSRF token: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+"/broadcast", strings.NewReader(url.Values{"text": {"mine"}, "csrf": {c.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a broadcast from another origin: %d, want 403", resp.StatusCode)
	}
	if calls := b.called(); len(calls) != 0 {
		t.Fatalf("refused requests reached the swarm: %v", calls)
	}
	resp, _ = c.post("/broadcast", url.Values{"text": {"mine ore"}, "csrf": {c.csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a broadcast with the token: %d", resp.StatusCode)
	}
	if calls := b.called(); !slices.Equal(calls, []string{"broadcast mine ore"}) {
		t.Fatalf("calls %v", calls)
	}
	if _, body := c.get("/"); !strings.Contains(body, "broadcast delivered to 3 myses") {
		t.Fatal("the swarm page does not say where the broadcast went")
	}
	c.post("/broadcast", url.Values{"text": {"  "}, "csrf": {c.csrf}})
	if _, body := c.get("/"); !strings.Contains(body, "nothing broadcast: the text was empty") {
		t.Fatal("an empty broadcast is not refused in words")
	}
}

func TestDeleteAsksFirst(t *testing.T) {
	b := newScripted()
	c := startConsole(t, b)
	c.login(testToken)
	_, body := c.get("/mysis/miner-2/delete")
	if !strings.Contains(body, "Delete mysis miner-2 (idle, turn 3)") {
		t.Fatalf("no question on the delete page:\n%s", body)
	}
	c.post("/mysis/miner-2/delete", url.Values{"csrf": {c.csrf}, "confirm": {"no"}})
	if len(b.called()) != 0 {
		t.Fatalf("deleted without a yes: %v", b.called())
	}
	if _, body := c.get("/mysis/miner-2"); !strings.Contains(body, "not deleted: miner-2 is kept") {
		t.Fatal("no word that the mysis was kept")
	}
	c.post("/mysis/miner-2/delete", url.Values{"csrf": {c.csrf}, "confirm": {"yes"}})
	if !slices.Equal(b.called(), []string{"delete miner-2"}) {
		t.Fatalf("calls %v", b.called())
	}
}

func TestModelTextIsShownEscapedNotApplied(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	for _, p := range []string{"/", "/mysis/trader-3"} {
		_, body := c.get(p)
		if strings.Contains(body, "\u202e") || strings.Contains(body, "<script>alert") {
			t.Errorf("%s applies the model's text", p)
		}
		if !strings.Contains(body, `\u202eevil &lt;script&gt;`) {
			t.Errorf("%s does not show the bidi control and the markup escaped", p)
		}
	}
}

func TestSwarmPageSortsAndFilters(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	order := func(body string) []string {
		var names []string
		for _, m := range regexp.MustCompile(`data-id="id-([a-z0-9-]+)"`).FindAllStringSubmatch(body, -1) {
			names = append(names, m[1])
		}
		return names
	}
	_, body := c.get("/?sort=credits")
	if got := order(body); !slices.Equal(got, []string{"scout-1", "miner-2", "trader-3"}) {
		t.Fatalf("by credits: %v", got)
	}
	_, body = c.get("/?sort=name&q=errored")
	if got := order(body); !slices.Equal(got, []string{"trader-3"}) {
		t.Fatalf("filtered on errored: %v", got)
	}
}

func TestMysisPageShowsToolCallsAndTheFullError(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	_, body := c.get("/mysis/trader-3")
	for _, want := range []string{`<b>sell</b>(<code>{&#34;item_id&#34;:&#34;titanium_ore&#34;}</code>)`, `id="last-error"`} {
		if !strings.Contains(body, want) {
			t.Errorf("mysis page lacks %s", want)
		}
	}
	code, body := c.get("/mysis/scuot-1")
	if code != http.StatusNotFound || !strings.Contains(body, "no mysis named scuot-1 (did you mean scout-1?)") {
		t.Fatalf("an unknown mysis: %d %s", code, body)
	}
}

func TestMysisPageAndSwarmRowShowTheShip(t *testing.T) {
	b := newScripted()
	b.myses[0].Ship = &runnerv1.ShipView{System: "sol", Poi: "main_belt", Class: "starter_miner", Hull: 90, MaxHull: 100,
		Shield: 20, MaxShield: 50, Fuel: 41, MaxFuel: 50, CargoUsed: 12, CargoCapacity: 50, CreditsEarned: 3000,
		Cargo:  []*runnerv1.CargoItem{{ItemId: "ore_iron", Quantity: 10}, {ItemId: "ore_<b>nickel", Quantity: 2}},
		SeenAt: timestamppb.New(time.Date(2026, 12, 2, 17, 30, 0, 0, time.UTC))}
	b.myses[0].Usage = &memoryv1.UsageTotals{CostNanos: 250_000_000}
	b.myses[1].Ship = &runnerv1.ShipView{System: "sol", Poi: "sol_central", DockedAt: "sol_central", MaxHull: 100, CargoCapacity: 50, CreditsEarned: -1}
	c := startConsole(t, b)
	c.login(testToken)
	_, body := c.get("/mysis/scout-1")
	for _, want := range []string{`<dd id="ship-where">main_belt (sol)</dd>`, `starter_miner · hull 90/100 · shield 20/50 · fuel 41/50`,
		`<dd id="ship-cargo">12/50: ore_iron × 10, ore_&lt;b&gt;nickel × 2</dd>`, `3,000 credits in all · 12,000 per $`, `2026-12-02 17:30:00 UTC`} {
		if !strings.Contains(body, want) {
			t.Errorf("scout-1's page lacks %s", want)
		}
	}
	_, body = c.get("/mysis/miner-2")
	if !strings.Contains(body, `docked at sol_central (sol)`) || !strings.Contains(body, `? credits in all · ?`) || !strings.Contains(body, `0/50, empty`) {
		t.Errorf("miner-2's page does not say it is docked with unknown earnings and an empty hold")
	}
	_, body = c.get("/mysis/trader-3")
	if !strings.Contains(body, "not known yet: it shows after the mysis's first get_status") {
		t.Errorf("a mysis the game has not described says nothing of its ship")
	}
	_, body = c.get("/")
	for _, want := range []string{`<td data-col="where">main_belt (sol)</td>`, `<td data-col="cargo" class="num">12/50</td>`,
		`<td data-col="where">docked at sol_central (sol)</td>`, `<td data-col="where">?</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("swarm page lacks %s", want)
		}
	}
}

func TestAnatomyTokensAddUpToTheComposersTotal(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	_, body := c.get("/mysis/scout-1/anatomy")
	sum := 0
	for _, m := range regexp.MustCompile(`data-tokens="(-?\d+)"`).FindAllStringSubmatch(body, -1) {
		n := 0
		for _, d := range m[1] {
			n = n*10 + int(d-'0')
		}
		sum += n
	}
	if sum != 130 || !strings.Contains(body, `data-total="130"`) {
		t.Fatalf("rows sum to %d, want the composer's 130", sum)
	}
	for _, want := range []string{"memory #2, seq 2 (40 tokens): over budget", `id="prefix-end"`, "compaction boundary at seq 3", "nudge: no prompt this turn"} {
		if !strings.Contains(body, want) {
			t.Errorf("anatomy lacks %q", want)
		}
	}
	// The cached prefix ends before the nudge, the one message only this request has.
	if i, j := strings.Index(body, `data-index="1"`), strings.Index(body, `id="prefix-end"`); i < 0 || j < i || j > strings.Index(body, `data-index="2"`) {
		t.Error("the prefix does not end between message 1 and the nudge")
	}
}

// TestAnatomyListsTheToolDefinitions: the tool block is listed tool by tool — name, description, parameters and
// the composer's count of each, which add up to the block's tokens —, escaped, with its bidi controls shown.
func TestAnatomyListsTheToolDefinitions(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	_, body := c.get("/mysis/scout-1/anatomy")
	sum := 0
	var names []string
	for _, m := range regexp.MustCompile(`<li class="tool" data-name="([^"]*)" data-tool-tokens="(\d+)">`).FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
		n, _ := strconv.Atoi(m[2])
		sum += n
	}
	if !slices.Equal(names, []string{"mine", "sell"}) || sum != 100 {
		t.Fatalf("tool definitions listed: %v summing to %d tokens, want mine and sell summing to the block's 100", names, sum)
	}
	for _, want := range []string{"2 definitions, listed below", "<b class=\"tool-name\">mine</b> <span class=\"tool-tokens\">58 tokens</span>",
		"Mine the asteroid you are at.\nNeeds a mining laser.", "Sell &lt;cargo&gt; at the station&#39;s", `&#34;required&#34;: [`} {
		if !strings.Contains(body, want) {
			t.Errorf("anatomy lacks %q", want)
		}
	}
	if strings.Contains(body, "\u202e") || strings.Contains(body, "<cargo>") {
		t.Error("a description's bidi control or markup reached the page as is")
	}
}

// A mysis page's stream carries that mysis's events and its row (read once when the page opened, then kept).
func TestEventsReachAnOpenPage(t *testing.T) {
	b := newScripted()
	c := startConsole(t, b)
	c.login(testToken)
	resp, err := c.c.Get(c.srv.URL + "/events?mysis=id-miner-2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "retry:") {
		t.Fatalf("first line %q", l)
	}
	b.events <- &busv1.Event{MysisId: "id-miner-2", Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: "travel"}}}
	seen := map[string]bool{}
	for !seen["event"] || !seen["row"] {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		if kind, ok := strings.CutPrefix(strings.TrimSpace(l), "event: "); ok {
			data, _ := r.ReadString('\n')
			if kind == "live" {
				continue // the bus stream's state, for every page (the hub's watch may start after the page opened)
			}
			if !strings.Contains(data, `"id":"id-miner-2"`) {
				t.Fatalf("%s for another mysis: %s", kind, data)
			}
			seen[kind] = true
		}
	}
}

func TestASessionIsValidOnEveryReplicaAndOnlyWithItsToken(t *testing.T) {
	b := newScripted()
	c := startConsole(t, b)
	c.login(testToken)
	u, _ := url.Parse(c.srv.URL)
	cookies := c.c.Jar.Cookies(u)
	get := func(s *Server) int {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = u.Host // httptest's example.com is not a name these consoles answer to
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w.Code
	}
	if code := get(New(b, Options{Token: testToken})); code != http.StatusOK {
		t.Fatalf("another replica with the same token: %d, want the page", code)
	}
	if code := get(New(b, Options{Token: "a-new-token"})); code != http.StatusSeeOther {
		t.Fatalf("a console with another token: %d, want the login form", code)
	}
	later := New(b, Options{Token: testToken, Now: func() time.Time { return time.Now().Add(13 * time.Hour) }})
	if code := get(later); code != http.StatusSeeOther {
		t.Fatalf("13 hours later: %d, want the login form", code)
	}
	for i, ck := range cookies {
		if ck.Name == sessionCookie {
			forged := *ck
			last := "A"
			if strings.HasSuffix(ck.Value, "A") {
				last = "B"
			}
			forged.Value = ck.Value[:len(ck.Value)-1] + last
			cookies[i] = &forged
		}
	}
	if code := get(New(b, Options{Token: testToken})); code != http.StatusSeeOther {
		t.Fatalf("a forged signature: %d, want the login form", code)
	}
}

func (s *scripted) listed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// While the event stream is live, the swarm page is drawn from the list the events keep current; a mysis the list
// does not know, or an action of the commander, makes the next page read the whole list again.
func TestSwarmPageReadsTheWholeSwarmOnlyWhenItMustHave(t *testing.T) {
	b := newScripted()
	c := startConsole(t, b)
	c.login(testToken)
	c.get("/")
	c.get("/?sort=credits")
	if n := b.listed(); n != 1 {
		t.Fatalf("two loads read the whole swarm %d times, want once", n)
	}
	// A mysis created elsewhere: its first event makes the console read it (once) and show it as new; the kept
	// list stays whole, so the next load still reads no list.
	b.mu.Lock()
	b.myses = append(b.myses, &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-elsewhere", Name: "elsewhere", State: memoryv1.MysisState_MYSIS_STATE_IDLE}})
	b.mu.Unlock()
	resp, err := c.c.Get(c.srv.URL + "/events?swarm=1") // an open swarm page
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	b.events <- &busv1.Event{MysisId: "id-elsewhere", Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: "mine"}}}
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l, "event: new") {
			break
		}
	}
	_, body := c.get("/")
	if n := b.listed(); n != 1 || !strings.Contains(body, "elsewhere") {
		t.Fatalf("after a mysis created elsewhere was shown the page read the swarm %d times in all (want 1) and shows it: %v", n, strings.Contains(body, "elsewhere"))
	}
	c.post("/broadcast", url.Values{"text": {"mine"}, "csrf": {c.csrf}})
	c.get("/")
	if n := b.listed(); n != 2 {
		t.Fatalf("after a broadcast the page read the swarm %d times in all, want 2", n)
	}
}

// keptHub is a live hub (its stream not watched: events are fed by hand) holding b's swarm as listed.
func keptHub(t *testing.T, b *scripted) *hub {
	t.Helper()
	h := newHub(b, time.Now, 5*time.Second, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.mu.Lock()
	h.ctx, h.live = ctx, true
	h.mu.Unlock()
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.keep(list, time.Now())
	return h
}

// drain is every message queued for a page, by kind, with their data.
func drain(s *sub) map[string][]string {
	out := map[string][]string{}
	for {
		select {
		case msg := <-s.c:
			kind, data, _ := strings.Cut(strings.TrimPrefix(string(msg), "event: "), "\ndata: ")
			out[kind] = append(out[kind], strings.TrimSpace(data))
		default:
			return out
		}
	}
}

// Each page is sent only what it shows, at most one row per mysis per flush however many events came, and no event
// causes a read: the swarm page its rows, the counts and new myses; a mysis page its mysis's events and row; any
// other page nothing but whether the console is live. Before scopes and coalescing every page got every event and
// a row per event (issue 46: 280–330 messages a second per page at 200 myses, each one a GetMysis).
func TestPagesAreSentOnlyWhatTheyShowOncePerFlush(t *testing.T) {
	b := newScripted()
	h := keptHub(t, b)
	swarmPage := h.subscribe(scope{swarm: true, ids: map[string]bool{"id-scout-1": true}})
	mysisPage := h.subscribe(scope{mysis: "id-miner-2", ids: map[string]bool{}})
	helpPage := h.subscribe(scope{ids: map[string]bool{}})
	h.flush() // the counts, once
	if got := drain(swarmPage)["counts"]; len(got) != 1 || !strings.Contains(got[0], `"total":3`) {
		t.Fatalf("swarm page counts %v, want one with the total of 3", got)
	}
	drain(mysisPage)
	for i := range 50 {
		for _, id := range []string{"id-scout-1", "id-miner-2"} {
			h.onEvent(&busv1.Event{MysisId: id, Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: fmt.Sprintf("mine-%d", i)}}})
		}
	}
	h.flush()
	sw, my, help := drain(swarmPage), drain(mysisPage), drain(helpPage)
	if len(sw["row"]) != 1 || !strings.Contains(sw["row"][0], `"id":"id-scout-1"`) || !strings.Contains(sw["row"][0], `mine-49`) || len(sw["event"]) != 0 {
		t.Fatalf("swarm page got %v, want one row of scout-1 with its last action and no event lines", sw)
	}
	if len(my["row"]) != 1 || !strings.Contains(my["row"][0], `"id":"id-miner-2"`) || len(my["event"]) != 50 {
		t.Fatalf("mysis page got %d rows and %d events, want 1 row of miner-2 and its 50 events", len(my["row"]), len(my["event"]))
	}
	for _, e := range my["event"] {
		if !strings.Contains(e, `"id":"id-miner-2"`) {
			t.Fatalf("mysis page got an event of another mysis: %s", e)
		}
	}
	if len(help) != 0 {
		t.Fatalf("a page showing no mysis got %v", help)
	}
	if n := b.gets(); n != 0 {
		t.Fatalf("100 events caused %d reads, want none", n)
	}
	// A mysis first seen in an event is read once and shown to swarm pages as new; the counts follow.
	b.mu.Lock()
	b.myses = append(b.myses, &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-new-4", Name: "new-4", State: memoryv1.MysisState_MYSIS_STATE_IDLE}})
	b.mu.Unlock()
	h.onEvent(&busv1.Event{MysisId: "id-new-4", Payload: &busv1.Event_StateChanged{StateChanged: &busv1.StateChanged{To: memoryv1.MysisState_MYSIS_STATE_IDLE}}})
	h.flush()           // starts the read of new-4
	for b.gets() == 0 { // the read runs on its own goroutine
		runtime.Gosched()
	}
	h.mu.Lock()
	for h.reading["id-new-4"] {
		h.mu.Unlock()
		runtime.Gosched()
		h.mu.Lock()
	}
	h.mu.Unlock()
	h.flush()
	sw = drain(swarmPage)
	if len(sw["new"]) != 1 || !strings.Contains(sw["new"][0], `"name":"new-4"`) || len(sw["counts"]) != 1 || !strings.Contains(sw["counts"][0], `"total":4`) {
		t.Fatalf("after a mysis created elsewhere the swarm page got %v, want it as new and a total of 4", sw)
	}
	if got := drain(helpPage); len(got) != 0 {
		t.Fatalf("a page showing no mysis got %v", got)
	}
}

// Kept statuses are read outside the hub's lock — a page rendering the swarm, the row event after a refresh — while
// events keep arriving, so an event must amend a copy, never the status being read. The browser test's run under
// -race caught applyEvent writing LastAction while a refresh built a row from the same status; with -race this
// test fails the same way on the old code.
func TestEventsNeverChangeAStatusBeingRead(t *testing.T) {
	b := newScripted()
	h := keptHub(t, b)
	sub := h.subscribe(scope{swarm: true, ids: map[string]bool{"id-scout-1": true}})
	defer h.unsubscribe(sub)

	done := make(chan struct{})
	go func() { // a page rendering the kept list while events arrive
		defer close(done)
		for i := 0; i < 200; i++ {
			sts, _ := h.swarm()
			for _, st := range sts {
				_ = rowOf(st)
			}
			if i%20 == 0 {
				h.flush() // the pages sent what changed meanwhile
			}
		}
	}()
	for i := 0; i < 200; i++ {
		h.onEvent(&busv1.Event{MysisId: "id-scout-1", Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: fmt.Sprintf("mine-%d", i)}}})
	}
	<-done
	// The last event is applied to the kept status; no event caused a read.
	h.mu.Lock()
	got := h.rows["id-scout-1"].GetLastAction()
	h.mu.Unlock()
	if got != "mine-199" {
		t.Fatalf("kept last action %q, want the last event's (mine-199)", got)
	}
	if n := b.gets(); n != 0 {
		t.Fatalf("200 events caused %d reads of the mysis, want none (rows are refreshed every %s, not per event)", n, refreshEvery)
	}
}

// A state reason or last error that quotes a credential is shown on the swarm and mysis pages without it (issue 41,
// finding 3): the page is a screen others may see.
func TestPagesShowNoSecrets(t *testing.T) {
	const key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	b := newScripted()
	var all []string
	for _, e := range redacttest.Echoes(key) {
		if !e.Bare {
			all = append(all, e.Text)
		}
	}
	b.myses[2].LastError = strings.Join(all, " | ")
	b.myses[2].Mysis.StateReason = strings.Join(all, " | ")
	c := startConsole(t, b)
	c.login(testToken)
	for _, p := range []string{"/", "/mysis/trader-3"} {
		_, body := c.get(p)
		if leak := redacttest.Leak(body, key); leak != "" {
			t.Errorf("%s shows %q of the key", p, leak)
		}
	}
}
