package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
)

func TestLogLevelFromTheEnvironment(t *testing.T) {
	var cfg server.Config
	if err := config.LoadWith(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LogLevel != slog.LevelInfo {
		t.Fatalf("default level %v, want info", cfg.LogLevel)
	}
	t.Setenv("ZOEA_LOG_LEVEL", "debug")
	if err := config.LoadWith(&cfg); err != nil || cfg.LogLevel != slog.LevelDebug {
		t.Fatalf("ZOEA_LOG_LEVEL=debug: %v, %v", cfg.LogLevel, err)
	}
	t.Setenv("ZOEA_LOG_LEVEL", "loud")
	if err := config.LoadWith(&cfg); err == nil || !strings.Contains(err.Error(), "ZOEA_LOG_LEVEL") {
		t.Fatalf("ZOEA_LOG_LEVEL=loud: %v, want an error naming the variable", err)
	}
}

func TestNewLoggerWritesJSONAtItsLevel(t *testing.T) {
	var buf bytes.Buffer
	log := server.NewLogger(&buf, slog.LevelWarn)
	log.Info("dropped")
	log.Warn("kept", "k", 1)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %q, want only the warning", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec["msg"] != "kept" || rec["level"] != "WARN" {
		t.Fatalf("record %q (%v)", lines[0], err)
	}
}
