package web

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// do sends req as it is (another Host header, as a DNS-rebinding page's requests arrive) and reads the answer.
func (c *console) do(req *http.Request) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

func TestARebindingHostNameIsRefused(t *testing.T) {
	b := newScripted()
	c := startConsole(t, b)
	c.login(testToken)
	c.get("/")
	// The attacker's page at evil.example, its name now resolving to this console: its requests carry
	// Host: evil.example and, being same-origin to that name, Origin http://evil.example.
	evil := "evil.example"
	form := url.Values{"text": {"self-destruct"}, "csrf": {c.csrf}}
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+"/broadcast", strings.NewReader(form.Encode()))
	req.Host = evil
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+evil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, body := c.do(req)
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(body, "does not answer to the host name") {
		t.Fatalf("a broadcast under Host %s: %d %s", evil, resp.StatusCode, body)
	}
	if calls := b.called(); len(calls) != 0 {
		t.Fatalf("a rebinding page reached the swarm: %v", calls)
	}
	// Nor can it log in (and so get a session cookie for its name).
	req, _ = http.NewRequest(http.MethodPost, c.srv.URL+"/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.Host = evil
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, _ := c.do(req); resp.StatusCode != http.StatusMisdirectedRequest || len(resp.Cookies()) != 0 {
		t.Fatalf("a login under Host %s: %d, cookies %v", evil, resp.StatusCode, resp.Cookies())
	}
	// A configured name, localhost and IP addresses are answered.
	s := New(b, Options{Token: testToken, Hosts: []string{"zoea.example.org"}})
	for host, want := range map[string]int{"zoea.example.org": 303, "ZOEA.example.org.:443": 303, "localhost:7200": 303,
		"10.1.2.3:80": 303, "[::1]:80": 303, evil: 421, "zoea.example.org.evil.example": 421, "": 421} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}

func TestWrongTokensAreThrottledPerClient(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := New(newScripted(), Options{Token: testToken, Now: clock, LoginAttempts: 3, LoginLockout: time.Minute})
	try := func(client, token string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		get := httptest.NewRequest(http.MethodGet, "/login", nil)
		get.Host = "127.0.0.1"
		s.ServeHTTP(w, get)
		csrf := w.Result().Cookies()[0].Value
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"csrf": {csrf}, "token": {token}}.Encode()))
		req.Host, req.RemoteAddr = "127.0.0.1", client+":5555"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: loginCookie, Value: csrf})
		w = httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	for i := range 3 {
		if w := try("10.0.0.1", "guess"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i, w.Code)
		}
	}
	w := try("10.0.0.1", testToken)
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "too many wrong tokens from 10.0.0.1: wait 1m0s") ||
		w.Header().Get("Retry-After") != "60" {
		t.Fatalf("the 4th try, even with the right token: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	if w := try("10.0.0.2", testToken); w.Code != http.StatusSeeOther {
		t.Fatalf("another client is not locked out: %d", w.Code)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if w := try("10.0.0.1", "guess"); w.Code != http.StatusUnauthorized {
		t.Fatalf("after the lockout: %d", w.Code)
	}
	if w := try("10.0.0.1", testToken); w.Code != http.StatusTooManyRequests {
		t.Fatalf("one wrong token after a lockout locks again: %d", w.Code)
	}
}

func TestAFlashCookieNotSignedByTheConsoleIsNotShown(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	u, _ := url.Parse(c.srv.URL)
	phish := "oyour session expired: log in again at http://evil.example"
	for _, v := range []string{base64.RawURLEncoding.EncodeToString([]byte(phish)),
		base64.RawURLEncoding.EncodeToString([]byte(phish)) + ".AAAA"} {
		c.c.Jar.SetCookies(u, []*http.Cookie{{Name: flashCookie, Value: v, Path: "/"}})
		if _, body := c.get("/"); strings.Contains(body, "evil.example") {
			t.Fatalf("the console showed a flash it did not sign: %q", v)
		}
	}
	c.get("/")
	c.post("/broadcast", url.Values{"text": {"mine"}, "csrf": {c.csrf}})
	if _, body := c.get("/"); !strings.Contains(body, "broadcast delivered to 3 myses") {
		t.Fatal("the console's own flash is not shown")
	}
}

func TestSecureCookiesAndHSTSBehindATrustedTLSProxy(t *testing.T) {
	for _, tc := range []struct {
		trust      bool
		proto      string
		wantSecure bool
	}{{false, "", false}, {false, "https", false}, {true, "http", false}, {true, "https", true}} {
		s := New(newScripted(), Options{Token: testToken, TrustForwardedProto: tc.trust})
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		req.Host = "127.0.0.1"
		if tc.proto != "" {
			req.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		ck := w.Result().Cookies()
		if len(ck) == 0 || ck[0].Secure != tc.wantSecure || (w.Header().Get("Strict-Transport-Security") != "") != tc.wantSecure {
			t.Errorf("trust %v, X-Forwarded-Proto %q: cookies %v, HSTS %q; want Secure and HSTS %v", tc.trust, tc.proto, ck,
				w.Header().Get("Strict-Transport-Security"), tc.wantSecure)
		}
	}
}

func TestAnUnknownPathGetsTheConsolesNotFoundPage(t *testing.T) {
	c := startConsole(t, newScripted())
	c.login(testToken)
	code, body := c.get("/no/such/page")
	if code != http.StatusNotFound || !strings.Contains(body, "No such page") || !strings.Contains(body, "no page at /no/such/page") ||
		!strings.Contains(body, `href="/spend"`) {
		t.Fatalf("an unknown path: %d %s", code, body)
	}
}

func TestNamesWithSlashQuestionHashAndDotsCanBeOpenedAndDeleted(t *testing.T) {
	b := newScripted()
	names := []string{"a/b", "what?", "#1", "..", "."}
	for _, n := range names {
		b.myses = append(b.myses, &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-" + n, Name: n,
			State: memoryv1.MysisState_MYSIS_STATE_IDLE, Provider: "autopilot", Model: "autopilot"}, Credits: -1})
	}
	c := startConsole(t, b)
	c.login(testToken)
	_, swarm := c.get("/")
	for _, n := range names {
		link := "/mysis/" + pathSegment(n)
		if !strings.Contains(swarm, `href="`+link+`"`) {
			t.Errorf("the swarm page does not link %q as %s", n, link)
		}
		code, page := c.get(link + "/delete")
		if code != http.StatusOK || !strings.Contains(page, `action="`+link+`/delete"`) {
			t.Errorf("%q's delete page: %d", n, code)
			continue
		}
		c.post(link+"/delete", url.Values{"csrf": {c.csrf}, "confirm": {"yes"}})
	}
	want := []string{}
	for _, n := range names {
		want = append(want, "delete "+n)
	}
	if got := b.called(); !slices.Equal(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
}

func TestTheSwarmTableKeepsTheWholeError(t *testing.T) {
	b := newScripted()
	cause := "dial tcp 10.0.0.9:443: connect: connection refused"
	b.myses[0].LastError = "the provider failed after 3 retries: POST https://api.example/v1/chat/completions: " + cause
	c := startConsole(t, b)
	c.login(testToken)
	if _, body := c.get("/"); !strings.Contains(body, cause) {
		t.Fatalf("the swarm page cut the error before its cause %q", cause)
	}
}

// A swarm of thousands is shown a page of rows at a time (the page a browser keeps live stays small), with links to
// the others that keep the sort and filter, and pages go out gzipped to a browser that takes it, while the event
// stream does not (each event must reach the page when flushed). Before, the swarm page held every row: 150 KB
// uncompressed at 200 myses (issue 46).
func TestSwarmPageIsPagedAndGzipped(t *testing.T) {
	b := newScripted()
	for i := range 247 {
		b.myses = append(b.myses, &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: fmt.Sprintf("id-m-%03d", i), Name: fmt.Sprintf("m-%03d", i),
			State: memoryv1.MysisState_MYSIS_STATE_IDLE, Provider: "autopilot", Model: "autopilot"}})
	}
	c := startConsole(t, b)
	c.login(testToken)
	rowsOf := func(body string) int { return strings.Count(body, "<tr data-id=") }
	_, first := c.get("/?sort=name")
	if n := rowsOf(first); n != pageSize || !strings.Contains(first, "myses 1–100 of 250 · page 1 of 3") || !strings.Contains(first, `id="next-page" href="/?p=2&amp;sort=name"`) || strings.Contains(first, "prev-page") {
		t.Fatalf("page 1 shows %d rows and pager %q", n, pagerOf(first))
	}
	if !strings.Contains(first, `data-room="0"`) {
		t.Fatal("a full page says it has room for new myses")
	}
	_, last := c.get("/?sort=name&p=3")
	if n := rowsOf(last); n != 50 || !strings.Contains(last, "myses 201–250 of 250 · page 3 of 3") || !strings.Contains(last, "m-246") || !strings.Contains(last, `data-room="1"`) {
		t.Fatalf("page 3 shows %d rows and pager %q", n, pagerOf(last))
	}
	_, beyond := c.get("/?sort=name&p=99")
	if !strings.Contains(beyond, "page 3 of 3") {
		t.Fatalf("a page past the end shows %q, want the last page", pagerOf(beyond))
	}
	_, filtered := c.get("/?q=m-24")
	if n := rowsOf(filtered); n != 7 || !strings.Contains(filtered, "of 7 matching") {
		t.Fatalf("a filter shows %d rows and pager %q", n, pagerOf(filtered))
	}

	gzipped := func(path string) (string, int) {
		req, _ := http.NewRequest(http.MethodGet, c.srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		// A transport of its own: net/http's default one asks for gzip itself and hides the header.
		resp, err := (&http.Client{Jar: c.c.Jar, Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if path == "/events" {
			return resp.Header.Get("Content-Encoding"), 0
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		return resp.Header.Get("Content-Encoding"), int(n)
	}
	enc, wire := gzipped("/?sort=name")
	if enc != "gzip" || wire >= len(first)/3 {
		t.Fatalf("the swarm page went out with Content-Encoding %q, %d bytes on the wire for %d", enc, wire, len(first))
	}
	if enc, _ := gzipped("/events"); enc != "" {
		t.Fatalf("the event stream went out with Content-Encoding %q", enc)
	}
	t.Logf("page 1 of 250 myses: %d bytes, %d gzipped", len(first), wire)
}

func pagerOf(body string) string {
	i := strings.Index(body, `<nav class="pager"`)
	if i < 0 {
		return "(no pager)"
	}
	j := strings.Index(body[i:], "</nav>")
	return body[i : i+j]
}

// watchScript is a backend whose event stream is opened when the test says so, or refused as unreachable.
type watchScript struct {
	*scripted
	open     chan struct{} // closed: the bus accepts the watch
	watching chan struct{} // closed when the console has asked for the watch
	refuse   bool
}

func (w *watchScript) Watch(ctx context.Context, connected func(), fn func(*busv1.Event)) error {
	if w.refuse {
		return status.Error(codes.Unavailable, "connection refused")
	}
	close(w.watching)
	select {
	case <-w.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	connected()
	<-ctx.Done()
	return ctx.Err()
}

// The badge says live only once the bus has accepted the watch, and a bus that cannot be reached is named with its
// address. Before, it said "live" before the stream was open and "cannot reach the bus at :" (issue 46).
func TestLiveOnlyOnceTheBusAcceptsAndNamedWhenItCannot(t *testing.T) {
	w := &watchScript{scripted: newScripted(), open: make(chan struct{}), watching: make(chan struct{})}
	h := newHub(w, time.Now, time.Second, slog.New(slog.DiscardHandler))
	page := h.subscribe(scope{ids: map[string]bool{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.run(ctx)
	<-w.watching // the watch is asked for, not yet accepted
	if live, why := h.status(); live || why == "" {
		t.Fatalf("before the bus accepted the watch: live %v (%q), want not live with a reason", live, why)
	}
	select {
	case msg := <-page.c:
		t.Fatalf("before the bus accepted the watch the page was told %q", msg)
	default:
	}
	close(w.open)
	if msg := string(<-page.c); !strings.Contains(msg, `"live":true`) {
		t.Fatalf("after the bus accepted: %q", msg)
	}

	down := &watchScript{scripted: newScripted(), refuse: true}
	s := New(down, Options{Token: testToken, Addrs: map[string]string{"bus": "127.0.0.1:17004", "runner": "127.0.0.1:17003"}})
	page = s.hub.subscribe(scope{ids: map[string]bool{}})
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go s.Run(ctx2)
	if msg := string(<-page.c); !strings.Contains(msg, `"live":false`) || !strings.Contains(msg, "cannot reach the bus at 127.0.0.1:17004") {
		t.Fatalf("with the bus unreachable the page was told %q", msg)
	}
	if err := s.explain(status.Error(codes.Unavailable, "connection refused"), present.Subject{Service: "runner"}); !strings.Contains(err.Error(), "at 127.0.0.1:17003") {
		t.Fatalf("a failed runner call reads %q", err)
	}
}
