package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// This file is the hook between `zoea dev` and the console; dev.go only calls devView.

// A view runs until ctx ends: Ctrl-C, --duration, or a service that died for good (failure(ctx) says which).
// notices are the launcher's lines for the commander (a service started again), which the console shows in its
// status line; plain progress prints them itself.
type devViewFunc func(ctx context.Context, c *clients, o *devOptions, out io.Writer, notices <-chan string) error

// devView picks how `zoea dev` shows the swarm it started: the console (`zoea tui`) when stdout is a terminal and
// --quiet is not set, so the swarm can be watched and commanded in one window; otherwise plain progress lines,
// with no clear-screen codes, for pipes, log files and CI.
func devView(o *devOptions, out io.Writer) devViewFunc {
	if !o.quiet && o.minEarners == 0 && isTerminal(out) {
		return devConsole
	}
	o.quiet = true
	return watchProgress
}

// devConsole runs the console until the commander quits (q), Ctrl-C, or a service dies for good, which it reports.
func devConsole(ctx context.Context, c *clients, o *devOptions, _ io.Writer, notices <-chan string) error {
	err := runConsole(ctx, c, fmt.Sprintf("Zoea local swarm (%s, logs in %s)", o.provider, filepath.Join(o.stateDir, "logs")),
		&endpoints{timeout: 30 * time.Second}, notices)
	if cause := failure(ctx); cause != nil {
		return cause
	}
	return err
}

// failure is why ctx ended when that was not Ctrl-C, SIGTERM or --duration: a service that died for good.
func failure(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return nil
}

// noticeWriter sends each line written to it to a channel, dropping lines while the channel is full (the console
// shows the newest in its status line).
type noticeWriter chan string

func (w noticeWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		select {
		case w <- line:
		default:
		}
	}
	return len(b), nil
}
