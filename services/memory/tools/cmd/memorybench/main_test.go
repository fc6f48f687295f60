package main

import (
	"context"
	"strings"
	"testing"
)

func TestRunRejectsBadCommands(t *testing.T) {
	ctx := context.Background()
	if err := run(ctx, nil); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("no command: %v", err)
	}
	if err := run(ctx, []string{"frobnicate"}); err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("unknown command: %v", err)
	}
	if err := run(ctx, []string{"seed", "-long", "x"}); err == nil || !strings.Contains(err.Error(), "-long") {
		t.Fatalf("bad seed flag: %v", err)
	}
	if err := run(ctx, []string{"help"}); err != nil {
		t.Fatalf("help: %v", err)
	}
}
