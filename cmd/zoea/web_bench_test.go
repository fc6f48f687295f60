package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// BenchmarkWebConsoleSwarm measures the web console against a real local swarm of ZOEA_WEB_BENCH_MYSES myses (default
// 1,000; created, not started, so the machine is not busy playing them): ns/op is one load of the swarm page (GET /,
// its first page of 100 rows, read whole; the console keeps the swarm's list current from the bus), reported with
// its p50/p99 and size; then, in headless chromium with that page open, how long an event takes to show: a direct
// message to a mysis on the page, until its row has been updated from the server-sent events (event- and row-p50-ms,
// -max-ms; rows are sent every 250 ms), beside the bus's own delivery and the console's stream read by a plain client
// following the same rows. docs/BENCHMARKS.md.
func BenchmarkWebConsoleSwarm(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("ZOEA_WEB_BENCH_MYSES")); err == nil && v > 0 {
		n = v
	}
	const token = "web-bench-admin-token"
	s := startLocalSwarm(b, "ZOEA_ADMIN_TOKEN="+token)
	ep := &endpoints{runner: s.runner, bus: s.bus, memory: s.memory, token: token, timeout: 60 * time.Second}
	c, err := ep.dial()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	began := time.Now()
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := c.swarm.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: fmt.Sprintf("m-%04d", i), Provider: "autopilot"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("create: %v", err)
	}
	b.Logf("created %d myses in %s", n, time.Since(began).Round(time.Millisecond))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- serveWeb(wctx, ln, "", webSite{}, c.backend(), token, 60*time.Second, io.Discard, "web console")
	}()
	b.Cleanup(func() { wcancel(); <-served })
	base := "http://" + ln.Addr().String()

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err := hc.Get(base + "/login")
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(page)
	req, _ := http.NewRequest(http.MethodPost, base+"/login", nil)
	req.PostForm = url.Values{"csrf": {string(csrf[1])}, "token": {token}}
	if resp, err = hc.PostForm(base+"/login", req.PostForm); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("login: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	pageBytes := 0
	load := func() time.Duration {
		t0 := time.Now()
		resp, err := hc.Get(base + "/")
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The first page: its 100 rows (the console pages the swarm), the first mysis among them, and the count of all.
		if resp.StatusCode != http.StatusOK || !regexp.MustCompile(`data-name="m-0000"`).Match(body) ||
			!strings.Contains(string(body), fmt.Sprintf(" of %d ", n)) {
			b.Fatalf("the swarm page: %s, without the first mysis or the count of %d", resp.Status, n)
		}
		pageBytes = len(body)
		return time.Since(t0)
	}
	var lists []time.Duration
	for range 10 {
		t0 := time.Now()
		if _, err := c.backend().List(ctx); err != nil {
			b.Fatal(err)
		}
		lists = append(lists, time.Since(t0))
	}
	load() // warm: connections, the runner's caches, the console's kept list
	var loads []time.Duration
	b.ResetTimer()
	for b.Loop() {
		loads = append(loads, load())
	}
	b.StopTimer()
	slices.Sort(loads)
	pct := func(d []time.Duration, p float64) float64 {
		return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(loads, 0.5), "page-p50-ms")
	b.ReportMetric(pct(loads, 0.99), "page-p99-ms")
	b.ReportMetric(float64(pageBytes), "page-bytes")
	slices.Sort(lists)
	b.ReportMetric(pct(lists, 0.5), "runner-list-p50-ms")

	br := startBrowser(b, base)
	if br == nil {
		return
	}
	bctx, bcancel := context.WithTimeout(br.ctx, 5*time.Minute)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/login"), chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.ID("swarm"))); err != nil {
		b.Fatalf("browser login: %v", err)
	}
	// Let the event stream open before the first message.
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("live").textContent === "live"`)); err != nil {
		b.Fatal(err)
	}
	// The bus's own delivery of each event, to a plain gRPC watcher: what of the latency is the bus's, not the console's.
	watch, err := c.bus.WatchEvents(bctx, &busv1.WatchEventsRequest{})
	if err != nil {
		b.Fatal(err)
	}
	arrived := make(chan string, 64)
	go func() {
		for {
			resp, err := watch.Recv()
			if err != nil {
				return
			}
			if m := resp.GetEvent().GetMemoryAppended(); m != nil && strings.HasPrefix(m.GetExcerpt(), "benchmark order") {
				arrived <- resp.GetEvent().GetMysisId()
			}
		}
	}()
	// The orders go to myses on the first page (ten of its hundred rows), so the open page shows them.
	targets := make([]string, 10)
	ids := make([]string, 10)
	for i := range targets {
		targets[i] = fmt.Sprintf("m-%04d", i*min(n, 100)/10)
		st, err := c.backend().Get(ctx, targets[i])
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = st.GetMysis().GetId()
	}
	// The console's own delivery: its /events stream read by a plain HTTP client following the same rows as the page
	// (what a page receives, before a browser handles it): a row per changed mysis every 250 ms.
	sresp, err := hc.Get(base + "/events?swarm=1&ids=" + strings.Join(ids, ","))
	if err != nil {
		b.Fatal(err)
	}
	defer sresp.Body.Close()
	sseSeen := make(chan string, 64)
	go func() {
		r := bufio.NewReader(sresp.Body)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(l, "data: ") && strings.Contains(l, `"id":"`) {
				sseSeen <- l
			}
		}
	}()
	var rowLat, busLat, sseLat []time.Duration
	busDone := make(chan time.Duration, 1)
	for i := range 10 {
		name := targets[i]
		t0 := time.Now()
		if _, err := c.bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: name, Content: "benchmark order " + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
		go func() {
			<-arrived
			busDone <- time.Since(t0)
		}()
		row := fmt.Sprintf(`document.querySelector('tr[data-name="%s"]')`, name)
		// The page stamps the row with Date.now() when the event (and later the row) arrives; that stamp, not when a
		// poll noticed it (a headless tab's timers are throttled), is when it showed. Same machine, same clock.
		shown := func(stamp string) time.Duration {
			ms, err := chromedp.Run(bctx, chromedp.Poll[float64](row+`.dataset.`+stamp+` ? Number(`+row+`.dataset.`+stamp+`) : 0`,
				chromedp.WithPollingInterval(5*time.Millisecond)))
			if err != nil {
				b.Fatalf("the %s stamp of %s never came: %v", stamp, name, err)
			}
			return time.UnixMilli(int64(ms)).Sub(t0)
		}
	sse:
		for {
			select {
			case l := <-sseSeen:
				if strings.Contains(l, `"id":"`+ids[i]+`"`) {
					sseLat = append(sseLat, time.Since(t0))
					break sse
				}
			case <-time.After(30 * time.Second):
				b.Logf("the plain /events reader did not see order %d", i)
				break sse
			}
		}
		// A swarm page is sent rows, not event lines: the event shows when its row does.
		rowLat = append(rowLat, shown("updated"))
		select {
		case d := <-busDone:
			busLat = append(busLat, d)
		case <-time.After(30 * time.Second):
			b.Logf("the plain watcher did not see order %d (its stream was opening?)", i)
		}
	}
	slices.Sort(rowLat)
	b.ReportMetric(pct(rowLat, 0.5), "event-p50-ms") // the same as row-*: kept for the runs recorded before paging
	b.ReportMetric(float64(rowLat[len(rowLat)-1].Microseconds())/1000, "event-max-ms")
	slices.Sort(busLat)
	if len(busLat) == 0 {
		b.Fatal("the plain watcher saw none of the orders")
	}
	b.ReportMetric(pct(busLat, 0.5), "bus-event-p50-ms")
	b.ReportMetric(float64(busLat[len(busLat)-1].Microseconds())/1000, "bus-event-max-ms")
	slices.Sort(sseLat)
	if len(sseLat) > 0 {
		b.ReportMetric(pct(sseLat, 0.5), "sse-event-p50-ms")
		b.ReportMetric(float64(sseLat[len(sseLat)-1].Microseconds())/1000, "sse-event-max-ms")
	}
	b.ReportMetric(pct(rowLat, 0.5), "row-p50-ms")
	b.ReportMetric(float64(rowLat[len(rowLat)-1].Microseconds())/1000, "row-max-ms")
}
