// Package replaybench is benchmark tooling: it replays generated SpaceMolt play (histgen.RealPlay) request by request
// through several context-composition systems side by side — full history, the last 20 messages, the seed's loop
// slice, the seed's turn-aware composition as coded, Zoea v1 (a frozen copy) and Zoea v2 (the live compose package)
// — and measures what each would send: tokens, validity under both providers' rules, whether the state the model
// gathered is still in view, how much of each request a provider's prompt cache could reuse, and what that costs.
// It backs cmd/composereplay and the BenchmarkReplay entry of `make bench`. Production code never imports it.
package replaybench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Counter counts o200k_base tokens (o200k.Counter in the benchmark, a stub in unit tests).
type Counter interface {
	Count(s string) int
}

// Framing constants: the same as the composer's (compose.framingPerMessage and friends), so a count here equals
// the composer's own manifest total for the same messages.
const (
	framingPerMessage = 4
	framingPerCall    = 4
	framingReply      = 3
)

// MessageTokens is what one message adds to a request.
func MessageTokens(tok Counter, m chat.Message) int {
	n := framingPerMessage + tok.Count(m.Content) + tok.Count(m.Name) + tok.Count(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += framingPerCall + tok.Count(tc.ID) + tok.Count(tc.Name) + tok.Count(tc.Arguments)
	}
	return n
}

// HistoryTokens is the message list's tokens: system prompt, messages, framing and reply priming; tool definitions
// are not included (they are ToolTokens).
func HistoryTokens(tok Counter, msgs []chat.Message) int {
	n := framingReply
	for _, m := range msgs {
		n += MessageTokens(tok, m)
	}
	return n
}

// ToolDef is one tool sent with every request, in the provider-neutral function shape.
type ToolDef struct {
	Name        string
	Description string
	Parameters  string // JSON schema text
}

// JSON is the definition as providers receive it, OpenAI's function-tool shape (Anthropic's has the same fields
// renamed): the text whose tokens a request pays for.
func (t ToolDef) JSON() string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(struct {
		Type     string  `json:"type"`
		Function toolFun `json:"function"`
	}{"function", toolFun{t.Name, t.Description, json.RawMessage(t.Parameters)}})
	return strings.TrimSuffix(b.String(), "\n")
}

type toolFun struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolTokens is what the tool definitions add to every request: each definition's JSON plus a message's framing,
// as the v2 composer counts them.
func ToolTokens(tok Counter, tools []ToolDef) int {
	n := 0
	for _, t := range tools {
		n += framingPerMessage + tok.Count(t.JSON())
	}
	return n
}

func messageEqual(a, b chat.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && a.Name == b.Name &&
		slices.Equal(a.ToolCalls, b.ToolCalls)
}

// CachedPrefix returns the tokens of the longest message-by-message prefix that cur shares with prev, the previous
// request of the same mysis. The tool definitions and the system prompt are part of the prefix: a provider caches
// tools, then system, then messages, in that order. With no previous request nothing is cached.
func CachedPrefix(tok Counter, toolTokens int, prev, cur []chat.Message) int {
	if prev == nil {
		return 0
	}
	n := toolTokens
	for i := range min(len(prev), len(cur)) {
		if !messageEqual(prev[i], cur[i]) {
			break
		}
		n += MessageTokens(tok, cur[i])
	}
	return n
}

// Billing of input tokens relative to uncached input (1.0).
const (
	AnthropicCacheRead  = 0.1
	AnthropicCacheWrite = 1.25
	AnthropicMinPrefix  = 1024
	OpenAICached        = 0.5
)

// BilledAnthropic is the billed-equivalent input of one request of total tokens whose first prefix tokens equal
// the previous request's: a cached prefix is read at 0.1× and the rest written to the cache at 1.25×. A request
// below 1,024 tokens is not cached at all (billed 1×, no write premium); a request at or above it whose shared prefix
// is below 1,024 tokens reads nothing and writes all of itself.
func BilledAnthropic(total, prefix int) float64 {
	switch {
	case total < AnthropicMinPrefix:
		return float64(total)
	case prefix >= AnthropicMinPrefix:
		return AnthropicCacheRead*float64(prefix) + AnthropicCacheWrite*float64(total-prefix)
	default:
		return AnthropicCacheWrite * float64(total)
	}
}

// BilledOpenAI is the billed-equivalent input with cached tokens at 0.5× and the rest at 1×.
func BilledOpenAI(total, prefix int) float64 {
	return OpenAICached*float64(prefix) + float64(total-prefix)
}

// Coverage counts, for one request, the tools the model called since the newest commander prompt and how many of
// them have their newest result in the request in full (a tool message answering that result's call with the
// result's whole content). Rows are the history the request was composed from.
func Coverage(rows []compose.Memory, msgs []chat.Message) (cases, covered int) {
	start := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if IsCommanderPrompt(rows[i]) {
			start = i
			break
		}
	}
	return coverageSince(rows, start, msgs)
}

// StateRows returns the row indexes of Coverage's cases: the newest result of each tool called since the newest
// commander prompt.
func StateRows(rows []compose.Memory) []int {
	start := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if IsCommanderPrompt(rows[i]) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	newest := newestByTool(rows, start)
	out := make([]int, 0, len(newest))
	for _, i := range newest {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

func newestByTool(rows []compose.Memory, start int) map[string]int {
	newest := map[string]int{} // tool (or tool.action) → row index of its newest result
	action := map[string]string{}
	for i := start + 1; i < len(rows); i++ {
		r := rows[i]
		for _, tc := range r.ToolCalls {
			if strings.Contains(tc.Arguments, `"action"`) {
				var v struct {
					Action string `json:"action"`
				}
				if json.Unmarshal([]byte(tc.Arguments), &v) == nil && v.Action != "" {
					action[tc.ID] = v.Action
				}
			}
		}
		if r.Role == chat.RoleTool && r.ToolName != "" {
			key := r.ToolName
			if a := action[r.ToolCallID]; a != "" {
				key += "." + a // an action-dispatched tool (SpaceMolt MCP v2): each action is its own tool
			}
			newest[key] = i
		}
	}
	return newest
}

// TurnCoverage is Coverage over the current turn only (since the newest prompt of any kind, nudges included): the
// issue's "inside the runner's own turns" figure, a calibration point against recorded play.
func TurnCoverage(rows []compose.Memory, msgs []chat.Message) (cases, covered int) {
	start := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if r := rows[i]; r.Role == chat.RoleUser && (r.Source == compose.SourceDirect || r.Source == compose.SourceBroadcast ||
			r.Source == compose.SourceNudge) {
			start = i
			break
		}
	}
	return coverageSince(rows, start, msgs)
}

func coverageSince(rows []compose.Memory, start int, msgs []chat.Message) (cases, covered int) {
	if start < 0 {
		return 0, 0
	}
	newest := newestByTool(rows, start)
	if len(newest) == 0 {
		return 0, 0
	}
	sent := make(map[string]string, len(msgs)) // tool_call_id → content sent
	for _, m := range msgs {
		if m.Role == chat.RoleTool {
			sent[m.ToolCallID] = m.Content
		}
	}
	for _, i := range newest {
		cases++
		if c, ok := sent[rows[i].ToolCallID]; ok && c == rows[i].Content {
			covered++
		}
	}
	return cases, covered
}

// IsCommanderPrompt reports whether row is an order from the commander: a direct message or broadcast with no
// sender mysis. These set the mission; nudges and other myses' broadcasts do not.
func IsCommanderPrompt(row compose.Memory) bool {
	return row.Role == chat.RoleUser && row.SenderID == "" &&
		(row.Source == compose.SourceDirect || row.Source == compose.SourceBroadcast)
}

// MissionPresent reports whether the request carries the mission: some user message containing the text of the
// newest commander prompt. ok is false when the history has no commander prompt (nothing to carry).
func MissionPresent(rows []compose.Memory, msgs []chat.Message) (present, ok bool) {
	for i := len(rows) - 1; i >= 0; i-- {
		if IsCommanderPrompt(rows[i]) {
			for _, m := range msgs {
				if m.Role == chat.RoleUser && rows[i].Content != "" && strings.Contains(m.Content, rows[i].Content) {
					return true, true
				}
			}
			return false, true
		}
	}
	return false, false
}
