package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
)

// TestRunAgainstTheFake drives every phase against the memory fake (which runs the memory service's contract
// suite) through an in-process composer: two created myses, extended by 25 tool loops each, then the first, warm
// and turn-loop phases. The stored rows and the report must say what was done.
func TestRunAgainstTheFake(t *testing.T) {
	f := memfake.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	args := []string{"-memory", f.Addr(), "-token", "", "-create", "2", "-history", "10", "-extend", "25", "-n", "6", "-turns", "4", "-seed", "3"}
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	t.Log(report)
	if !strings.Contains(report, "extended 2 myses by 25 tool loops each") {
		t.Errorf("report does not say the myses were extended:\n%s", report)
	}
	for _, phase := range []struct {
		name  string
		calls string
	}{{"first", "2"}, {"warm", "6"}, {"turns", "4"}} {
		if !regexp.MustCompile(`(?m)^` + phase.name + `\s+` + phase.calls + ` calls\s+p50 `).MatchString(report) {
			t.Errorf("no %q phase of %s calls in the report:\n%s", phase.name, phase.calls, report)
		}
	}
	listed, err := f.ListMyses(ctx, &memoryv1.ListMysesRequest{})
	if err != nil || len(listed.GetMyses()) != 2 {
		t.Fatalf("myses stored: %v (%v), want the 2 created", listed.GetMyses(), err)
	}
	extended, turnLoops := 0, 0
	for _, m := range listed.GetMyses() {
		for _, m := range f.Memories(m.GetId()) {
			switch id := m.GetToolCallId(); {
			case strings.HasPrefix(id, "extend_3_"):
				extended++
			case strings.HasPrefix(id, "load_3_"):
				turnLoops++
			}
		}
	}
	// Each extended loop and each turn-loop call stores an assistant call and its result; only results carry
	// tool_call_id.
	if extended != 2*25 || turnLoops != 4 {
		t.Fatalf("stored %d extended tool results (want 50) and %d turn-loop results (want 4)", extended, turnLoops)
	}
}
