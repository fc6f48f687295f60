package mysis

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/text"
)

// A model's reply is untrusted input: arguments that are not JSON, duplicate or empty call ids, empty names, ids of
// hundreds of bytes, a hundred calls at once, NUL bytes. Stored as sent, the memory service would refuse it, the
// mysis would go errored and retry forever, paying for an LLM call each time, and never see why. So the runner
// stores what the model said in a form the store (and every provider, when the history is sent back) accepts, and
// answers each call it could not run with a tool error naming the mistake: the next iteration corrects itself.

// Markers left in a stored call that the model got wrong. They are what the model reads back in its own history.
const (
	// unparsedArgsKey wraps arguments that were not one JSON object: {"_unparsed_arguments":"{\"a\":1"}.
	unparsedArgsKey = "_unparsed_arguments"
	// invalidToolName stands in for an empty or unstorable tool name.
	invalidToolName = "invalid_tool_name"
	// maxEchoBytes bounds the text of a bad argument or name kept for the model to read back.
	maxEchoBytes = 2048
	// DefaultMaxCallsPerReply is how many calls of one reply are run by default; the others are answered with an
	// error. A model that plans more steps than that in one reply is better told so than served slowly.
	DefaultMaxCallsPerReply = 16
)

// replyCheck is a model reply made storable, plus what the model needs to hear about the calls it got wrong.
type replyCheck struct {
	Content, Reasoning string
	Calls              []chat.ToolCall
	// Problems maps a stored call's index to the tool error that answers it instead of running it.
	Problems map[int]string
}

// checkReply makes a reply storable. keySeq (the newest memory the model saw) makes replacement ids unique across
// the conversation, since every stored reply has its own; maxRun is how many calls are run.
func checkReply(msg chat.Message, reasoning string, keySeq int64, maxRun int) replyCheck {
	out := replyCheck{
		Content:   storableText(msg.Content, chat.MaxReplyBytes),
		Reasoning: storableText(reasoning, chat.MaxReplyBytes),
		Problems:  map[int]string{},
	}
	// Calls beyond maxRun are not run. Only the first of them is stored, answered with an error that counts the
	// others: a hundred stored error results would crowd the model's context for nothing.
	calls := msg.ToolCalls
	dropped := 0
	if limit := min(chat.MaxToolCallsPerMessage, maxRun+1); len(calls) > limit {
		dropped = len(calls) - limit
		calls = calls[:limit]
	}
	seen := make(map[string]bool, len(calls))
	argBytes := 0
	for i, c := range calls {
		var problems []string
		id := c.ID
		if !goodCallID(id) || seen[id] {
			// The id is only a key pairing the call with its result; a fresh one loses nothing the model meant.
			id = freshCallID(keySeq, i, seen)
		}
		seen[id] = true
		name := c.Name
		if !goodToolName(name) {
			if strings.TrimSpace(name) == "" {
				problems = append(problems, "the call has no tool name")
			} else {
				problems = append(problems, fmt.Sprintf("%q is not a valid tool name", echo(name)))
			}
			name = invalidToolName
		}
		args := c.Arguments
		switch {
		case strings.TrimSpace(args) == "":
			args = "{}" // no arguments: what every tool reads as "none"
		case argBytes+len(args) > chat.MaxReplyBytes:
			// Stored whole, a runaway call would ride in every window after it; the model reads why it did not run.
			problems = append(problems, fmt.Sprintf("the arguments are too long (%d bytes; at most %d in one reply, all calls together)", len(args), chat.MaxReplyBytes))
			args = wrapArgs(args)
		case !utf8.ValidString(args) || !isJSONObject(args):
			problems = append(problems, "the arguments are not one JSON object ("+jsonProblem(args)+")")
			args = wrapArgs(args)
		}
		argBytes += len(args)
		if i >= maxRun {
			problems = append(problems, fmt.Sprintf("this reply made %d calls and only the first %d are run", len(msg.ToolCalls), maxRun))
		}
		if i == len(calls)-1 && dropped > 0 {
			problems = append(problems, fmt.Sprintf("the %d calls after this one were discarded", dropped))
		}
		if len(problems) > 0 {
			out.Problems[i] = callError(c.Name, problems)
		}
		out.Calls = append(out.Calls, chat.ToolCall{ID: id, Name: name, Arguments: args})
	}
	return out
}

// storedCallProblem re-derives, from a stored call alone, why it must not be run: a resumed turn (after a crash)
// has only the stored reply, not the checkReply that produced it.
func storedCallProblem(i int, c chat.ToolCall, maxRun int) (string, bool) {
	var problems []string
	if c.Name == invalidToolName {
		problems = append(problems, "the call had no valid tool name")
	}
	if raw, ok := unwrapArgs(c.Arguments); ok {
		problems = append(problems, "the arguments were not one JSON object ("+jsonProblem(raw)+")")
	}
	if i >= maxRun {
		problems = append(problems, fmt.Sprintf("only the first %d calls of a reply are run", maxRun))
	}
	if len(problems) == 0 {
		return "", false
	}
	return callError(c.Name, problems), true
}

// callError is the tool error the model reads: the code, what was wrong, that nothing ran, and what to do.
func callError(name string, problems []string) string {
	var b strings.Builder
	b.WriteString("Error: invalid_tool_call: ")
	b.WriteString(strings.Join(problems, "; "))
	b.WriteString(". Nothing was run.")
	if goodToolName(name) {
		fmt.Fprintf(&b, " Call %s again with its arguments as one JSON object, e.g. {\"key\":\"value\"}, or {} for none.", name)
	} else {
		b.WriteString(" Call one of the listed tools by its exact name, with its arguments as one JSON object ({} for none).")
	}
	return b.String()
}

func wrapArgs(raw string) string {
	b, err := json.Marshal(map[string]string{unparsedArgsKey: storableText(echo(raw), maxEchoBytes+8)})
	if err != nil { // cannot happen for a map of valid strings
		return "{}"
	}
	return string(b)
}

// unwrapArgs returns the raw text of wrapped arguments.
func unwrapArgs(args string) (string, bool) {
	if !strings.Contains(args, unparsedArgsKey) {
		return "", false
	}
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil || len(m) != 1 {
		return "", false
	}
	raw, ok := m[unparsedArgsKey].(string)
	return raw, ok
}

// jsonProblem says, in a few words, why text is not a JSON object.
func jsonProblem(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return err.Error()
	}
	switch v.(type) {
	case nil:
		return "null is not an object"
	case []any:
		return "an array is not an object"
	case map[string]any:
		return "valid JSON object"
	default:
		return "a single value is not an object"
	}
}

func isJSONObject(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "{") && json.Valid([]byte(t))
}

// goodCallID accepts ids every provider accepts back: short, [A-Za-z0-9_-] (Anthropic's tool_use id pattern).
func goodCallID(id string) bool {
	if id == "" || len(id) > chat.MaxToolCallIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func freshCallID(keySeq int64, i int, seen map[string]bool) string {
	id := "call_z" + strconv.FormatInt(keySeq, 10) + "_" + strconv.Itoa(i)
	for n := 1; seen[id]; n++ {
		id = "call_z" + strconv.FormatInt(keySeq, 10) + "_" + strconv.Itoa(i) + "_" + strconv.Itoa(n)
	}
	return id
}

// goodToolName accepts what the store keeps as a name: non-blank, short, valid UTF-8, no control characters. A
// name that is merely unknown is kept: the tool router answers it with unknown_tool and the list of tools.
func goodToolName(name string) bool {
	if strings.TrimSpace(name) == "" || len(name) > chat.MaxToolNameBytes || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// storableText makes text the store accepts without losing what it says: invalid UTF-8 and NUL become U+FFFD,
// and text beyond max bytes is cut on a rune boundary with a note.
func storableText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	// The note says what is missing, so the model (reading its own history) and an operator know the text is cut.
	note := fmt.Sprintf("… [cut: %d bytes; at most %d of a reply are stored]", len(s), max)
	return text.Fit(s, max, note)
}

// echo bounds text quoted back to the model.
func echo(s string) string {
	return text.Clip(s, maxEchoBytes, "…")
}

// problemsByID keys the problems by the ids of the calls as stored. The stored calls are the checked ones, unless a
// retry found an earlier reply already stored under the same key: then that reply's own markers decide.
func (r replyCheck) problemsByID(stored []chat.ToolCall, maxRun int) map[string]string {
	same := len(stored) == len(r.Calls)
	for i := 0; same && i < len(stored); i++ {
		same = stored[i] == r.Calls[i]
	}
	if !same {
		return storedProblems(stored, maxRun)
	}
	out := make(map[string]string, len(r.Problems))
	for i, msg := range r.Problems {
		out[stored[i].ID] = msg
	}
	return out
}

// storedProblems derives the problems of a stored reply's calls (see storedCallProblem).
func storedProblems(calls []chat.ToolCall, maxRun int) map[string]string {
	out := map[string]string{}
	for i, c := range calls {
		if msg, bad := storedCallProblem(i, c, maxRun); bad {
			out[c.ID] = msg
		}
	}
	return out
}
