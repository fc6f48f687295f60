package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/config"
)

func TestConfigFromEnv(t *testing.T) {
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.ListenAddr != ":7100" || cfg.Server.ShutdownTimeout != 10*time.Second || cfg.Tick != 10*time.Second || cfg.SessionTTL != 30*time.Minute ||
		cfg.MutationsPerMinute != 30 || cfg.ReadsPerMinute != 300 || cfg.ChatPerMinute != 20 {
		t.Fatalf("defaults = %+v", cfg)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"ZOEA_SIM_TICK": "5ms", "ZOEA_SIM_SEED": "9", "ZOEA_SIM_REGISTRATION_CODE": "hunter2", "ZOEA_SIM_READS_PER_MIN": "-1",
	} {
		t.Setenv(k, v)
	}
	cfg, err = LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tick != 5*time.Millisecond || cfg.Seed != 9 || cfg.ReadsPerMinute != -1 {
		t.Fatalf("parsed = %+v", cfg)
	}
	if logged := fmt.Sprint(config.Attrs(cfg)...); strings.Contains(logged, "hunter2") || !strings.Contains(logged, "****") {
		t.Fatalf("registration code not masked: %s", logged)
	}
	cfg.Tick = 0
	if cfg.validate() == nil {
		t.Fatal("zero tick accepted")
	}
	t.Setenv("ZOEA_SIM_TICK", "soon")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "ZOEA_SIM_TICK") {
		t.Fatalf("an unparseable tick must be named in the error, got %v", err)
	}
}

// Run, as production wires it, on a loopback listener the test holds: the healthcheck subcommand passes against it,
// and when ctx ends it shuts down through libs/server and saves the universe, which the next start continues.
func TestRunServesAndSavesAtShutdown(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 5
	cfg.StateFile = filepath.Join(t.TempDir(), "sim-state.json")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, Options{Logger: log, Listener: lis}) }()
	// The listener is bound before Run starts: the probe's connection waits in its backlog until Run serves.
	t.Setenv("ZOEA_LISTEN_ADDR", lis.Addr().String())
	if err := Main(context.Background(), []string{"healthcheck"}, "test"); err != nil {
		t.Fatalf("healthcheck of a running simulator: %v", err)
	}
	// The HTTP API v2 is mounted beside MCP: a session is created.
	resp, err := http.Post("http://"+lis.Addr().String()+"/api/v2/session", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"session":{"id":"`) {
		t.Fatalf("POST /api/v2/session: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(cfg.StateFile); err != nil {
		t.Fatalf("no state saved at shutdown: %v", err)
	}
	// The saved universe is the one the next start continues: one of another seed is refused.
	cfg.Seed = 6
	if err := Run(context.Background(), cfg, Options{Logger: log}); err == nil || !strings.Contains(err.Error(), "ZOEA_SIM_SEED=5") {
		t.Fatalf("a start with another seed over the saved universe: %v", err)
	}
	t.Setenv("ZOEA_LISTEN_ADDR", "127.0.0.1:1")
	if err := Main(context.Background(), []string{"healthcheck"}, "test"); err == nil {
		t.Fatal("healthcheck of a closed port passed")
	}
	if err := Main(context.Background(), []string{"frobnicate"}, "test"); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}

// TestStateFileCarriesAccountsAcrossRuns is what a restart does: open (fresh), play, save at shutdown, open again.
func TestStateFileCarriesAccountsAcrossRuns(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{Seed: 5, Tick: time.Second, SessionTTL: time.Minute, MutationsPerMinute: -1, ReadsPerMinute: -1,
		ChatPerMinute: -1, StateFile: filepath.Join(t.TempDir(), ".zoea", "sim-state.json"), SaveInterval: time.Second}
	first, err := openEngine(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := first.Register("mysis-1", "solarian", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := save(first, cfg.StateFile); err != nil {
		t.Fatal(err)
	}
	second, err := openEngine(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Login("mysis-1", reg.Password); err != nil {
		t.Fatalf("the account did not survive the restart: %v", err)
	}
	cfg.Seed = 6
	if _, err := openEngine(cfg, log); err == nil || !strings.Contains(err.Error(), "ZOEA_SIM_SEED=5") {
		t.Fatalf("a state file of another seed must stop the start, got %v", err)
	}
}
