package app

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/window"
)

func TestConfigDefaultsAreComposeDefaults(t *testing.T) {
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.ListenAddr != ":7002" || cfg.MemoryAddr != "127.0.0.1:7001" {
		t.Fatalf("addresses %q %q", cfg.Server.ListenAddr, cfg.MemoryAddr)
	}
	if cfg.CarryCacheBytes != window.DefaultCarryCacheBytes || carryCacheOption(0) >= 0 {
		t.Fatalf("carry cache %d bytes by default (want %d); 0 must hold none", cfg.CarryCacheBytes, window.DefaultCarryCacheBytes)
	}
	if got, want := cfg.Policy.policy(), compose.DefaultPolicy(); !reflect.DeepEqual(got, want) {
		t.Fatalf("default policy\n got %+v\nwant %+v", got, want)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("ZOEA_LISTEN_ADDR", "127.0.0.1:9")
	t.Setenv("ZOEA_MEMORY_ADDR", "memory:7001")
	t.Setenv("ZOEA_ADMIN_TOKEN", "s3cret")
	t.Setenv("ZOEA_COMPOSE_TOKEN_BUDGET", "4000")
	t.Setenv("ZOEA_COMPOSE_SCAN_WINDOW", "30")
	t.Setenv("ZOEA_COMPOSE_SNAPSHOT_TOOLS", "get_status,get_ship")
	t.Setenv("ZOEA_COMPOSE_MISSION_FALLBACK", "false")
	t.Setenv("ZOEA_COMPOSE_NUDGE_URGENT", "Now!")
	t.Setenv("ZOEA_COMPOSE_HIGH_WATER", "3000")
	t.Setenv("ZOEA_COMPOSE_CARRY_LIMIT", "12")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy.policy()
	if cfg.Server.ListenAddr != "127.0.0.1:9" || cfg.MemoryAddr != "memory:7001" || cfg.Server.AdminToken.Reveal() != "s3cret" ||
		p.TokenBudget != 4000 || p.ScanWindow != 30 || !reflect.DeepEqual(p.SnapshotTools, []string{"get_status", "get_ship"}) ||
		!p.DisableMissionFallback || p.Nudges.Urgent != "Now!" || p.Nudges.Gentle != compose.DefaultPolicy().Nudges.Gentle ||
		p.HighWater != 3000 || p.CarryLimit != 12 || p.CompactStep != compose.DefaultPolicy().CompactStep {
		t.Fatalf("config %+v policy %+v", cfg, p)
	}
	if s := cfg.Server.AdminToken.String(); s != "****" {
		t.Fatalf("token printed as %q", s)
	}
	t.Setenv("ZOEA_COMPOSE_TOKEN_BUDGET", "lots")
	if _, err := LoadConfig(); err == nil {
		t.Fatal("an unparsable budget was accepted")
	}
}

func TestConfigCompactionAndCacheModel(t *testing.T) {
	t.Setenv("ZOEA_COMPOSE_COMPACTION", "watermark")
	t.Setenv("ZOEA_COMPOSE_CACHE_MODEL", "openai")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Policy.policy(); p.Compaction != compose.CompactionWatermark || p.Cache != compose.CacheOpenAI {
		t.Fatalf("compaction %q, cache %+v", p.Compaction, p.Cache)
	}
	t.Setenv("ZOEA_COMPOSE_CACHE_MODEL", "cheap")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "ZOEA_COMPOSE_CACHE_MODEL") {
		t.Fatalf("an unknown cache model: %v", err)
	}
	t.Setenv("ZOEA_COMPOSE_CACHE_MODEL", "")
	t.Setenv("ZOEA_COMPOSE_COMPACTION", "sometimes")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "ZOEA_COMPOSE_COMPACTION") {
		t.Fatalf("an unknown compaction: %v", err)
	}
}
