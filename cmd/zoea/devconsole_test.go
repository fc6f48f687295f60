package main

import (
	"bytes"
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
