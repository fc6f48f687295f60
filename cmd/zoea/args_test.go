package main

import (
	"strings"
	"testing"
)

// Wrong argument counts are sentences that name the command, what it wants and its usage, never cobra's
// "requires at least 1 arg(s)"; a flag value that does not parse says what the flag takes.
func TestArgumentCountsAreExplained(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"broadcast"}, "broadcast needs the mission text (usage: zoea broadcast TEXT [flags])"},
		{[]string{"send", "scout-1"}, "send needs a mysis and the message text (usage: zoea send MYSIS TEXT [flags])"},
		{[]string{"stop"}, "stop needs one mysis, by name or id (usage: zoea stop MYSIS [flags])"},
		{[]string{"get", "scout", "1"}, `get takes one mysis, by name or id, got 2 arguments ["scout" "1"]; put quotes around text with spaces`},
		{[]string{"create"}, "create needs the new mysis's name"},
		{[]string{"list", "all"}, `list takes no arguments, got ["all"] (usage: zoea list [flags])`},
		{[]string{"search", "scout-1", "iron", "ore"}, "search takes a mysis and a query, or with --broadcasts a query alone, got 3 arguments"},
		{[]string{"limits"}, "limits needs a mysis and, to set them, the limits (usage: zoea limits MYSIS"},
		{[]string{"usage", "--since", "5x"}, `--since: "5x" is not a duration such as 30s, 15m or 2h`},
		{[]string{"usage", "--top", "101"}, `--top: 101 is not between 1 and 100`},
		{[]string{"usage", "--top", "0"}, `--top: 0 is not between 1 and 100`},
		{[]string{"usage", "--top", "5", "--by", "model"}, `--top ranks myses by cost: use it with --by mysis`},
		{[]string{"usage", "--page-size", "0"}, `--page-size: 0 is not between 1 and 1000`},
		{[]string{"history", "scout-1", "--limit", "ten"}, `--limit: "ten" is not a whole number`},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus (zoea list --help lists the flags)"},
	} {
		root := newRoot("test")
		root.SetArgs(tc.args)
		root.SetOut(new(strings.Builder))
		root.SetErr(new(strings.Builder))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "arg(s)") {
			t.Errorf("zoea %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
