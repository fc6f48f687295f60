package pgstore

import (
	"github.com/zoeaswarm/zoea/libs/callkey"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// lastCallsSQL reads the tool calls of the newest assistant memory with calls among the mysis's last
// memory.CallLookback rows: where a tool result appended without its arguments finds them. It runs after the mysis
// row is locked, so it sees every row written before this append.
const lastCallsSQL = `
SELECT m.tool_calls FROM memories m
WHERE m.mysis_id = $1 AND m.role = 3 AND m.tool_calls IS NOT NULL
  AND m.seq > (SELECT y.last_seq FROM myses y WHERE y.id = $1) - $2
ORDER BY m.seq DESC LIMIT 1`

// needsStoredCalls reports whether a tool result of the batch has no arguments and no assistant memory with tool
// calls before it in the batch, so its arguments must come from the stored history.
func needsStoredCalls(ms []memory.NewMemory) bool {
	seenCalls := false
	for _, m := range ms {
		switch {
		case m.Role == memory.RoleAssistant && len(m.ToolCalls) > 0:
			seenCalls = true
		case m.Role == memory.RoleTool && m.CallArguments == "" && !seenCalls:
			return true
		}
	}
	return false
}

// callArgs returns, per memory of the batch, the arguments to store with a tool result (nil for other roles and
// for results whose call is unknown) and its call key ("" for other roles). A result's call is the one with its
// id in the nearest assistant memory with tool calls before it: earlier in the batch, else stored (stored).
// Arguments the client sent win; they are what the model sent, byte for byte.
func callArgs(ms []memory.NewMemory, stored []memory.ToolCall) (args []*string, keys []*string) {
	args, keys = make([]*string, len(ms)), make([]*string, len(ms))
	calls := stored
	for i, m := range ms {
		if m.Role == memory.RoleAssistant && len(m.ToolCalls) > 0 {
			calls = m.ToolCalls
			continue
		}
		if m.Role != memory.RoleTool {
			continue
		}
		a := m.CallArguments
		if a == "" {
			for _, c := range calls {
				if c.ID == m.ToolCallID {
					a = c.Arguments
					break
				}
			}
		}
		k := callkey.Of(m.ToolName, a)
		args[i], keys[i] = nullable(a), &k
	}
	return args, keys
}
