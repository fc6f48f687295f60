package replaybench

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// lenCounter counts one token per byte, so expected values can be worked out by hand.
type lenCounter struct{}

func (lenCounter) Count(s string) int { return len(s) }

func TestMessageAndHistoryTokens(t *testing.T) {
	tok := lenCounter{}
	call := chat.Message{Role: chat.RoleAssistant, Content: "ok", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "mine", Arguments: "{}"}}}
	// 4 framing + 2 content + (4 framing + 2 id + 4 name + 2 args)
	if got := MessageTokens(tok, call); got != 4+2+4+2+4+2 {
		t.Fatalf("assistant with call: %d tokens", got)
	}
	res := chat.Message{Role: chat.RoleTool, Content: "abc", ToolCallID: "c1", Name: "mine"}
	if got := MessageTokens(tok, res); got != 4+3+2+4 {
		t.Fatalf("tool result: %d tokens", got)
	}
	if got := HistoryTokens(tok, []chat.Message{call, res}); got != 3+18+13 {
		t.Fatalf("history: %d tokens", got)
	}
	tools := []ToolDef{{Name: "mine", Description: "Mine.", Parameters: "{}"}}
	js := `{"type":"function","function":{"name":"mine","description":"Mine.","parameters":{}}}`
	if got := tools[0].JSON(); got != js {
		t.Fatalf("tool JSON %s, want %s", got, js)
	}
	if got := ToolTokens(tok, tools); got != 4+len(js) {
		t.Fatalf("tools: %d tokens", got)
	}
}

func TestCachedPrefix(t *testing.T) {
	tok := lenCounter{}
	sys := chat.Message{Role: chat.RoleSystem, Content: "sys"}    // 7
	u := chat.Message{Role: chat.RoleUser, Content: "go"}         // 6
	a := chat.Message{Role: chat.RoleAssistant, Content: "hello"} // 9
	b := chat.Message{Role: chat.RoleAssistant, Content: "hellO"} // 9, differs from a
	c := chat.Message{Role: chat.RoleUser, Content: "more"}       // 8
	withCall := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "1", Name: "x", Arguments: "{}"}}}
	otherCall := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "1", Name: "x", Arguments: `{"a":1}`}}}

	cases := []struct {
		name      string
		prev, cur []chat.Message
		want      int
	}{
		{"first request caches nothing", nil, []chat.Message{sys, u}, 0},
		{"pure extension: all of prev", []chat.Message{sys, u}, []chat.Message{sys, u, a}, 100 + 7 + 6},
		{"identical request", []chat.Message{sys, u, a}, []chat.Message{sys, u, a}, 100 + 7 + 6 + 9},
		{"rewritten middle stops the prefix", []chat.Message{sys, u, a, c}, []chat.Message{sys, u, b, c}, 100 + 7 + 6},
		{"shrunk request: only the common head", []chat.Message{sys, u, a, c}, []chat.Message{sys, u}, 100 + 7 + 6},
		{"tools and a changed system prompt", []chat.Message{sys}, []chat.Message{{Role: chat.RoleSystem, Content: "SYS"}}, 100},
		{"tool call arguments are compared", []chat.Message{sys, u, withCall}, []chat.Message{sys, u, otherCall}, 100 + 7 + 6},
	}
	for _, tc := range cases {
		if got := CachedPrefix(tok, 100, tc.prev, tc.cur); got != tc.want {
			t.Errorf("%s: prefix %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestBilling(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	cases := []struct {
		total, prefix int
		a, b          float64
	}{
		{900, 0, 900, 900},                           // below the minimum: never cached, no write premium
		{900, 800, 900, 0.5*800 + 100},               // (a) still uncached below 1,024; (b) has no minimum
		{2000, 0, 1.25 * 2000, 2000},                 // cold: all written
		{2000, 1000, 1.25 * 2000, 0.5*1000 + 1000},   // a shared prefix below 1,024 reads nothing
		{2000, 1024, 0.1*1024 + 1.25*976, 512 + 976}, // exactly at the minimum: read
		{3000, 3000, 0.1 * 3000, 1500},               // identical request: all read
		{5000, 4000, 0.1*4000 + 1.25*1000, 2000 + 1000},
	}
	for _, c := range cases {
		if got := BilledAnthropic(c.total, c.prefix); !near(got, c.a) {
			t.Errorf("BilledAnthropic(%d, %d) = %v, want %v", c.total, c.prefix, got, c.a)
		}
		if got := BilledOpenAI(c.total, c.prefix); !near(got, c.b) {
			t.Errorf("BilledOpenAI(%d, %d) = %v, want %v", c.total, c.prefix, got, c.b)
		}
	}
}

func row(seq int64, role chat.Role, src compose.Source, content string) compose.Memory {
	return compose.Memory{ID: seq, Seq: seq, Role: role, Source: src, Content: content}
}

func result(seq int64, id, name, content string) compose.Memory {
	return compose.Memory{ID: seq, Seq: seq, Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: id, ToolName: name, Content: content}
}

func TestCoverage(t *testing.T) {
	rows := []compose.Memory{
		row(1, chat.RoleUser, compose.SourceBroadcast, "Commander: old mission"),
		result(2, "c0", "login", "session"), // before the newest commander prompt: not a case
		row(3, chat.RoleUser, compose.SourceDirect, "Commander: mine"),
		result(4, "c1", "get_status", "status-old"),
		result(5, "c2", "view_market", "market"),
		row(6, chat.RoleUser, compose.SourceNudge, "Continue"), // a nudge does not reset the span
		result(7, "c3", "get_status", "status-new"),
		result(8, "c4", "mine", "mined"),
	}
	tool := func(id, content string) chat.Message {
		return chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: content}
	}
	cases := []struct {
		name           string
		msgs           []chat.Message
		cases, covered int
	}{
		{"all newest results in full", []chat.Message{tool("c2", "market"), tool("c3", "status-new"), tool("c4", "mined")}, 3, 3},
		{"only the superseded get_status", []chat.Message{tool("c1", "status-old"), tool("c2", "market"), tool("c4", "mined")}, 3, 2},
		{"stubbed or truncated is not in full", []chat.Message{tool("c2", "mar…[truncated]"), tool("c3", "status-new"), tool("c4", "[stub]")}, 3, 1},
		{"nothing sent", nil, 3, 0},
	}
	for _, c := range cases {
		n, k := Coverage(rows, c.msgs)
		if n != c.cases || k != c.covered {
			t.Errorf("%s: %d/%d, want %d/%d", c.name, k, n, c.covered, c.cases)
		}
	}
	// A swarm broadcast from another mysis is not a commander prompt: the span still starts at row 3.
	other := append(rows[:len(rows):len(rows)], compose.Memory{ID: 9, Seq: 9, Role: chat.RoleUser, Source: compose.SourceBroadcast, SenderID: "mysis-2", Content: "hi"})
	if n, _ := Coverage(other, nil); n != 3 {
		t.Errorf("after a swarm broadcast: %d cases, want 3", n)
	}
	if got := StateRows(rows); !slices.Equal(got, []int{4, 6, 7}) {
		t.Errorf("state rows %v, want [4 6 7] (view_market, newest get_status, mine)", got)
	}
	// Inside the current turn (since the nudge at row 6) only get_status and mine count.
	if n, k := TurnCoverage(rows, []chat.Message{tool("c1", "status-old"), tool("c4", "mined")}); n != 2 || k != 1 {
		t.Errorf("turn coverage %d/%d, want 1/2", k, n)
	}
	if n, _ := Coverage(rows[:3], nil); n != 0 {
		t.Errorf("no tool called since the prompt: %d cases, want 0", n)
	}
}

func TestMissionPresent(t *testing.T) {
	rows := []compose.Memory{
		row(1, chat.RoleUser, compose.SourceBroadcast, "Commander: old"),
		row(2, chat.RoleUser, compose.SourceDirect, "Commander: new"),
		row(3, chat.RoleUser, compose.SourceNudge, "Continue"),
	}
	if p, ok := MissionPresent(rows, []chat.Message{{Role: chat.RoleUser, Content: "Mission: Commander: new"}}); !p || !ok {
		t.Error("wrapped mission text not found")
	}
	if p, ok := MissionPresent(rows, []chat.Message{{Role: chat.RoleUser, Content: "Commander: old"}}); p || !ok {
		t.Error("an older mission counted as present")
	}
	if p, _ := MissionPresent(rows, []chat.Message{{Role: chat.RoleAssistant, Content: "Commander: new"}}); p {
		t.Error("mission text in an assistant message counted")
	}
	if _, ok := MissionPresent(rows[2:], nil); ok {
		t.Error("no commander prompt, yet a mission case")
	}
}

func TestTargets(t *testing.T) {
	v1 := Stats{System: "Zoea v1", Requests: 100, BilledA: 100_000}
	v2 := Stats{System: "Zoea v2", Requests: 100, HistSum: 290_000, CovCases: 1000, Covered: 975, BilledA: 74_000}
	var b strings.Builder
	Result{Budget: 8192, Stats: []Stats{v1, v2}}.Targets(&b)
	out := b.String()
	for _, want := range []string{
		"| 97.5% at 2,900 tokens | **met** |",
		"| 0 invalid OpenAI, 0 invalid Anthropic, 0 refused | **met** |",
		"| 0 of 100 requests over 8,192 tokens | **met** |",
		"| -26.0% per request (740 vs 1,000) | **met** |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("targets lack %q:\n%s", want, out)
		}
	}
	v2.Covered, v2.OverBudget, v2.Errors, v2.BilledA = 960, 1, 1, 80_000
	b.Reset()
	Result{Budget: 8192, Stats: []Stats{v1, v2}}.Targets(&b)
	if n := strings.Count(b.String(), "**missed**"); n != 4 {
		t.Errorf("%d targets missed, want 4:\n%s", n, b.String())
	}
}
