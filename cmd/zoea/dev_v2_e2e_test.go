package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

// TestDevRunsALocalSwarmOnMCPv2: with ZOEA_SPACEMOLT_ENDPOINT=v2 the demo swarm plays the simulator's /mcp/v2 (16
// action tools) and its three autopilot myses earn credits there.
func TestDevRunsALocalSwarmOnMCPv2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service and runs a swarm")
	}
	t.Setenv("ZOEA_SPACEMOLT_ENDPOINT", "v2")
	bin := buildServices(t, false)
	o := &devOptions{
		bin: bin, stateDir: t.TempDir(), databaseURL: pgtest.New(t),
		natsURL:  "nats://" + freeAddr(t), // its own embedded JetStream, as in TestDevRunsALocalSwarm
		provider: "autopilot", addrs: freeAddrs(t), tick: time.Second, turnPause: time.Second,
		myses: 3, mission: defaultMission, duration: 2 * time.Minute, minEarners: 3, quiet: true,
	}
	out := &milestones{t: t, tag: "v2:", changed: make(chan struct{}, 1)}
	if err := runDev(context.Background(), o, out); err != nil {
		t.Fatalf("zoea dev: %v\n%s", err, tail(out.String(), 3000))
	}
	if got := out.String(); !strings.Contains(got, "3 myses earned credits") {
		t.Fatalf("swarm did not report three earners on /mcp/v2:\n%s", tail(got, 3000))
	}
	runnerLog, err := os.ReadFile(filepath.Join(o.stateDir, "logs", "runner.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(runnerLog, []byte("/mcp/v2")) {
		t.Fatalf("the runner did not play /mcp/v2:\n%s", tail(string(runnerLog), 2000))
	}
}
