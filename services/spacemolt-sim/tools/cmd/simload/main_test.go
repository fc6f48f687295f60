package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"
)

// The load driver must keep working; a short run in each mode and client.
func TestSimloadSmoke(t *testing.T) {
	for _, args := range [][]string{
		{"-mode", "reads", "-client", "sdk", "-players", "4", "-duration", "500ms"},
		{"-mode", "reads", "-client", "raw", "-players", "4", "-duration", "500ms"},
		{"-mode", "players", "-client", "raw", "-players", "8", "-duration", "1s", "-tick", "20ms"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		m := regexp.MustCompile(`total +ok=(\d+) errors=(\d+)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("%v: no total line in\n%s", args, out.String())
		}
		if ok, _ := strconv.Atoi(m[1]); ok == 0 {
			t.Fatalf("%v: no successful calls:\n%s", args, out.String())
		}
		if args[1] == "reads" && m[2] != "0" {
			t.Fatalf("%v: read errors:\n%s", args, out.String())
		}
		if args[1] == "players" && !regexp.MustCompile(`ticks +resolved=\d+ on_time=\d+`).MatchString(out.String()) {
			t.Fatalf("%v: no tick report:\n%s", args, out.String())
		}
	}
	if err := run(context.Background(), []string{"-mode", "bogus"}, &bytes.Buffer{}); err == nil {
		t.Fatal("bad mode accepted")
	}
}
