// Package chat is the vocabulary of an LLM conversation shared by the composer (which builds message lists) and the
// runner (which sends them to a provider and records the replies). It is deliberately provider-neutral and imports
// only the standard library, so every service can depend on it without pulling in an SDK.
package chat

// Role is who speaks a message. The set is the OpenAI Chat Completions one; Anthropic adapters map RoleTool to a user
// turn of tool_result blocks and lift RoleSystem into the request's system parameter.
type Role string

// The four roles a conversation may contain.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four known roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// ToolCall is one function call requested by the assistant. Arguments is kept as the JSON text the model produced
// (not a parsed map) so that it round-trips byte for byte: re-encoding a map would reorder keys and break prompt
// caches, and any lossy text encoding of calls is how arguments once became "{}" (see LESSONS 5).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one entry of a conversation. ToolCalls is set only on assistant messages; ToolCallID and Name only on
// tool messages, where Name is the name of the tool that produced the result.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}
