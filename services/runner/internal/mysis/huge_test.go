package mysis

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// A model that answers with 5 MB (issue 26, item 8): the reply is stored cut to chat.MaxReplyBytes with a note, a
// call with 5 MB of arguments is not run but answered with a tool error the model can read, and the mysis goes on
// (the memory service, here its fake, refuses anything larger: the reply would otherwise fail the turn).
func TestHugeReplyIsStoredBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{TurnPause: time.Hour})
		huge := strings.Repeat("ore ", 5<<20/4)
		h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
			switch n {
			case 0:
				return llm.Response{Message: chat.Message{Role: chat.RoleAssistant, Content: huge,
					ToolCalls: []chat.ToolCall{call("a", "sell", `{"note":"`+huge+`"}`), call("b", "get_status", `{}`)}}, Reasoning: huge}, nil
			case 1:
				return reply(huge), nil
			}
			return reply("done"), nil
		}
		h.start()
		h.eventually("the turn finished", func() bool { return h.actor.Status().Turns >= 1 })
		h.stop()

		total := 0
		var asst []Memory
		var results = map[string]string{}
		for _, m := range h.store.all(testID) {
			total += len(m.Content) + len(m.Reasoning) + len(m.CallArguments)
			for _, c := range m.ToolCalls {
				total += len(c.Arguments)
			}
			switch m.Role {
			case chat.RoleAssistant:
				asst = append(asst, m)
			case chat.RoleTool:
				results[m.ToolCallID] = m.Content
			}
		}
		if len(asst) != 2 {
			t.Fatalf("%d assistant memories stored, want both replies (calls, then the final answer)", len(asst))
		}
		for _, m := range asst {
			if len(m.Content) > chat.MaxReplyBytes || !strings.Contains(m.Content, "[cut: 5242880 bytes; at most 262144") || len(m.Reasoning) > chat.MaxReplyBytes {
				t.Errorf("reply stored with %d bytes of content (ends %q) and %d of reasoning; want each at most %d with a note",
					len(m.Content), m.Content[max(0, len(m.Content)-80):], len(m.Reasoning), chat.MaxReplyBytes)
			}
		}
		if len(asst[0].ToolCalls) != 2 || len(asst[0].ToolCalls[0].Arguments) > 4<<10 {
			t.Errorf("stored calls %d, first with %d bytes of arguments: want the oversized arguments replaced by a short echo", len(asst[0].ToolCalls), len(asst[0].ToolCalls[0].Arguments))
		}
		if r := results["a"]; !strings.HasPrefix(r, "Error: invalid_tool_call: the arguments are too long (5242891 bytes; at most 262144") || !strings.Contains(r, "Nothing was run") {
			t.Errorf("oversized call answered %q, want a tool error naming the size and the limit", r)
		}
		for _, c := range h.tools.called() {
			if c.ID == "a" {
				t.Error("the oversized call was sent to the game")
			}
		}
		if !strings.HasPrefix(results["b"], "{") {
			t.Errorf("the well-formed call of the same reply answered %q, want its real result", results["b"])
		}
		if total > 4*chat.MaxReplyBytes+64<<10 {
			t.Errorf("%d bytes stored for three 5 MB texts, want at most about four replies' worth", total)
		}
		if h.state() != StateRunning {
			t.Errorf("state %s after a huge reply, want running", h.state())
		}
	})
}
