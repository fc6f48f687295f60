package compose_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// hist builds a window the way the memory service numbers it: seq and id increase, and a user memory with source
// direct, broadcast or nudge opens a new turn.
type hist struct {
	rows          []compose.Memory
	seq, turn, id int64
}

func (h *hist) add(m compose.Memory) int64 {
	h.seq++
	h.id += 10
	m.Seq, m.ID = h.seq, h.id
	if m.Role == chat.RoleUser && (m.Source == compose.SourceDirect || m.Source == compose.SourceBroadcast || m.Source == compose.SourceNudge) {
		h.turn++
	}
	m.Turn = h.turn
	h.rows = append(h.rows, m)
	return m.ID
}

func (h *hist) user(src compose.Source, content string) int64 {
	return h.add(compose.Memory{Role: chat.RoleUser, Source: src, Content: content})
}

func (h *hist) text(content string) int64 {
	return h.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: content})
}

func (h *hist) calls(calls ...chat.ToolCall) int64 {
	return h.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, ToolCalls: calls, Reasoning: "hidden"})
}

func (h *hist) result(id, name, content string) int64 {
	return h.add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: id, ToolName: name, Content: content})
}

// loop adds one call and its result; ids derive from seq so they are unique.
func (h *hist) loop(name, args, result string) {
	id := fmt.Sprintf("call_%d", h.seq+1)
	h.calls(chat.ToolCall{ID: id, Name: name, Arguments: args})
	h.result(id, name, result)
}

func (h *hist) last(n int) []compose.Memory {
	if n >= len(h.rows) {
		return h.rows
	}
	return h.rows[len(h.rows)-n:]
}

const systemPrompt = "You are a mysis, an autonomous SpaceMolt pilot. Context is limited - use search tools for older information."

func mustCompose(t *testing.T, in compose.Input, p compose.Policy) compose.Result {
	t.Helper()
	res, err := compose.Compose(in, p)
	if err != nil {
		t.Fatalf("Compose: %v", err)
	}
	if res.Encouragement.Decision != compose.DecisionIdle {
		if err := chatvalid.Strict.Validate(res.Messages); err != nil {
			t.Fatalf("invalid output: %v\n%s", err, dump(res.Messages))
		}
		if res.Manifest.Tokens.Total > p.TokenBudget {
			t.Fatalf("over budget: %d > %d", res.Manifest.Tokens.Total, p.TokenBudget)
		}
	}
	return res
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// golden compares res with testdata/<name>.golden; go test -update rewrites it.
func golden(t *testing.T, name string, res compose.Result) {
	t.Helper()
	got := []byte(dump(res) + "\n")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s differs from golden file; run go test -update and review the diff\n%s", path, got)
	}
}

func roles(msgs []chat.Message) string {
	s := ""
	for _, m := range msgs {
		s += string(m.Role[0])
	}
	return s
}
