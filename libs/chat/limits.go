package chat

// Limits every service agrees on for a stored conversation. The memory service enforces them on append; the runner
// cuts a model's reply to them before storing it, so a reply the store would refuse never stops a mysis.
const (
	// MaxToolCallsPerMessage bounds the tool calls of one assistant message.
	MaxToolCallsPerMessage = 128
	// MaxShortFieldBytes bounds identifiers and names (tool call ids, tool names, idempotency keys).
	MaxShortFieldBytes = 256
	// MaxToolCallIDBytes is the longest tool call id the runner stores as the model sent it. Providers issue ids of
	// 9–40 characters; anything longer is replaced so that ids stay usable as keys.
	MaxToolCallIDBytes = 64
	// MaxToolNameBytes is the longest tool name providers accept (OpenAI and Anthropic: 64).
	MaxToolNameBytes = 64
	// MaxProviderBytes bounds a provider name (autopilot, ollama, openai, a gateway's name).
	MaxProviderBytes = 32
	// MaxSystemPromptBytes bounds a mysis's system prompt (about 4,000 tokens), so the model's context budget keeps
	// room for the conversation.
	MaxSystemPromptBytes = 16 << 10
)

// Text limits. One memory's content, reasoning and tool arguments are each at most MaxTextBytes; one append request
// carries at most MaxRequestTextBytes of text in all, which keeps it well inside MaxMessageBytes, the gRPC message
// size every Zoea server and client is configured with (gRPC's own default of 4 MiB would refuse a request before
// any field is checked, with a message that names none).
const (
	// MaxReplyBytes bounds what one model reply may store: an assistant memory's content, its reasoning, and its
	// tool calls' arguments (each call's and all together), and the copy of a call's arguments a tool result
	// carries. A model answers in a few kilobytes; a 5 MB reply is a loop or an attack, and stored whole it would
	// ride in every composed window after it. The runner cuts a reply to it (with a note saying so) and answers a
	// call whose arguments exceed it with a tool error; the memory service refuses more.
	MaxReplyBytes       = 256 << 10
	MaxTextBytes        = 8 << 20
	MaxRequestTextBytes = 32 << 20
	MaxMessageBytes     = 64 << 20
)
