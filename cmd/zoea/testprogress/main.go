// Command testprogress turns `go test -json` into the output `make test` shows: go test's own closing line per
// package as each package finishes (ok, FAIL, "?  … [no test files]"), the full output of every test that fails,
// every skipped test with its reason as it is skipped and again in a list at the end, build errors, and, for tests
// that run long (the end-to-end swarms), their t.Log milestones as they happen. A line every minute names what is
// still running when nothing else was printed. Passing tests print nothing else, so the log stays short; it ends with
// the tests counted, "tests: N passed, N failed, N skipped" (subtests included), which CI reads.
//
// Why not gotestsum, which shows results per package and lists skipped tests too: it has no way to show a long test's
// milestones while it runs without showing every passing test's output (its formats print a test's output only when
// it fails, or all of it), and nothing that says, minute by minute, which packages and tests still run or that go
// test is still compiling. On a fresh machine the end-to-end tests run for many minutes each; those two are what keep
// `make test` from going silent.
//
// It exits 1 when any package failed or the stream ended without a package's result (go test crashed), so
// `go test -json ./... | testprogress` is red whenever go test was, even without pipefail.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	p := newProgress(os.Stdout, time.Now)
	if err := p.run(os.Stdin, time.NewTicker(time.Minute).C); err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail events
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

// slowAfter is how long a test runs before its t.Log lines are shown live.
const slowAfter = 15 * time.Second

type testState struct {
	started time.Time
	buf     []string // output held back while the test is not (yet) slow
	live    bool
	last    string // the last line it wrote: the reason, when a slow (live) test skips
}

type progress struct {
	out      io.Writer
	now      func() time.Time
	tests    map[string]*testState // package + "\x00" + test
	running  map[string]bool       // packages started and not finished
	failed   int
	printed  bool // something was printed since the last tick
	finished map[string]bool
	// Tests (subtests included) by result, for the closing count; skipped keeps each with its reason for the list.
	passed, failedTests int
	skipped             []skipped
}

// skipped is one skipped test, or a whole package when test is "" (a TestMain that found a dependency missing).
type skipped struct{ pkg, test, reason string }

func (s skipped) String() string {
	if s.test == "" {
		return fmt.Sprintf("%s (every test): %s", short(s.pkg), s.reason)
	}
	return fmt.Sprintf("%s %s: %s", short(s.pkg), s.test, s.reason)
}

func newProgress(out io.Writer, now func() time.Time) *progress {
	return &progress{out: out, now: now, tests: map[string]*testState{}, running: map[string]bool{}, finished: map[string]bool{}}
}

// run reads events until in ends; tick makes it say what is still running.
func (p *progress) run(in io.Reader, tick <-chan time.Time) error {
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		errc <- sc.Err()
		close(lines)
	}()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if err := <-errc; err != nil {
					return err
				}
				return p.end()
			}
			p.line(l)
		case <-tick:
			p.heartbeat()
		}
	}
}

func (p *progress) print(s string) {
	fmt.Fprint(p.out, s)
	if !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(p.out)
	}
	p.printed = true
}

func (p *progress) line(raw []byte) {
	var e event
	if err := json.Unmarshal(raw, &e); err != nil || (e.Action == "" && e.Package == "") {
		p.print(string(raw)) // not JSON: go test's own complaint (bad flag, no go.mod), shown as it is
		return
	}
	if e.Time.IsZero() {
		e.Time = p.now()
	}
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		p.print(e.Output)
	case "start":
		p.running[e.Package] = true
	case "run":
		if e.Test != "" {
			p.tests[key] = &testState{started: e.Time}
		}
	case "output":
		if e.Test == "" {
			p.packageOutput(e)
			return
		}
		t := p.tests[key]
		if t == nil {
			t = &testState{started: e.Time}
			p.tests[key] = t
		}
		if framework(e.Output) {
			return
		}
		if l := strings.TrimSpace(e.Output); l != "" {
			t.last = l
		}
		if !t.live && e.Time.Sub(t.started) >= slowAfter {
			t.live = true
			for _, l := range t.buf {
				p.print(p.tag(e, t) + l)
			}
			t.buf = nil
		}
		if t.live {
			p.print(p.tag(e, t) + e.Output)
		} else {
			t.buf = append(t.buf, e.Output)
		}
	case "fail":
		if e.Test == "" {
			p.packageDone(e)
			return
		}
		t := p.tests[key]
		if t != nil && !t.live {
			for _, l := range t.buf {
				p.print(l)
			}
		}
		p.print(fmt.Sprintf("--- FAIL: %s (%.2fs) in %s", e.Test, e.Elapsed, e.Package))
		p.failedTests++
		delete(p.tests, key)
	case "skip":
		if e.Test == "" {
			p.packageDone(e)
			return
		}
		// The reason is what the test logged before it skipped (t.Skip's message); a slow test's lines were shown.
		var said []string
		if t := p.tests[key]; t != nil {
			for _, l := range t.buf {
				if l = strings.TrimSpace(l); l != "" {
					said = append(said, l)
				}
			}
			if t.live && t.last != "" {
				said = []string{t.last} // its earlier lines were shown as it ran
			}
		}
		reason := strings.Join(said, " ")
		if reason == "" {
			reason = "no reason given"
		}
		sk := skipped{pkg: e.Package, test: e.Test, reason: reason}
		p.skipped = append(p.skipped, sk)
		p.print(fmt.Sprintf("--- SKIP: %s in %s: %s", e.Test, e.Package, reason))
		delete(p.tests, key)
	case "pass":
		if e.Test == "" {
			p.packageDone(e)
			return
		}
		p.passed++
		delete(p.tests, key)
	}
}

// tag prefixes a slow test's live lines with where they come from.
func (p *progress) tag(e event, t *testState) string {
	return fmt.Sprintf("  [%s %s %s] ", short(e.Package), e.Test, e.Time.Sub(t.started).Round(time.Second))
}

// framework reports the lines go test -v writes around each test, which the result lines replace.
func framework(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP", "--- FAIL"} {
		if strings.HasPrefix(strings.TrimLeft(s, " "), p) {
			return true
		}
	}
	return false
}

// packageOutput prints what go test says for a whole package: its ok/FAIL/"no test files" line, panics, a test
// binary's own errors. "PASS" and "FAIL" alone are dropped: the ok/FAIL line with the package's name follows.
func (p *progress) packageOutput(e event) {
	switch strings.TrimSpace(e.Output) {
	case "PASS", "FAIL", "testing: warning: no tests to run":
		return
	}
	if _, reason, ok := strings.Cut(e.Output, "missing test dependency: "); ok {
		// testdep.MissingMain: the package's TestMain skipped all its tests.
		p.skipped = append(p.skipped, skipped{pkg: e.Package, reason: "missing test dependency: " + strings.TrimSpace(reason)})
	}
	p.print(e.Output)
}

func (p *progress) packageDone(e event) {
	delete(p.running, e.Package)
	p.finished[e.Package] = true
	if e.Action == "fail" {
		p.failed++
		// Output of tests still running when the package died (a timeout, a panic) explains it.
		for k, t := range p.tests {
			if strings.HasPrefix(k, e.Package+"\x00") {
				for _, l := range t.buf {
					p.print(l)
				}
				delete(p.tests, k)
			}
		}
	}
}

func (p *progress) heartbeat() {
	if p.printed {
		p.printed = false
		return
	}
	if len(p.running) == 0 {
		// go test says nothing while it compiles (with -race, on a cold build cache, for minutes): say that it does.
		msg := "… building: go test compiles packages and their tests before it runs them"
		if n := len(p.finished); n > 0 {
			msg += fmt.Sprintf(" (%d package(s) done so far)", n)
		}
		p.print(msg)
		p.printed = false
		return
	}
	now := p.now()
	var longest string
	var d time.Duration
	for k, t := range p.tests {
		pkg, test, _ := strings.Cut(k, "\x00")
		if el := now.Sub(t.started); el > d && !strings.Contains(test, "/") {
			d, longest = el, pkg+" "+test
		}
	}
	pkgs := make([]string, 0, len(p.running))
	for pkg := range p.running {
		pkgs = append(pkgs, short(pkg))
	}
	sort.Strings(pkgs)
	msg := "… still running: " + strings.Join(pkgs, ", ")
	if longest != "" {
		msg += fmt.Sprintf(" (longest: %s, %s)", short(longest), d.Round(time.Second))
	}
	p.print(msg)
	p.printed = false
}

// end prints the skipped tests again, together, and the closing count, and says whether the run failed.
func (p *progress) end() error {
	if len(p.skipped) > 0 {
		p.print(fmt.Sprintf("%d skipped:", len(p.skipped)))
		for _, s := range p.skipped {
			p.print("  " + s.String())
		}
	}
	p.print(fmt.Sprintf("tests: %d passed, %d failed, %d skipped", p.passed, p.failedTests, len(p.skipped)))
	if p.failed > 0 {
		return fmt.Errorf("%d package(s) failed", p.failed)
	}
	if len(p.running) > 0 {
		var pkgs []string
		for pkg := range p.running {
			pkgs = append(pkgs, pkg)
		}
		sort.Strings(pkgs)
		return fmt.Errorf("go test ended without a result for %s", strings.Join(pkgs, ", "))
	}
	return nil
}

// short drops the module path's common prefix.
func short(pkg string) string { return strings.TrimPrefix(pkg, "github.com/zoeaswarm/zoea/") }
