package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// stream renders events as go test -json would.
func stream(t *testing.T, evs ...event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestProgressShowsResultsFailuresAndSlowTestsOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const a, b = "github.com/zoeaswarm/zoea/cmd/zoea", "github.com/zoeaswarm/zoea/libs/names"
	in := stream(t,
		event{Time: at(0), Action: "start", Package: a},
		event{Time: at(0), Action: "start", Package: b},
		event{Time: at(0), Action: "run", Package: b, Test: "TestQuick"},
		event{Time: at(0), Action: "output", Package: b, Test: "TestQuick", Output: "=== RUN   TestQuick\n"},
		event{Time: at(0), Action: "output", Package: b, Test: "TestQuick", Output: "    x_test.go:1: quick chatter\n"},
		event{Time: at(0), Action: "pass", Package: b, Test: "TestQuick"},
		event{Time: at(0), Action: "run", Package: b, Test: "TestBroken"},
		event{Time: at(0), Action: "output", Package: b, Test: "TestBroken", Output: "    x_test.go:9: got 1, want 2\n"},
		event{Time: at(0), Action: "output", Package: b, Test: "TestBroken", Output: "--- FAIL: TestBroken (0.00s)\n"},
		event{Time: at(0), Action: "fail", Package: b, Test: "TestBroken", Elapsed: 0.01},
		event{Time: at(0), Action: "output", Package: b, Output: "FAIL\n"},
		event{Time: at(0), Action: "output", Package: b, Output: "FAIL\t" + b + "\t0.02s\n"},
		event{Time: at(0), Action: "fail", Package: b},
		event{Time: at(0), Action: "run", Package: a, Test: "TestSwarm"},
		event{Time: at(1), Action: "output", Package: a, Test: "TestSwarm", Output: "    dev_test.go:1: built the services\n"},
		event{Time: at(30), Action: "output", Package: a, Test: "TestSwarm", Output: "    dev_test.go:2: three myses earned credits\n"},
		event{Time: at(31), Action: "pass", Package: a, Test: "TestSwarm"},
		event{Time: at(31), Action: "output", Package: a, Output: "PASS\n"},
		event{Time: at(31), Action: "output", Package: a, Output: "ok  \t" + a + "\t31.0s\n"},
		event{Time: at(31), Action: "pass", Package: a},
	)
	var out strings.Builder
	err := newProgress(&out, func() time.Time { return at(31) }).run(strings.NewReader(in), nil)
	got := out.String()
	if err == nil || !strings.Contains(err.Error(), "1 package(s) failed") {
		t.Errorf("a failed package must fail the run: %v", err)
	}
	for _, want := range []string{
		"    x_test.go:9: got 1, want 2\n--- FAIL: TestBroken (0.01s) in " + b + "\n",
		"FAIL\t" + b + "\t0.02s\n",
		"  [cmd/zoea TestSwarm 30s]     dev_test.go:1: built the services\n", // held back until the test was slow
		"  [cmd/zoea TestSwarm 30s]     dev_test.go:2: three myses earned credits\n",
		"ok  \t" + a + "\t31.0s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, noise := range []string{"quick chatter", "=== RUN", "PASS\n"} {
		if strings.Contains(got, noise) {
			t.Errorf("output has %q:\n%s", noise, got)
		}
	}
	if !strings.HasSuffix(got, "ok  \t"+a+"\t31.0s\ntests: 2 passed, 1 failed, 0 skipped\n") {
		t.Errorf("the last lines must be go test's own result line and the count:\n%s", got)
	}
}

// Nothing skips silently: each skipped test is printed with its reason when it is skipped and again in a list at the
// end, and so is a package whose TestMain skipped every test (testdep.MissingMain).
func TestProgressPrintsEverySkipWithItsReason(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	const sim, mem = "github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver", "github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
	const why = "missing test dependency: node (Node.js 18 or later) on PATH for the TypeScript MCP SDK client (skipped; with CI=true this fails)"
	in := stream(t,
		event{Time: t0, Action: "start", Package: sim},
		event{Time: t0, Action: "run", Package: sim, Test: "TestV2StarterLoopTypeScriptSDK"},
		event{Time: t0, Action: "output", Package: sim, Test: "TestV2StarterLoopTypeScriptSDK", Output: "=== RUN   TestV2StarterLoopTypeScriptSDK\n"},
		event{Time: t0, Action: "output", Package: sim, Test: "TestV2StarterLoopTypeScriptSDK", Output: "    tsclient_test.go:24: " + why + "\n"},
		event{Time: t0, Action: "output", Package: sim, Test: "TestV2StarterLoopTypeScriptSDK", Output: "--- SKIP: TestV2StarterLoopTypeScriptSDK (0.00s)\n"},
		event{Time: t0, Action: "skip", Package: sim, Test: "TestV2StarterLoopTypeScriptSDK"},
		event{Time: t0, Action: "run", Package: sim, Test: "TestOther"},
		event{Time: t0, Action: "pass", Package: sim, Test: "TestOther"},
		event{Time: t0, Action: "output", Package: sim, Output: "ok  \t" + sim + "\t1.0s\n"},
		event{Time: t0, Action: "pass", Package: sim},
		event{Time: t0, Action: "start", Package: mem},
		event{Time: t0, Action: "output", Package: mem, Output: "missing test dependency: Postgres: nothing listens (every test of this package skipped; with CI=true this fails)\n"},
		event{Time: t0, Action: "output", Package: mem, Output: "ok  \t" + mem + "\t0.1s\n"},
		event{Time: t0, Action: "pass", Package: mem},
	)
	var out strings.Builder
	if err := newProgress(&out, func() time.Time { return t0 }).run(strings.NewReader(in), nil); err != nil {
		t.Fatalf("skips are not failures: %v", err)
	}
	got := out.String()
	asItHappens := "--- SKIP: TestV2StarterLoopTypeScriptSDK in " + sim + ": tsclient_test.go:24: " + why + "\n"
	summary := "2 skipped:\n" +
		"  services/spacemolt-sim/internal/mcpserver TestV2StarterLoopTypeScriptSDK: tsclient_test.go:24: " + why + "\n" +
		"  services/memory/internal/pgstore (every test): missing test dependency: Postgres: nothing listens (every test of this package skipped; with CI=true this fails)\n" +
		"tests: 1 passed, 0 failed, 2 skipped\n"
	if !strings.Contains(got, asItHappens) || strings.Index(got, asItHappens) > strings.Index(got, "ok  \t"+sim) {
		t.Errorf("the skip is not shown as it happens, before its package's result:\n%s", got)
	}
	if !strings.HasSuffix(got, summary) {
		t.Errorf("the output does not end with the list of skips and the count:\n%s\nwant the end:\n%s", got, summary)
	}
}

func TestProgressSaysWhatIsStillRunning(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	const a = "github.com/zoeaswarm/zoea/cmd/zoea"
	in := stream(t,
		event{Time: t0, Action: "start", Package: a},
		event{Time: t0, Action: "run", Package: a, Test: "TestSwarm"},
	)
	var out strings.Builder
	p := newProgress(&out, func() time.Time { return t0.Add(3 * time.Minute) })
	for _, l := range strings.Split(strings.TrimSpace(in), "\n") {
		p.line([]byte(l))
	}
	p.heartbeat()
	if want := "… still running: cmd/zoea (longest: cmd/zoea TestSwarm, 3m0s)\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if err := p.end(); err == nil || !strings.Contains(err.Error(), "without a result for "+a) {
		t.Errorf("a stream that stops mid-package must fail: %v", err)
	}
}

// While go test compiles, nothing runs and go test prints nothing: the heartbeat says so, once a minute, rather than
// leaving a newcomer with minutes of silence.
func TestProgressSaysItIsBuilding(t *testing.T) {
	var out strings.Builder
	p := newProgress(&out, time.Now)
	p.heartbeat()
	p.heartbeat()
	if got := strings.Count(out.String(), "… building: go test compiles"); got != 2 {
		t.Errorf("two silent minutes of compiling gave %d building lines, want 2:\n%s", got, out.String())
	}
	const a = "github.com/zoeaswarm/zoea/cmd/zoea"
	out.Reset()
	for _, l := range strings.Split(strings.TrimSpace(stream(t,
		event{Action: "start", Package: a},
		event{Action: "output", Package: a, Output: "ok  \t" + a + "\t1.0s\n"},
		event{Action: "pass", Package: a, Elapsed: 1},
	)), "\n") {
		p.line([]byte(l))
	}
	if !strings.HasPrefix(out.String(), "ok  ") {
		t.Fatalf("the package's result line is not shown: %q", out.String())
	}
	out.Reset()
	p.heartbeat() // the ok line was printed in this minute: nothing more
	p.heartbeat()
	if want := "… building: go test compiles packages and their tests before it runs them (1 package(s) done so far)\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
