package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/telemetry"
)

// Subcommand picks a service command's subcommand: the first argument, or "serve" when there is none or the first
// is a flag, and the arguments after it. One that is not in known is an error naming them.
func Subcommand(service string, args []string, known ...string) (cmd string, rest []string, err error) {
	cmd, rest = "serve", args
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, rest = args[0], args[1:]
	}
	if !slices.Contains(known, cmd) {
		return "", nil, fmt.Errorf("unknown command %q (usage: %s [%s])", cmd, service, strings.Join(known, " | "))
	}
	return cmd, rest, nil
}

// Start is what every service's Main does before Run: the JSON logger at sc.LogLevel on stderr (also slog's
// default), redacting every secret of cfg wherever a record quotes it (config.Secrets, libs/redact; redact.Of on
// the logger's handler finds the redactor, to teach it secrets learnt later), the version and the configuration cfg logged (secrets masked, config.Log), the debug listener when
// sc.DebugAddr is set (ServeDebug: pprof on loopback; a non-loopback address is an error naming ZOEA_DEBUG_ADDR), and
// telemetry (OTLP when configured, telemetry.Setup). stop closes the debug listener and flushes and ends telemetry;
// call it when Run returns.
func Start(ctx context.Context, service, version string, sc Config, cfg any) (log *slog.Logger, stop func(), err error) {
	log = slog.New(redact.New(append(config.Secrets(sc), config.Secrets(cfg)...)...).Handler(NewLogger(os.Stderr, sc.LogLevel).Handler()))
	slog.SetDefault(log)
	log.Info(service, "version", version)
	config.Log(log, service+" starting", cfg)
	_, stopDebug, err := ServeDebug(sc.DebugAddr, log)
	if err != nil {
		return nil, nil, err
	}
	stopTelemetry, err := telemetry.Setup(ctx, service, version, log)
	if err != nil {
		stopDebug()
		return nil, nil, fmt.Errorf("telemetry: %w", err)
	}
	return log, func() { stopTelemetry(); stopDebug() }, nil
}
