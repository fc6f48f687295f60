package memoryrules

import "testing"

// Every field the caller chose counts; the call arguments only when the request gives them (the store fills them in
// otherwise), and the LLM call accounting not at all.
func TestPayloadMismatch(t *testing.T) {
	base := NewMemory{Role: RoleAssistant, Source: SourceLLM, Content: "ok", Reasoning: "r", IdempotencyKey: "k",
		ToolCalls: []ToolCall{{ID: "c1", Name: "mine", Arguments: `{}`}}}
	for _, tc := range []struct {
		change func(*NewMemory)
		want   string
	}{
		{func(*NewMemory) {}, ""},
		{func(n *NewMemory) { n.LlmCall = &LlmCall{CallID: "another paid call"} }, ""},
		{func(n *NewMemory) { n.Role = RoleUser }, "role"},
		{func(n *NewMemory) { n.Source = SourceDirect }, "source"},
		{func(n *NewMemory) { n.SenderID = "x" }, "sender_id"},
		{func(n *NewMemory) { n.Content = "other" }, "content"},
		{func(n *NewMemory) { n.Reasoning = "" }, "reasoning"},
		{func(n *NewMemory) { n.ToolCalls = nil }, "tool_calls"},
		{func(n *NewMemory) { n.ToolCalls = []ToolCall{{ID: "c2", Name: "mine", Arguments: `{}`}} }, "tool_calls[0].id"},
		{func(n *NewMemory) { n.ToolCalls = []ToolCall{{ID: "c1", Name: "sell", Arguments: `{}`}} }, "tool_calls[0].name"},
		{func(n *NewMemory) { n.ToolCalls = []ToolCall{{ID: "c1", Name: "mine", Arguments: `{ }`}} }, "tool_calls[0].arguments"},
		{func(n *NewMemory) { n.ToolCallID = "c9" }, "tool_call_id"},
		{func(n *NewMemory) { n.ToolName = "mine" }, "tool_name"},
		{func(n *NewMemory) { n.CallArguments = `{"a":1}` }, "call_arguments_json"},
	} {
		req := base
		req.ToolCalls = append([]ToolCall(nil), base.ToolCalls...)
		tc.change(&req)
		if got := PayloadMismatch(req, base); got != tc.want {
			t.Errorf("PayloadMismatch(%+v) = %q, want %q", req, got, tc.want)
		}
	}
	stored := base
	stored.CallArguments = `{}`
	if got := PayloadMismatch(base, stored); got != "" {
		t.Errorf("a request without call arguments differs from its stored row's derived ones: %q", got)
	}
}
