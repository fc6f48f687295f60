package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
)

// browser is headless Debian chromium driven by chromedp.
type browser struct {
	t     testing.TB
	ctx   context.Context
	base  string
	shots string
}

func startBrowser(t testing.TB, base string) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		testdep.Missing(t, "chromium is not installed, and this test drives the web console in it (apt-get install -y chromium; .ci/services.sh installs it)")
		return nil
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	// The first run starts the browser, which lives as long as the context of that run: the test's, not a step's.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	shots := os.Getenv("ZOEA_WEB_SCREENSHOTS") // CI keeps them as artifacts
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "zoea-web-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	return &browser{t: t, ctx: bctx, base: base, shots: shots}
}

// run runs actions with a deadline, failing the test with what it was doing.
func (b *browser) run(what string, within time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	b.t.Fatalf("%s: %v\nat %s:\n%s", what, err, loc, tail(body, 1500))
}

// value runs one action that returns a value.
func value[T any](b *browser, what string, within time.Duration, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.fail(what, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return value(b, "read "+sel, 10*time.Second, chromedp.Text(chromedp.CSS(sel)))
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := value(b, "screenshot "+name, 20*time.Second, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// TestWebConsoleInABrowser drives `zoea web` in headless chromium against a real local swarm of autopilot myses
// with an admin token: login (a wrong token refused), the swarm page, a broadcast that reaches every mysis, an event
// shown live, stop, the anatomy page's token sum against the composer's total, a delete that asks first, and a post
// without the CSRF token refused. Each page is saved as a screenshot.
func TestWebConsoleInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service, runs a swarm and a browser")
	}
	const token = "web-e2e-admin-token"
	s := startLocalSwarm(t, "ZOEA_ADMIN_TOKEN="+token)
	ep := &endpoints{runner: s.runner, bus: s.bus, memory: s.memory, token: token, timeout: 20 * time.Second}
	c, err := ep.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	names := []string{"scout-1", "miner-2", "trader-3"}
	for _, n := range names {
		if _, err := c.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: n, Provider: "autopilot", Start: true}); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- serveWeb(wctx, ln, "", webSite{}, c.backend(), token, 20*time.Second, io.Discard, "web console")
	}()
	t.Cleanup(func() {
		wcancel()
		if err := <-served; err != nil {
			t.Errorf("zoea web: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	b := startBrowser(t, base)

	// A wrong token is refused; the right one opens the swarm page, which lists every mysis.
	b.run("wrong token", 60*time.Second, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), "not-the-token"), chromedp.Submit(chromedp.ID("#token")),
		chromedp.WaitVisible(chromedp.ID("#problem")))
	if got := b.text("#problem"); !strings.Contains(got, "wrong token") {
		t.Fatalf("a wrong token: %q", got)
	}
	b.screenshot("login-refused")
	b.run("login", 30*time.Second, chromedp.SendKeys(chromedp.ID("#token"), token), chromedp.Submit(chromedp.ID("#token")),
		chromedp.WaitVisible(chromedp.ID("#swarm")))
	table := b.text("#swarm")
	for _, n := range names {
		if !strings.Contains(table, n) {
			t.Fatalf("the swarm page does not list %s:\n%s", n, table)
		}
	}

	// A row action keeps the page as it was: sorted by name, the second row selected with j, s stops that mysis
	// (not another), and the page comes back sorted the same way with the same row selected.
	b.run("sorted by name", 30*time.Second, chromedp.Navigate(base+"/?sort=name&q="), chromedp.WaitVisible(chromedp.ID("#swarm")))
	b.run("select the second row (j j)", 10*time.Second, chromedp.KeyEvent("j"), chromedp.KeyEvent("j"))
	chosen := value(b, "the selected row", 10*time.Second, chromedp.Evaluate[string](`document.querySelector("#swarm tr.selected").dataset.name`))
	if chosen != "scout-1" { // miner-2, scout-1, trader-3 sorted by name
		t.Fatalf("j j selected %q, want the second row by name, scout-1", chosen)
	}
	b.run("stop the selected row (s)", 30*time.Second, chromedp.KeyEvent("s"), chromedp.WaitVisible(chromedp.ID("#flash")))
	if got := b.text("#flash"); !strings.Contains(got, "stopped scout-1") {
		t.Fatalf("s on the selected scout-1: %q", got)
	}
	loc := value(b, "location after the action", 10*time.Second, chromedp.Location())
	again := value(b, "the row selected after the action", 10*time.Second, chromedp.Evaluate[string](
		`(document.querySelector("#swarm tr.selected") || {dataset: {}}).dataset.name || ""`))
	if !strings.Contains(loc, "sort=name") || again != "scout-1" {
		t.Fatalf("after s the console is at %s with %q selected; want the same sort and scout-1 selected", loc, again)
	}
	if _, err := c.swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "scout-1"}); err != nil {
		t.Fatal(err)
	}

	// A broadcast from the page reaches every mysis: the bus reports each delivery.
	events, err := c.bus.WatchEvents(ctx, &busv1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mission := "Web console mission: mine ore at main_belt and sell it at sol_central."
	// The page still shows the stop's flash until the broadcast's page has loaded: it goes first, so the flash
	// waited for is the new page's.
	value(b, "the stop's flash removed", 10*time.Second, chromedp.Evaluate[bool](
		`(() => { const f = document.querySelector("#flash"); if (f) f.remove(); return true; })()`))
	b.run("broadcast", 30*time.Second, chromedp.SendKeys(chromedp.ID("#broadcast-text"), mission),
		chromedp.Submit(chromedp.ID("#broadcast-text")), chromedp.WaitVisible(chromedp.ID("#flash")))
	if got := b.text("#flash"); !strings.Contains(got, "broadcast delivered to 3 myses") {
		t.Fatalf("after the broadcast: %q", got)
	}
	reached := map[string]bool{}
	for len(reached) < len(names) {
		resp, err := events.Recv()
		if err != nil {
			t.Fatalf("the broadcast reached %d of 3 myses before the event stream ended: %v", len(reached), err)
		}
		if br := resp.GetEvent().GetBroadcast(); br != nil && strings.HasPrefix(mission, strings.TrimSuffix(br.GetExcerpt(), "…")) {
			reached[resp.GetEvent().GetMysisId()] = true
		}
	}
	b.screenshot("swarm")

	// An event shows on the mysis page, live: a direct message's memory appears in its timeline.
	b.run("mysis page", 30*time.Second, chromedp.Navigate(base+"/mysis/scout-1"), chromedp.WaitVisible(chromedp.ID("#timeline")))
	order := fmt.Sprintf("web console order %d", time.Now().UnixNano())
	sent := time.Now()
	if _, err := c.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: "scout-1", Content: order}); err != nil {
		t.Fatal(err)
	}
	value(b, "the order in the timeline", 30*time.Second, chromedp.Poll[bool](
		fmt.Sprintf(`document.getElementById("timeline").textContent.includes(%q)`, order), chromedp.WithPollingInterval(10*time.Millisecond)))
	t.Logf("an event showed on the page %s after it was sent", time.Since(sent).Round(time.Millisecond))

	// Stop scout-1 from its page (r and s are its keys; the button here), so its next request holds still.
	b.run("stop", 30*time.Second, chromedp.Click(chromedp.CSS("#stop button")), chromedp.WaitVisible(chromedp.ID("#flash")))
	if got := b.text("#flash"); !strings.Contains(got, "stopped scout-1") {
		t.Fatalf("after stop: %q", got)
	}
	value(b, "stopped state", 30*time.Second, chromedp.Poll[bool](`document.getElementById("state").textContent === "stopped"`))
	b.screenshot("mysis")

	// The anatomy page: every row's tokens add up to the composer's total.
	b.run("anatomy (p)", 30*time.Second, chromedp.KeyEvent("p"), chromedp.WaitVisible(chromedp.ID("#anatomy")))
	sum := value(b, "token sum", 10*time.Second, chromedp.Evaluate[int](
		`Array.from(document.querySelectorAll("#anatomy [data-tokens]")).reduce((a, e) => a + Number(e.dataset.tokens), 0)`))
	total := value(b, "page total", 10*time.Second, chromedp.Evaluate[int](`Number(document.getElementById("total").dataset.total)`))
	prev, err := c.swarm.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "scout-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := int(prev.GetManifest().GetTokens().GetTotal())
	if sum != want || total != want {
		t.Fatalf("anatomy: rows sum to %d, page total %d; the composer's total is %d", sum, total, want)
	}
	t.Logf("anatomy: %d messages, rows sum to the composer's %d tokens", len(prev.GetMessages()), want)

	// The tool block's definitions are listed, tool by tool in the order sent, and their tokens add up to the block's.
	listed := value(b, "tool definitions", 10*time.Second, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#tools li.tool")).map(e => e.dataset.name)`))
	var toolNames []string
	described := 0
	for _, d := range prev.GetTools() {
		toolNames = append(toolNames, d.GetName())
		if d.GetDescription() != "" {
			described++
		}
	}
	toolSum := value(b, "tool tokens", 10*time.Second, chromedp.Evaluate[int](
		`Array.from(document.querySelectorAll("#tools li.tool")).reduce((a, e) => a + Number(e.dataset.toolTokens), 0)`))
	descs := value(b, "tool descriptions", 10*time.Second, chromedp.Evaluate[int](
		`document.querySelectorAll("#tools li.tool .tool-description").length`))
	if len(toolNames) == 0 || !slices.Equal(listed, toolNames) || toolSum != int(prev.GetManifest().GetTokens().GetTools()) || descs != described {
		t.Fatalf("anatomy lists tools %v (%d tokens, %d descriptions); the request sends %v (%d tokens, %d described)",
			listed, toolSum, descs, toolNames, prev.GetManifest().GetTokens().GetTools(), described)
	}
	// Each definition opens on a click: its description shows.
	b.run("open a tool definition", 10*time.Second, chromedp.Click(chromedp.CSS("#tools li.tool summary")),
		chromedp.WaitVisible(chromedp.CSS("#tools li.tool details[open] .tool-parameters")))
	t.Logf("anatomy: %d tool definitions listed, %d tokens as the tool block", len(listed), toolSum)
	b.screenshot("anatomy")

	// d asks first: "no" keeps the mysis, "yes" deletes it.
	b.run("delete page (d)", 30*time.Second, chromedp.Navigate(base+"/mysis/miner-2"), chromedp.WaitVisible(chromedp.ID("#timeline")),
		chromedp.KeyEvent("d"), chromedp.WaitVisible(chromedp.ID("#question")))
	if q := b.text("#question"); !strings.Contains(q, "Delete mysis miner-2") || !strings.Contains(q, "cannot be undone") {
		t.Fatalf("the delete question: %q", q)
	}
	b.screenshot("delete")
	b.run("keep", 30*time.Second, chromedp.Click(chromedp.CSS(`#confirm-delete button[value="no"]`)), chromedp.WaitVisible(chromedp.ID("#flash")))
	if got := b.text("#flash"); !strings.Contains(got, "not deleted: miner-2 is kept") {
		t.Fatalf("after no: %q", got)
	}
	if _, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: "miner-2"}); err != nil {
		t.Fatalf("miner-2 after no: %v", err)
	}
	b.run("delete", 30*time.Second, chromedp.Navigate(base+"/mysis/miner-2/delete"), chromedp.WaitVisible(chromedp.ID("#question")),
		chromedp.Click(chromedp.CSS(`#confirm-delete button[value="yes"]`)), chromedp.WaitVisible(chromedp.ID("#flash")))
	if got := b.text("#flash"); !strings.Contains(got, "deleted miner-2") {
		t.Fatalf("after yes: %q", got)
	}
	if _, err := c.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: "miner-2"}); status.Code(err) != codes.NotFound {
		t.Fatalf("miner-2 after yes: %v, want NotFound", err)
	}

	// A post without the CSRF token is refused, even from the console's own page with its session cookie.
	refused := value(b, "post without CSRF", 30*time.Second, chromedp.Evaluate[map[string]any](`fetch("/broadcast", {method: "POST",
		body: new URLSearchParams({text: "no token"})}).then(async r => ({status: r.status, body: await r.text()}))`, chromedp.EvalAwaitPromise))
	if refused["status"] != float64(403) || !strings.Contains(fmt.Sprint(refused["body"]), "CSRF token is missing") {
		t.Fatalf("a post without the CSRF token: %v", refused["status"])
	}

	// Many myses at once: ticking two rows' boxes and messaging them reaches both, and the page comes back with the
	// same two ticked.
	b.run("select scout-1 and trader-3", 30*time.Second, chromedp.Navigate(base+"/?sort=name&q="), chromedp.WaitVisible(chromedp.ID("#swarm")),
		chromedp.Click(chromedp.CSS(`#swarm input[value="scout-1"]`)), chromedp.Click(chromedp.CSS(`#swarm input[value="trader-3"]`)))
	if got := b.text("#picked-count"); got != "2 selected" {
		t.Fatalf("after ticking two rows the bar says %q", got)
	}
	b.run("message the selection", 30*time.Second, chromedp.SetValue(chromedp.ID("#bulk-action"), "message"),
		chromedp.SendKeys(chromedp.ID("#bulk-text"), "regroup at sol_central"), chromedp.Click(chromedp.CSS(`#bulk button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("#flash")))
	if got := b.text("#flash"); !strings.Contains(got, "sent to 2 myses") {
		t.Fatalf("after messaging the selection: %q", got)
	}
	kept := value(b, "the ticked rows after the action", 10*time.Second, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#swarm input[name="mysis"]:checked')).map(b => b.value)`))
	if !slices.Equal(kept, []string{"scout-1", "trader-3"}) {
		t.Fatalf("after the bulk message the ticked rows are %v, want scout-1 and trader-3", kept)
	}
	b.screenshot("swarm-selection")

	// The game in view: the mysis page shows where its ship is, from its get_status (the autopilot reads it each turn).
	b.run("scout-1's ship", 60*time.Second, chromedp.Navigate(base+"/mysis/scout-1"), chromedp.WaitVisible(chromedp.ID("#ship-where")))
	if got := b.text("#ship-where"); !strings.Contains(got, "(") {
		t.Fatalf("scout-1's ship is at %q, want a place in a system", got)
	}

	// The remaining pages, for the screenshots; then the swarm page as a phone shows it.
	b.run("spend", 60*time.Second, chromedp.Navigate(base+"/spend"), chromedp.WaitVisible(chromedp.CSS("figure.chart")),
		chromedp.WaitVisible(chromedp.CSS("#top-table a")))
	b.screenshot("spend")
	b.run("help (?)", 30*time.Second, chromedp.KeyEvent("?"), chromedp.WaitVisible(chromedp.ID("#keys")))
	b.screenshot("keys")
	b.run("phone", 30*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("#swarm")))
	b.screenshot("swarm-phone")
	// The mysis page fits the window, on a desktop and on a phone, with Stop on screen: it overflowed sideways
	// (1,652 px in 1,280) and hid Stop on a phone (issue 46).
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		b.run("mysis page, "+w.name, 30*time.Second, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate(base+"/mysis/scout-1"),
			chromedp.WaitVisible(chromedp.ID("#timeline")))
		wide := value(b, "page width, "+w.name, 10*time.Second, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
		stop := value(b, "Stop's right edge, "+w.name, 10*time.Second, chromedp.Evaluate[float64](
			`(() => { const el = document.querySelector("#stop button, #start button"); return el ? el.getBoundingClientRect().right : -1; })()`))
		if wide > float64(w.width) || stop < 0 || stop > float64(w.width) {
			over := value(b, "what overflows, "+w.name, 10*time.Second, chromedp.Evaluate[[]string](
				`Array.from(document.querySelectorAll("main *")).filter((el) => el.getBoundingClientRect().right > innerWidth + 1 &&
					!Array.from(el.children).some((c) => c.getBoundingClientRect().right > innerWidth + 1)).slice(0, 5).map((el) =>
					el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : "") + " " + Math.round(el.getBoundingClientRect().right))`))
			t.Errorf("mysis page on a %s (%d px): %v px wide, Stop/Start ends at %v px; overflowing: %v", w.name, w.width, wide, stop, over)
		}
		b.screenshot("mysis-" + w.name)
	}
}
