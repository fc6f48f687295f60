package main

import (
	"context"
	"strings"
	"testing"
)

func TestRunRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-sessions", "0"}, "-sessions must be at least 1"},
		{[]string{"-calls", "-3"}, "-calls must be at least 1"},
		{[]string{"-budget", "-1"}, "-budget must not be negative"},
		{[]string{"-bogus"}, "flag provided but not defined"},
		{[]string{"-diagnose", "-shape", "odd"}, `-shape "odd": use short, long, mixed or all`},
		{[]string{"-v3-cache", "azure"}, `-v3-cache "azure": use anthropic, openai, local or none`},
	} {
		err := run(context.Background(), c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%v) = %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

func TestRunSmallReplay(t *testing.T) {
	if err := run(context.Background(), []string{"-sessions", "1", "-calls", "20", "-only", "zoea", "-personalities"}); err != nil {
		t.Fatal(err)
	}
}

func TestRunSmallDiagnosis(t *testing.T) {
	if err := run(context.Background(), []string{"-diagnose", "-sessions", "1", "-calls", "20", "-shape", "short", "-v3-cache", "openai"}); err != nil {
		t.Fatal(err)
	}
}
