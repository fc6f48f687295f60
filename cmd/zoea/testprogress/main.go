// Command testprogress turns `go test -json` into the output `make test` shows: go test's own closing line per
// package as each package finishes (ok, FAIL, "?  … [no test files]"), the full output of every test that fails,
// build errors, and, for tests that run long (the end-to-end swarms), their t.Log milestones as they happen. A line
// every minute names what is still running when nothing else was printed. Passing tests print nothing else, so the
// log stays short and still ends with go test's ok/FAIL lines, which CI counts.
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
}

type progress struct {
	out      io.Writer
	now      func() time.Time
	tests    map[string]*testState // package + "\x00" + test
	running  map[string]bool       // packages started and not finished
	failed   int
	printed  bool // something was printed since the last tick
	finished map[string]bool
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
		delete(p.tests, key)
	case "pass", "skip":
		if e.Test == "" {
			p.packageDone(e)
			return
		}
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

func (p *progress) end() error {
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
