package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
)

// goroutineTotal asks the debug listener at addr for the goroutine profile's first line.
func goroutineTotal(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + server.DebugPath + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("goroutine profile: %s", resp.Status)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// The debug listener serves the goroutine profile on loopback, on its own mux, and stop closes it.
func TestServeDebugServesGoroutineProfile(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		bound, stop, err := server.ServeDebug(addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if !bound.(*net.TCPAddr).IP.IsLoopback() {
			t.Fatalf("%s bound %s", addr, bound)
		}
		if line := goroutineTotal(t, bound.String()); !strings.HasPrefix(line, "goroutine profile: total ") {
			t.Fatalf("%s: first line %q", addr, line)
		}
		// Only pprof is served there.
		resp, err := http.Get("http://" + bound.String() + server.HealthPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s%s: %s, want 404", bound, server.HealthPath, resp.Status)
		}
		stop()
		if _, err := net.Dial("tcp", bound.String()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("after stop, dialling %s: %v, want connection refused", bound, err)
		}
	}
}

// A debug address that is not loopback is a configuration error naming ZOEA_DEBUG_ADDR, and nothing listens.
func TestServeDebugRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{":6060", "0.0.0.0:6060", "[::]:6060", "10.1.2.3:6060", "192.168.0.1:0", "example.com:6060", "127.0.0.1"} {
		bound, stop, err := server.ServeDebug(addr, nil)
		if err == nil || !strings.Contains(err.Error(), "ZOEA_DEBUG_ADDR") {
			t.Errorf("ServeDebug(%q) = %v, %v; want an error naming ZOEA_DEBUG_ADDR", addr, bound, err)
			if stop != nil {
				stop()
			}
		}
		if err := server.CheckDebugAddr(addr); err == nil {
			t.Errorf("CheckDebugAddr(%q) accepted it", addr)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:6060", "127.9.9.9:1", "[::1]:6060", "localhost:6060"} {
		if err := server.CheckDebugAddr(addr); err != nil {
			t.Errorf("CheckDebugAddr(%q): %v", addr, err)
		}
	}
}

// Off by default: the variable unset loads as empty, and an empty address listens nowhere.
func TestDebugOffByDefault(t *testing.T) {
	t.Setenv("ZOEA_DEBUG_ADDR", "")
	os.Unsetenv("ZOEA_DEBUG_ADDR")
	var cfg server.Config
	if err := config.LoadWith(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.DebugAddr != "" {
		t.Fatalf("default ZOEA_DEBUG_ADDR = %q, want empty", cfg.DebugAddr)
	}
	bound, stop, err := server.ServeDebug(cfg.DebugAddr, nil)
	if err != nil || bound != nil {
		t.Fatalf("ServeDebug(\"\") = %v, %v; want no listener", bound, err)
	}
	stop()
}

// Start opens the debug listener from the config, prints ZOEA_DEBUG_ADDR with the other settings, logs the bound
// address, and its stop closes the listener; a non-loopback address stops the start naming the variable.
func TestStartDebugListener(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	before, stderr := slog.Default(), os.Stderr
	t.Cleanup(func() { slog.SetDefault(before); os.Stderr = stderr })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	os.Stderr = w
	type svcConfig struct{ Server server.Config }
	sc := server.Config{LogLevel: slog.LevelInfo, DebugAddr: "127.0.0.1:0"}
	_, stop, err := server.Start(context.Background(), "svc", "v1", sc, svcConfig{sc})
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	// Read the log up to the listening line: the printout of the settings comes before it.
	var printed bool
	var addr string
	sc2 := bufio.NewScanner(r)
	for addr == "" && sc2.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc2.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc2.Text(), err)
		}
		switch line["msg"] {
		case "svc starting":
			printed = line["ZOEA_DEBUG_ADDR"] == "127.0.0.1:0"
		case "debug server listening":
			addr, _ = line["addr"].(string)
		}
	}
	if !printed {
		t.Error("ZOEA_DEBUG_ADDR is not in the settings printed at start")
	}
	if addr == "" {
		t.Fatal("no \"debug server listening\" line with the address")
	}
	if line := goroutineTotal(t, addr); !strings.HasPrefix(line, "goroutine profile: total ") {
		t.Fatalf("first line %q", line)
	}
	stop()
	w.Close()
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after stop, dialling %s: %v, want connection refused", addr, err)
	}

	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	os.Stderr = null
	sc.DebugAddr = "0.0.0.0:0"
	if _, _, err := server.Start(context.Background(), "svc", "v1", sc, svcConfig{sc}); err == nil || !strings.Contains(err.Error(), "ZOEA_DEBUG_ADDR") {
		t.Fatalf("Start with ZOEA_DEBUG_ADDR=0.0.0.0:0: %v, want an error naming ZOEA_DEBUG_ADDR", err)
	}
}

// The debug listener serves every published cache's fill, sorted by name, until it is unpublished.
func TestServeDebugServesPublishedCaches(t *testing.T) {
	bound, stop, err := server.ServeDebug("127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	read := func() []server.CacheFill {
		t.Helper()
		resp, err := http.Get("http://" + bound.String() + server.CachesPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []server.CacheFill
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	size := int64(3)
	unpublish := server.PublishCaches(func() []server.CacheFill {
		return []server.CacheFill{{Name: "zz-test-tokens", Unit: "entries", Size: size, Bound: 10}, {Name: "aa-test-windows", Unit: "bytes", Size: 7, Bound: 64}}
	})
	got := read()
	var names []string
	for _, c := range got {
		if strings.HasSuffix(c.Name, "-test-tokens") || strings.HasSuffix(c.Name, "-test-windows") {
			names = append(names, c.Name)
		}
	}
	if strings.Join(names, ",") != "aa-test-windows,zz-test-tokens" {
		t.Fatalf("published caches served as %v (all: %+v), want aa-test-windows then zz-test-tokens", names, got)
	}
	unpublish()
	for _, c := range read() {
		if strings.HasSuffix(c.Name, "-test-tokens") {
			t.Fatalf("%s still served after unpublish", c.Name)
		}
	}
}
