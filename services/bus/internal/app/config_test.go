package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/bus/internal/app"
)

func TestLoadConfigDefaultsAndOverrides(t *testing.T) {
	for _, k := range []string{"ZOEA_LISTEN_ADDR", "ZOEA_NATS_URL", "ZOEA_MEMORY_ADDR", "ZOEA_ADMIN_TOKEN", "ZOEA_ALLOW_MYSIS_BROADCAST", "ZOEA_SHUTDOWN_TIMEOUT"} {
		t.Setenv(k, "")
	}
	cfg, err := app.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.ListenAddr != ":7004" || cfg.NATSURL != "nats://127.0.0.1:4222" || cfg.MemoryAddr != "127.0.0.1:7001" ||
		cfg.AllowMysisBroadcast || cfg.Server.AdminToken != "" || cfg.Server.ShutdownTimeout != 10*time.Second {
		t.Fatalf("defaults = %+v", cfg)
	}
	t.Setenv("ZOEA_LISTEN_ADDR", "127.0.0.1:9004")
	t.Setenv("ZOEA_ALLOW_MYSIS_BROADCAST", "true")
	t.Setenv("ZOEA_ADMIN_TOKEN", "tok")
	if cfg, err = app.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	if cfg.Server.ListenAddr != "127.0.0.1:9004" || !cfg.AllowMysisBroadcast || cfg.Server.AdminToken.Reveal() != "tok" {
		t.Fatalf("overrides = %+v", cfg)
	}
	t.Setenv("ZOEA_ALLOW_MYSIS_BROADCAST", "maybe")
	if _, err := app.LoadConfig(); err == nil {
		t.Fatal("a malformed boolean was accepted")
	}
}

// ZOEA_SWARM names the swarm's NATS resources: empty by default (today's names), checked at load with an error that
// names the variable.
func TestLoadConfigSwarm(t *testing.T) {
	t.Setenv("ZOEA_SWARM", "")
	cfg, err := app.LoadConfig()
	if err != nil || cfg.Swarm != "" {
		t.Fatalf("default swarm = %q, %v; want empty", cfg.Swarm, err)
	}
	t.Setenv("ZOEA_SWARM", "alpha-1")
	if cfg, err = app.LoadConfig(); err != nil || cfg.Swarm != "alpha-1" {
		t.Fatalf("swarm = %q, %v; want alpha-1", cfg.Swarm, err)
	}
	for _, bad := range []string{"Alpha", "a.b", "a>", "-a"} {
		t.Setenv("ZOEA_SWARM", bad)
		if _, err := app.LoadConfig(); err == nil || !strings.Contains(err.Error(), "ZOEA_SWARM") {
			t.Errorf("ZOEA_SWARM=%q: %v, want an error naming ZOEA_SWARM", bad, err)
		}
	}
}
