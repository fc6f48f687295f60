// Package present turns Zoea's API messages into the words a commander reads. The CLI and the console (`zoea tui`)
// both print through it, so `history`, `search`, `preview` and the console label the same row the same way.
package present

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/spend"
)

// State is a mysis state in lower case: idle, running, stopped, errored.
func State(s memoryv1.MysisState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "MYSIS_STATE_"))
}

// Role is a message role in lower case.
func Role(r memoryv1.Role) string { return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_")) }

// Source is a memory source in lower case.
func Source(s memoryv1.Source) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SOURCE_"))
}

// RowLabel labels a stored memory: role/source, plus the tool for tool results ("tool/tool mine", "user/direct",
// "assistant/llm", "user/broadcast").
func RowLabel(m *memoryv1.Memory) string {
	l := Role(m.GetRole()) + "/" + Source(m.GetSource())
	if m.GetToolName() != "" {
		l += " " + m.GetToolName()
	}
	return l
}

// RowHeader is the one-line head of a memory row in history and search: "seq 12 turn 3 tool/tool mine".
func RowHeader(m *memoryv1.Memory) string {
	return fmt.Sprintf("seq %d turn %d %s", m.GetSeq(), m.GetTurn(), RowLabel(m))
}

// Clip shortens s to at most n runes, marking the cut.
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n == 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}

// OneLine collapses whitespace runs (newlines included) to single spaces, and escapes what Safe escapes.
func OneLine(s string) string { return Safe(strings.Join(strings.Fields(s), " ")) }

// Credits is the credits column: "?" while the game has not reported them.
func Credits(s *runnerv1.MysisStatus) string {
	if s.GetCredits() < 0 {
		return "?"
	}
	return fmt.Sprint(s.GetCredits())
}

// Where is a mysis's location as the game last reported it: "docked at sol_central (sol)", "main_belt (sol)", or
// "?" before its first get_status.
func Where(s *runnerv1.MysisStatus) string {
	sh := s.GetShip()
	if sh.GetSystem() == "" {
		return "?"
	}
	if sh.GetDockedAt() != "" {
		return Safe(fmt.Sprintf("docked at %s (%s)", sh.GetDockedAt(), sh.GetSystem()))
	}
	if sh.GetPoi() == "" {
		return Safe(sh.GetSystem())
	}
	return Safe(fmt.Sprintf("%s (%s)", sh.GetPoi(), sh.GetSystem()))
}

// Cargo is the cargo hold's fill, "12/50", or "?" before the game reported it.
func Cargo(s *runnerv1.MysisStatus) string {
	sh := s.GetShip()
	if sh.GetCargoCapacity() <= 0 {
		return "?"
	}
	return fmt.Sprintf("%d/%d", sh.GetCargoUsed(), sh.GetCargoCapacity())
}

// EarnedPerDollar is the credits the player earned (its lifetime earnings) per US dollar its LLM calls cost:
// "12,300 per $", "no LLM cost" for a free model, "?" while either is unknown.
func EarnedPerDollar(s *runnerv1.MysisStatus) string {
	earned := s.GetShip().GetCreditsEarned()
	if s.GetShip() == nil || earned < 0 {
		return "?"
	}
	nanos := s.GetUsage().GetCostNanos()
	if nanos <= 0 {
		return "no LLM cost"
	}
	return Grouped(int64(float64(earned)/(float64(nanos)/1e9)+0.5)) + " per $"
}

// numbers writes counts with thousands separators.
var numbers = message.NewPrinter(language.English)

// Grouped writes a count with thousands separators (17,069,701): a count a person reads exactly.
func Grouped(n int64) string { return numbers.Sprintf("%d", n) }

// Compact writes a count in at most 6 characters: as it is below 10,000, then with one decimal and k, M or B
// (12.3k, 1.1M): a table column that must not cut a long number short.
func Compact(n int64) string {
	if -10_000 < n && n < 10_000 {
		return strconv.FormatInt(n, 10)
	}
	v := float64(n)
	for _, unit := range []string{"k", "M", "B"} {
		if v /= 1000; math.Abs(v) < 999.95 {
			return strconv.FormatFloat(v, 'f', 1, 64) + unit
		}
	}
	return strconv.FormatFloat(v/1000, 'f', 1, 64) + "T"
}

// Usage is the tokens and cost columns of a mysis: prompt plus completion tokens of every recorded LLM call and
// their cost; "—" when the runner reported no usage.
func Usage(s *runnerv1.MysisStatus) (tokens, cost string) {
	return usage(s, Grouped)
}

// UsageCompact is Usage with the tokens written by Compact, for a narrow table column.
func UsageCompact(s *runnerv1.MysisStatus) (tokens, cost string) { return usage(s, Compact) }

func usage(s *runnerv1.MysisStatus, count func(int64) string) (tokens, cost string) {
	u := s.GetUsage()
	if u == nil {
		return "—", "—"
	}
	return count(u.GetPromptTokens() + u.GetCompletionTokens()), spend.USD(u.GetCostNanos())
}

// Event is one event as a line: "running → idle (no prompt after 3 nudges)", "tool mine (42 ms): ok …".
func Event(e *busv1.Event) string {
	switch p := e.GetPayload().(type) {
	case *busv1.Event_StateChanged:
		s := State(p.StateChanged.GetFrom()) + " → " + State(p.StateChanged.GetTo())
		if r := p.StateChanged.GetReason(); r != "" {
			s += " (" + r + ")"
		}
		return s
	case *busv1.Event_ToolCalled:
		t := p.ToolCalled
		s := fmt.Sprintf("tool %s (%d ms)", t.GetTool(), t.GetDurationMs())
		if t.GetIsError() {
			s += " failed"
		}
		if x := OneLine(t.GetExcerpt()); x != "" {
			s += ": " + x
		}
		return s
	case *busv1.Event_MemoryAppended:
		m := p.MemoryAppended
		s := fmt.Sprintf("%s memory", Role(m.GetRole()))
		if seqs := m.GetSeqs(); len(seqs) > 0 {
			s += fmt.Sprintf(" seq %d", seqs[len(seqs)-1])
		}
		if x := OneLine(m.GetExcerpt()); x != "" {
			s += ": " + x
		}
		return s
	case *busv1.Event_Error:
		return "error: " + OneLine(p.Error.GetMessage())
	case *busv1.Event_Broadcast:
		who := "commander"
		if p.Broadcast.GetSenderId() != "" {
			who = "mysis " + p.Broadcast.GetSenderId()
		}
		return "broadcast from " + who + ": " + OneLine(p.Broadcast.GetExcerpt())
	}
	return strings.ToLower(strings.TrimPrefix(e.GetKind().String(), "EVENT_KIND_"))
}

// PreviewMessage is one message of a preview with why it is there.
type PreviewMessage struct {
	Index   int
	Message *composerv1.ChatMessage
	// Reasons are the manifest's reasons for the memories it carries (several when prompts were joined), or the
	// synthetic message's reason.
	Reasons []string
	// Memories are the ids of the stored memories it carries.
	Memories []int64
	// Tokens is what it adds to the request.
	Tokens int
	// Synthetic is the kind of a message Zoea wrote ("nudge", "mission", "missing_result"), "" for stored ones.
	Synthetic string
	// InProgress marks a missing tool result whose call is still running: it is not a repair.
	InProgress bool
}

// Preview explains a composed request: every message with its reasons and tokens, and the dropped entries.
type Preview struct {
	Messages []PreviewMessage
	Dropped  []*composerv1.ManifestEntry
	Repairs  []string
	Tokens   *composerv1.SectionTokens
	Budget   int32
}

// ExplainPreview joins a preview's messages with its manifest. running says the mysis is running now: a missing
// result at the very end of the request then belongs to a tool call still in progress, not to a crash.
func ExplainPreview(resp *runnerv1.PreviewContextResponse, running bool) Preview {
	man := resp.GetManifest()
	p := Preview{Tokens: man.GetTokens(), Budget: man.GetTokenBudget()}
	msgs := resp.GetMessages()
	p.Messages = make([]PreviewMessage, len(msgs))
	for i, m := range msgs {
		p.Messages[i] = PreviewMessage{Index: i, Message: m}
	}
	if len(msgs) > 0 && msgs[0].GetRole() == memoryv1.Role_ROLE_SYSTEM {
		p.Messages[0].Reasons = []string{"system prompt"}
		p.Messages[0].Tokens = int(man.GetTokens().GetSystem())
	}
	for _, e := range man.GetEntries() {
		if e.GetDisposition() == composerv1.Disposition_DISPOSITION_DROPPED || e.MessageIndex == nil {
			if e.GetDisposition() == composerv1.Disposition_DISPOSITION_DROPPED {
				p.Dropped = append(p.Dropped, e)
			}
			continue
		}
		i := int(e.GetMessageIndex())
		if i < 0 || i >= len(p.Messages) {
			continue
		}
		pm := &p.Messages[i]
		reason := e.GetReason()
		switch e.GetDisposition() {
		case composerv1.Disposition_DISPOSITION_STUBBED:
			reason = "stubbed: " + reason
		case composerv1.Disposition_DISPOSITION_TRUNCATED:
			reason = "cut: " + reason
		}
		pm.Reasons = appendNew(pm.Reasons, reason)
		pm.Memories = append(pm.Memories, e.GetMemoryId())
		pm.Tokens += int(e.GetTokens())
	}
	// The tail of tool messages after the last assistant call: a synthetic result there, while the mysis runs, is
	// the call being executed right now.
	tail := len(msgs)
	for tail > 0 && msgs[tail-1].GetRole() == memoryv1.Role_ROLE_TOOL {
		tail--
	}
	for _, s := range man.GetSynthetic() {
		i := int(s.GetIndex())
		if i < 0 || i >= len(p.Messages) {
			continue
		}
		pm := &p.Messages[i]
		pm.Synthetic = s.GetKind()
		pm.Tokens += int(s.GetTokens())
		if s.GetKind() == "missing_result" && running && i >= tail {
			pm.InProgress = true
			pm.Reasons = appendNew(pm.Reasons, "tool call in progress: its result is not stored yet")
			continue
		}
		pm.Reasons = appendNew(pm.Reasons, s.GetKind()+": "+s.GetReason())
	}
	var inProgress []string // call ids still in progress: their stand-in result is not a repair
	for _, m := range p.Messages {
		if m.InProgress && m.Message.GetToolCallId() != "" {
			inProgress = append(inProgress, m.Message.GetToolCallId())
		}
	}
	for _, r := range man.GetRepairs() {
		if !mentionsAny(r, inProgress) {
			p.Repairs = append(p.Repairs, r)
		}
	}
	return p
}

func mentionsAny(s string, ids []string) bool {
	for _, id := range ids {
		if strings.Contains(s, id) {
			return true
		}
	}
	return false
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// PreviewText renders a preview as plain lines: each message's index, role, reasons and tokens, then its content
// (clipped to clip runes per message, 0 for all), then the dropped entries and the token sections.
func PreviewText(p Preview, clip int) []string {
	var out []string
	for _, m := range p.Messages {
		msg := m.Message
		head := fmt.Sprintf("[%d] %s", m.Index, Role(msg.GetRole()))
		if msg.GetName() != "" {
			head += " " + msg.GetName()
		}
		if msg.GetToolCallId() != "" {
			head += " (" + msg.GetToolCallId() + ")"
		}
		head += fmt.Sprintf(" — %d tokens", m.Tokens)
		if len(m.Memories) > 0 {
			ids := make([]string, len(m.Memories))
			for i, id := range m.Memories {
				ids[i] = fmt.Sprintf("#%d", id)
			}
			head += " — memory " + strings.Join(ids, ", ")
		}
		out = append(out, head)
		if len(m.Reasons) > 0 {
			out = append(out, "    why: "+strings.Join(m.Reasons, "; "))
		}
		if c := msg.GetContent(); c != "" {
			if clip > 0 {
				c = Clip(c, clip)
			}
			for _, l := range strings.Split(Safe(c), "\n") {
				out = append(out, "    "+l)
			}
		}
		for _, tc := range msg.GetToolCalls() {
			out = append(out, Safe(fmt.Sprintf("    → %s(%s) id=%s", tc.GetName(), tc.GetArgumentsJson(), tc.GetId())))
		}
	}
	if len(p.Dropped) > 0 {
		out = append(out, fmt.Sprintf("dropped (%d):", len(p.Dropped)))
		for _, e := range p.Dropped {
			out = append(out, fmt.Sprintf("    #%d seq %d — %s", e.GetMemoryId(), e.GetSeq(), e.GetReason()))
		}
	}
	for _, r := range p.Repairs {
		out = append(out, "repair: "+r)
	}
	t := p.Tokens
	out = append(out, fmt.Sprintf("tokens: system %d, mission %d, carried %d, history %d, current turn %d, synthetic %d, tools %d = %d of %d",
		t.GetSystem(), t.GetMission(), t.GetCarried(), t.GetHistory(), t.GetCurrentTurn(), t.GetSynthetic(), t.GetTools(), t.GetTotal(), p.Budget))
	return out
}

// LastError is a mysis's last error, or the reason it is errored when the runner recorded none.
func LastError(s *runnerv1.MysisStatus) string {
	if e := s.GetLastError(); e != "" {
		return e
	}
	if s.GetMysis().GetState() == memoryv1.MysisState_MYSIS_STATE_ERRORED {
		return s.GetMysis().GetStateReason()
	}
	return ""
}

// BadValue is the sentence for a value that does not parse, as the CLI says it of a flag: `--temperature: "hot" is
// not a number`.
func BadValue(flag, value, kind string) error {
	return Sentencef("--%s: %q is not %s", flag, value, kind)
}
