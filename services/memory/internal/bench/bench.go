// Package bench seeds a database with synthetic SpaceMolt-like history and measures the memory store against it.
package bench

import (
	"context"
	"errors"
	"log/slog"
)

// BenchMain runs `memory bench`.
func BenchMain(ctx context.Context, log *slog.Logger, dbURL string, args []string) error {
	return errors.New("not yet")
}
