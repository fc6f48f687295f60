package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/server"
)

func TestSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		cmd      string
		rest     string
		errMatch string
	}{
		{nil, "serve", "[]", ""},
		{[]string{"-migrate"}, "serve", "[-migrate]", ""},
		{[]string{"healthcheck"}, "healthcheck", "[]", ""},
		{[]string{"serve", "-migrate"}, "serve", "[-migrate]", ""},
		{[]string{"dance"}, "", "", `unknown command "dance" (usage: svc [serve | healthcheck])`},
	} {
		cmd, rest, err := server.Subcommand("svc", tc.args, "serve", "healthcheck")
		if tc.errMatch != "" {
			if err == nil || err.Error() != tc.errMatch {
				t.Errorf("Subcommand(%q) = %v, want %q", tc.args, err, tc.errMatch)
			}
			continue
		}
		if err != nil || cmd != tc.cmd || strings.Join([]string{"[", strings.Join(rest, " "), "]"}, "") != tc.rest {
			t.Errorf("Subcommand(%q) = %q %q %v, want %q %s", tc.args, cmd, rest, err, tc.cmd, tc.rest)
		}
	}
}

// Start sets the process's logger as slog's default and returns a stop that can be called (telemetry is off here).
func TestStart(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	before := slog.Default()
	t.Cleanup(func() { slog.SetDefault(before) })
	log, stop, err := server.Start(context.Background(), "svc", "v1", server.Config{LogLevel: slog.LevelWarn}, struct{ Addr string }{":1"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if slog.Default() != log || log.Enabled(context.Background(), slog.LevelInfo) || !log.Enabled(context.Background(), slog.LevelWarn) {
		t.Fatal("Start's logger is not slog's default at the given level")
	}
}

// Start's logger knows the configuration's secrets: a record that quotes one (a peer's error echoing the admin
// token) is written with it redacted, and the wiring can teach it more.
func TestStartRedactsConfiguredSecrets(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	before := slog.Default()
	t.Cleanup(func() { slog.SetDefault(before) })
	token := "admin-token-4f0c3a5e"
	log, stop, err := server.Start(context.Background(), "svc", "v1", server.Config{LogLevel: slog.LevelWarn, AdminToken: config.Secret(token)}, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r := redact.Of(log.Handler())
	if r == nil {
		t.Fatal("Start's logger does not redact")
	}
	if got := r.String("peer said: unknown token " + token); strings.Contains(got, token) {
		t.Errorf("the admin token is not known: %q", got)
	}
}
