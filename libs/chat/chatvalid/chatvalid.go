// Package chatvalid checks a conversation against the structural rules that LLM providers enforce with an HTTP 400.
// The composer must never send a list that fails here, so tests, fuzzers and the soak run every output through
// Strict: a conversation that passes it is accepted by OpenAI-compatible Chat Completions servers (OpenAI, Ollama,
// vLLM, LiteLLM) and, after the usual mapping, by Anthropic's Messages API.
//
// Anthropic mapping assumed (what every Anthropic adapter does): the leading system message becomes the system
// parameter; an assistant message becomes one assistant turn (text, then tool_use blocks); the run of tool messages
// after it becomes ONE user turn of tool_result blocks. A plain user message directly after that run is appended to
// the same user turn after the tool_result blocks — the one merge Anthropic allows (tool_result blocks must come
// first). Any other two consecutive messages of the same mapped role (user,user or assistant,assistant) are a
// violation: the API would silently merge them or reject them depending on content, and a composer that produces
// them has lost track of the conversation's shape.
package chatvalid

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// Provider selects a rule set. Values combine as bit flags; Strict is the union and is what Zoea enforces.
type Provider uint8

// Rule sets.
const (
	OpenAI    Provider = 1 << iota // OpenAI Chat Completions and compatible servers
	Anthropic                      // Anthropic Messages API after the mapping in the package comment
	Strict    = OpenAI | Anthropic
)

// Rule names one structural rule; it is stable text so tests and logs can match on it.
type Rule string

// The rules. The comment says which rule set reports each one.
const (
	RuleUnknownRole         Rule = "unknown-role"              // both
	RuleMisplacedField      Rule = "misplaced-field"           // both: tool_calls off assistant, tool_call_id/name off tool
	RuleSystemNotFirst      Rule = "system-not-first"          // both
	RuleEmptyConversation   Rule = "empty-conversation"        // both: nothing but (at most) a system message
	RuleAssistantBeforeUser Rule = "assistant-before-user"     // OpenAI: at least one user message before any assistant
	RuleFirstNotUser        Rule = "first-not-user"            // Anthropic: first non-system message must be user
	RuleMissingToolResult   Rule = "missing-tool-result"       // both: a call not answered before the next non-tool message
	RuleDuplicateToolResult Rule = "duplicate-tool-result"     // both: a call answered twice
	RuleOrphanToolResult    Rule = "orphan-tool-result"        // both: tool message not answering a call of the assistant just before
	RuleDuplicateToolCallID Rule = "duplicate-tool-call-id"    // both: ids must be unique across the conversation
	RuleEmptyToolCallID     Rule = "empty-tool-call-id"        // both
	RuleEmptyToolName       Rule = "empty-tool-name"           // both
	RuleBadArguments        Rule = "arguments-not-json-object" // both
	RuleEmptyAssistant      Rule = "empty-assistant"           // both: neither content nor tool calls
	RuleEmptyUser           Rule = "empty-user"                // both
	RuleBlankText           Rule = "blank-text"                // Anthropic: whitespace-only text block
	RuleConsecutiveRole     Rule = "consecutive-same-role"     // Anthropic: after mapping, except tool→tool and tool→user
)

// providers says which rule sets report r. A switch rather than a map keeps it an immutable table with no init.
func (r Rule) providers() Provider {
	switch r {
	case RuleAssistantBeforeUser:
		return OpenAI
	case RuleFirstNotUser, RuleBlankText, RuleConsecutiveRole:
		return Anthropic
	default:
		return Strict
	}
}

// Violation is one broken rule. Index is the offending message's position, or -1 for the conversation as a whole.
type Violation struct {
	Index  int
	Rule   Rule
	Detail string
}

func (v Violation) String() string {
	if v.Index < 0 {
		return fmt.Sprintf("conversation: %s: %s", v.Rule, v.Detail)
	}
	return fmt.Sprintf("message %d: %s: %s", v.Index, v.Rule, v.Detail)
}

// Error lists every violation found, in message order, so one failing test shows the whole picture.
type Error struct {
	Violations []Violation
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return fmt.Sprintf("invalid conversation (%d violations): %s", len(e.Violations), strings.Join(parts, "; "))
}

// Has reports whether the error contains a violation of rule r.
func (e *Error) Has(r Rule) bool {
	for _, v := range e.Violations {
		if v.Rule == r {
			return true
		}
	}
	return false
}

// Validate checks msgs against Strict (both providers' rules). It returns nil or an *Error.
func Validate(msgs []chat.Message) error {
	return Strict.Validate(msgs)
}

// Validate checks msgs against the rule sets in p. It returns nil or an *Error listing every violation.
func (p Provider) Validate(msgs []chat.Message) error {
	c := checker{p: p, seenIDs: make(map[string]int)}
	c.run(msgs)
	if len(c.out) == 0 {
		return nil
	}
	return &Error{Violations: c.out}
}

type checker struct {
	p       Provider
	out     []Violation
	seenIDs map[string]int // tool call id → index of the assistant message that issued it
}

func (c *checker) add(i int, r Rule, format string, args ...any) {
	if c.p&r.providers() == 0 {
		return
	}
	c.out = append(c.out, Violation{Index: i, Rule: r, Detail: fmt.Sprintf(format, args...)})
}

// openBlock is the assistant message whose tool results are being collected, while consecutive tool messages follow.
type openBlock struct {
	index    int
	pending  []string // call ids in call order
	answered map[string]bool
}

func (c *checker) closeBlock(b *openBlock) {
	if b == nil {
		return
	}
	for _, id := range b.pending {
		if !b.answered[id] {
			c.add(b.index, RuleMissingToolResult, "tool call %q has no tool message before the next non-tool message", id)
		}
	}
}

func (c *checker) run(msgs []chat.Message) {
	var (
		block     *openBlock
		sawUser   bool
		nonSystem int
		prevRole  chat.Role // previous non-system message's role ("" before the first)
	)
	for i, m := range msgs {
		if !m.Role.Valid() {
			c.add(i, RuleUnknownRole, "role %q", m.Role)
			continue
		}
		if m.Role != chat.RoleTool {
			c.closeBlock(block)
			block = nil
		}
		c.checkFields(i, m)
		if m.Role == chat.RoleSystem {
			if i != 0 {
				c.add(i, RuleSystemNotFirst, "a system message is only allowed as the first message")
			}
			continue
		}
		nonSystem++
		if nonSystem == 1 && m.Role != chat.RoleUser {
			c.add(i, RuleFirstNotUser, "the first non-system message is %s", m.Role)
		}
		c.checkAdjacency(i, prevRole, m.Role)
		prevRole = m.Role

		switch m.Role {
		case chat.RoleUser:
			sawUser = true
			switch {
			case m.Content == "":
				c.add(i, RuleEmptyUser, "user message has no content")
			case strings.TrimSpace(m.Content) == "":
				c.add(i, RuleBlankText, "user message content is only whitespace")
			}
		case chat.RoleAssistant:
			if !sawUser {
				c.add(i, RuleAssistantBeforeUser, "assistant message before any user message")
			}
			if len(m.ToolCalls) == 0 {
				switch {
				case m.Content == "":
					c.add(i, RuleEmptyAssistant, "assistant message has neither content nor tool calls")
				case strings.TrimSpace(m.Content) == "":
					c.add(i, RuleBlankText, "assistant message content is only whitespace")
				}
				break
			}
			block = &openBlock{index: i, answered: make(map[string]bool, len(m.ToolCalls))}
			for k, tc := range m.ToolCalls {
				c.checkCall(i, k, tc)
				block.pending = append(block.pending, tc.ID)
			}
		case chat.RoleTool:
			c.checkToolResult(i, m, block)
		}
	}
	c.closeBlock(block)
	if nonSystem == 0 {
		c.add(-1, RuleEmptyConversation, "no user, assistant or tool message")
	}
}

func (c *checker) checkFields(i int, m chat.Message) {
	if m.Role != chat.RoleAssistant && len(m.ToolCalls) > 0 {
		c.add(i, RuleMisplacedField, "tool_calls on a %s message", m.Role)
	}
	if m.Role != chat.RoleTool && m.ToolCallID != "" {
		c.add(i, RuleMisplacedField, "tool_call_id on a %s message", m.Role)
	}
	if m.Role != chat.RoleTool && m.Name != "" {
		c.add(i, RuleMisplacedField, "name on a %s message", m.Role)
	}
}

// checkAdjacency applies Anthropic's alternation after mapping tool→user (see the package comment).
func (c *checker) checkAdjacency(i int, prev, cur chat.Role) {
	if prev == "" {
		return
	}
	mapped := func(r chat.Role) chat.Role {
		if r == chat.RoleTool {
			return chat.RoleUser
		}
		return r
	}
	if mapped(prev) != mapped(cur) {
		return
	}
	if prev == chat.RoleTool && (cur == chat.RoleTool || cur == chat.RoleUser) {
		return // one user turn: tool_result blocks, then optional text
	}
	c.add(i, RuleConsecutiveRole, "%s message follows a %s message", cur, prev)
}

func (c *checker) checkCall(i, k int, tc chat.ToolCall) {
	if tc.ID == "" {
		c.add(i, RuleEmptyToolCallID, "tool call %d has an empty id", k)
	} else if first, dup := c.seenIDs[tc.ID]; dup {
		c.add(i, RuleDuplicateToolCallID, "tool call id %q already used by message %d", tc.ID, first)
	} else {
		c.seenIDs[tc.ID] = i
	}
	if tc.Name == "" {
		c.add(i, RuleEmptyToolName, "tool call %d (%q) has an empty name", k, tc.ID)
	}
	if !isJSONObject(tc.Arguments) {
		c.add(i, RuleBadArguments, "tool call %d (%q) arguments are not a JSON object: %.40q", k, tc.ID, tc.Arguments)
	}
}

func (c *checker) checkToolResult(i int, m chat.Message, block *openBlock) {
	if m.ToolCallID == "" {
		c.add(i, RuleEmptyToolCallID, "tool message has an empty tool_call_id")
	}
	if block == nil {
		c.add(i, RuleOrphanToolResult, "tool message %q does not follow an assistant message with tool calls", m.ToolCallID)
		return
	}
	known := false
	for _, id := range block.pending {
		if id == m.ToolCallID {
			known = true
			break
		}
	}
	switch {
	case !known:
		c.add(i, RuleOrphanToolResult, "tool message %q answers no call of message %d", m.ToolCallID, block.index)
	case block.answered[m.ToolCallID]:
		c.add(i, RuleDuplicateToolResult, "tool call %q of message %d is answered twice", m.ToolCallID, block.index)
	default:
		block.answered[m.ToolCallID] = true
	}
}

// isJSONObject reports whether s is exactly one JSON object (surrounding whitespace allowed), which is what both
// providers require of function arguments.
func isJSONObject(s string) bool {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '{' || !json.Valid([]byte(t)) {
		return false
	}
	return true
}
