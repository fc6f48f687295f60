package server

import (
	"io"
	"log/slog"
)

// NewLogger is every Zoea process's logger: JSON lines on w (stderr in production) at level, which services read
// from ZOEA_LOG_LEVEL (Config.LogLevel: debug, info, warn or error; default info). Main sets it as slog's default
// too, so packages that fall back to slog.Default() when given no logger log the same way.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
