package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/pgtest"
)

// TestDevRunsALocalSwarm is the README's first command end to end: every service binary is built, `zoea dev`
// starts them against a fresh database, creates three autopilot myses, broadcasts the mission, and each of them
// must earn credits in the simulator within two minutes; then everything stops cleanly.
func TestDevRunsALocalSwarm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service and runs a swarm")
	}
	bin := t.TempDir()
	for _, svc := range []string{"memory", "composer", "runner", "bus", "spacemolt-sim"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, svc), "./cmd/"+svc)
		cmd.Dir = filepath.Join("..", "..", "services", svc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", svc, err, out)
		}
	}
	o := &devOptions{
		bin:         bin,
		stateDir:    t.TempDir(),
		databaseURL: pgtest.New(t),
		natsURL:     "nats://127.0.0.1:4222", // the local server, or an embedded one when none answers
		provider:    "autopilot",
		tick:        time.Second,
		turnPause:   time.Second,
		myses:       3,
		mission:     defaultMission,
		duration:    2 * time.Minute,
		minEarners:  3,
		quiet:       true,
	}
	var out bytes.Buffer
	began := time.Now()
	if err := runDev(context.Background(), o, &out); err != nil {
		t.Fatalf("zoea dev: %v\n%s", err, tail(out.String(), 3000))
	}
	got := out.String()
	if !strings.Contains(got, "3 myses earned credits") {
		t.Fatalf("swarm did not report three earners:\n%s", tail(got, 3000))
	}
	for _, svc := range []string{"runner", "bus", "spacemolt-sim", "composer", "memory"} {
		if !strings.Contains(got, svc+": stopped\n") {
			t.Errorf("%s did not stop cleanly:\n%s", svc, tail(got, 1500))
		}
	}
	t.Logf("three myses earned credits %s after start", time.Since(began).Round(time.Second))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
