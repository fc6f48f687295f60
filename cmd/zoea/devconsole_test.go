package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// Output that is not a terminal gets plain lines: no console, no clear-screen codes.
func TestDevViewIsPlainWhenNotATerminal(t *testing.T) {
	var out bytes.Buffer
	o := &devOptions{provider: "autopilot", stateDir: ".zoea"}
	devView(o, &out)
	if !o.quiet {
		t.Fatal("a buffer got the console or the redrawing view")
	}
	renderProgress(&out, o, time.Second, []*runnerv1.MysisStatus{{Mysis: &memoryv1.Mysis{Name: "mysis-1"}, Credits: -1}}, nil)
	if strings.Contains(out.String(), "\033") {
		t.Fatalf("escape codes in plain output: %q", out.String())
	}
	if !strings.Contains(out.String(), "mysis-1") {
		t.Fatalf("no progress line: %q", out.String())
	}
}

// Plain progress prints the table when something a reader of the log needs changed — a mysis's state, its last
// error, its first credits, a mysis more or less — and otherwise every progressEvery, not every second.
func TestPlainProgressPrintsChangesNotEverySecond(t *testing.T) {
	o := &devOptions{provider: "autopilot", stateDir: ".zoea", quiet: true}
	p := &progressPrinter{every: 30 * time.Second}
	row := func(name string, state memoryv1.MysisState, turn int64, lastErr string) *runnerv1.MysisStatus {
		return &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Name: name, State: state, CurrentTurn: turn, AccountUsername: name},
			Credits: 100 + turn, LastAction: fmt.Sprintf("llm calls mine %d", turn), LastError: lastErr}
	}
	running, stopped := memoryv1.MysisState_MYSIS_STATE_RUNNING, memoryv1.MysisState_MYSIS_STATE_STOPPED
	for _, step := range []struct {
		at     time.Duration
		list   []*runnerv1.MysisStatus
		earned map[string]int64
		prints bool
	}{
		{1 * time.Second, []*runnerv1.MysisStatus{row("a", running, 1, ""), row("b", running, 1, "")}, nil, true},
		{2 * time.Second, []*runnerv1.MysisStatus{row("a", running, 1, ""), row("b", running, 1, "")}, nil, false},
		{3 * time.Second, []*runnerv1.MysisStatus{row("b", running, 2, ""), row("a", running, 3, "")}, nil, false}, // turns, credits, actions, order
		{4 * time.Second, []*runnerv1.MysisStatus{row("a", running, 3, ""), row("b", running, 2, "timeout")}, nil, true},
		{5 * time.Second, []*runnerv1.MysisStatus{row("a", running, 3, ""), row("b", running, 2, "timeout")}, map[string]int64{"a": 5}, true},
		{6 * time.Second, []*runnerv1.MysisStatus{row("a", running, 4, ""), row("b", running, 2, "timeout")}, map[string]int64{"a": 9}, false},
		{35 * time.Second, []*runnerv1.MysisStatus{row("a", running, 9, ""), row("b", running, 2, "timeout")}, map[string]int64{"a": 9}, true},
		{36 * time.Second, []*runnerv1.MysisStatus{row("a", stopped, 9, ""), row("b", running, 2, "timeout")}, map[string]int64{"a": 9}, true},
		{37 * time.Second, []*runnerv1.MysisStatus{row("a", stopped, 9, "")}, map[string]int64{"a": 9}, true},
	} {
		var out bytes.Buffer
		earners := p.print(&out, o, step.at, step.list, step.earned)
		if printed := out.Len() > 0; printed != step.prints {
			t.Errorf("at %s: printed %v, want %v: %q", step.at, printed, step.prints, out.String())
		}
		if want := len(step.earned); earners != want {
			t.Errorf("at %s: %d earners, want %d", step.at, earners, want)
		}
	}
}
