package replaybench

import (
	"fmt"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
)

// System is one way of composing a request: it gets the mysis's whole history before an LLM call (the benchmark's
// stand-in for the database) and returns the messages it would send.
type System struct {
	Name    string
	Compose func(rows []compose.Memory) ([]chat.Message, error)
}

// SeedWindow is the seed's MaxContextMessages: every seed system reads the newest 20 rows.
const SeedWindow = 20

// seedNudge is the seed's synthetic encouragement.
const seedNudge = "Continue your mission. Check notifications and coordinate with the swarm."

func toMessage(m compose.Memory) chat.Message {
	switch m.Role {
	case chat.RoleTool:
		return chat.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.ToolName}
	case chat.RoleAssistant:
		return chat.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls}
	}
	return chat.Message{Role: m.Role, Content: m.Content}
}

func appendRows(out []chat.Message, rows []compose.Memory) []chat.Message {
	for _, r := range rows {
		out = append(out, toMessage(r))
	}
	return out
}

// FullHistory sends every row.
func FullHistory(system string) System {
	return System{Name: "full history", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		return appendRows([]chat.Message{{Role: chat.RoleSystem, Content: system}}, rows), nil
	}}
}

// LastN sends the newest n rows as they are (the seed v0.3 sliding window).
func LastN(system string, n int) System {
	return System{Name: "last-20", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		return appendRows([]chat.Message{{Role: chat.RoleSystem, Content: system}}, rows[max(0, len(rows)-n):]), nil
	}}
}

// latestLoop is the seed's extractLatestToolLoop: the newest assistant message with tool calls and the tool rows
// that directly follow it.
func latestLoop(w []compose.Memory) []compose.Memory {
	for i := len(w) - 1; i >= 0; i-- {
		if w[i].Role == chat.RoleAssistant && len(w[i].ToolCalls) > 0 {
			j := i + 1
			for j < len(w) && w[j].Role == chat.RoleTool {
				j++
			}
			return w[i:j]
		}
	}
	return nil
}

// SeedLoopSlice is the seed's v0.4 loop slice as coded (seed 000, "Loop Slice Model"): system prompt, one prompt
// source chosen by priority from the 20-row window (commander direct, then commander broadcast, then a swarm
// broadcast, else a synthetic nudge; the seed never stored nudges, so stored nudge rows are not prompt sources),
// then the newest tool loop of the window.
func SeedLoopSlice(system string) System {
	return System{Name: "seed loop slice", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		w := rows[max(0, len(rows)-SeedWindow):]
		out := []chat.Message{{Role: chat.RoleSystem, Content: system}}
		var direct, commander, swarm *compose.Memory
		for i := len(w) - 1; i >= 0; i-- {
			m := &w[i]
			if m.Role != chat.RoleUser {
				continue
			}
			switch {
			case m.Source == compose.SourceDirect && direct == nil:
				direct = m
			case m.Source == compose.SourceBroadcast && m.SenderID == "" && commander == nil:
				commander = m
			case m.Source == compose.SourceBroadcast && m.SenderID != "" && swarm == nil:
				swarm = m
			}
		}
		switch {
		case direct != nil:
			out = append(out, toMessage(*direct))
		case commander != nil:
			out = append(out, toMessage(*commander))
		case swarm != nil:
			out = append(out, toMessage(*swarm))
		default:
			out = append(out, chat.Message{Role: chat.RoleUser, Content: seedNudge})
		}
		return appendRows(out, latestLoop(w)), nil
	}}
}

// SeedTurnAware is the seed's v0.5 turn-aware composition as coded (seed 003 and the seed's getContextMemories):
// in the newest 20 rows, the turn starts at the newest user prompt (direct, broadcast or nudge); before it only the
// newest tool loop is sent, from it on everything. With no prompt in the window, the newest broadcast from the
// whole history (or else a synthetic nudge) is sent after the window's newest loop. Then every older result of a
// get_* tool is removed, and every assistant message one of whose calls lost its result.
func SeedTurnAware(system string) System {
	return System{Name: "seed turn-aware", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		w := rows[max(0, len(rows)-SeedWindow):]
		b := -1
		for i := len(w) - 1; i >= 0; i-- {
			if w[i].Role == chat.RoleUser && (w[i].Source == compose.SourceDirect || w[i].Source == compose.SourceBroadcast ||
				w[i].Source == compose.SourceNudge) {
				b = i
				break
			}
		}
		ctx := []compose.Memory{}
		if b > 0 {
			ctx = append(ctx, latestLoop(w[:b])...)
		}
		if b >= 0 {
			ctx = append(ctx, w[b:]...)
		} else {
			ctx = append(ctx, latestLoop(w)...)
			var broadcast *compose.Memory
			for i := len(rows) - 1; i >= 0; i-- {
				if rows[i].Role == chat.RoleUser && rows[i].Source == compose.SourceBroadcast {
					broadcast = &rows[i]
					break
				}
			}
			if broadcast != nil {
				ctx = append(ctx, *broadcast)
			} else {
				ctx = append(ctx, compose.Memory{Role: chat.RoleUser, Source: compose.SourceSystem, Content: seedNudge})
			}
		}
		ctx = seedCompactSnapshots(ctx)
		ctx = seedRemoveOrphanedCalls(ctx)
		return appendRows([]chat.Message{{Role: chat.RoleSystem, Content: system}}, ctx), nil
	}}
}

func seedIsSnapshot(name string) bool {
	return strings.HasPrefix(name, "get_") || name == "zoea_swarm_status" || name == "zoea_list_myses"
}

// seedCompactSnapshots keeps only the newest result of each snapshot tool, removing the older result rows.
func seedCompactSnapshots(rows []compose.Memory) []compose.Memory {
	latest := map[string]int{}
	for i, r := range rows {
		if r.Role == chat.RoleTool && seedIsSnapshot(r.ToolName) {
			latest[r.ToolName] = i
		}
	}
	out := rows[:0:0]
	for i, r := range rows {
		if r.Role == chat.RoleTool && seedIsSnapshot(r.ToolName) && latest[r.ToolName] != i {
			continue
		}
		out = append(out, r)
	}
	return out
}

// seedRemoveOrphanedCalls removes assistant messages with a call that has no result in the list.
func seedRemoveOrphanedCalls(rows []compose.Memory) []compose.Memory {
	have := map[string]bool{}
	for _, r := range rows {
		if r.Role == chat.RoleTool {
			have[r.ToolCallID] = true
		}
	}
	out := rows[:0:0]
	for _, r := range rows {
		orphan := false
		for _, tc := range r.ToolCalls {
			if !have[tc.ID] {
				orphan = true
				break
			}
		}
		if !orphan {
			out = append(out, r)
		}
	}
	return out
}

// KeepEverything is issue 28's simple packer: the newest commander prompt (the objective) and every row since it as
// stored, each superseded result (a newer result of the same call follows, by compose.DefaultPolicy's call key)
// replaced by a one-line stub and every result cut to the default result cap; nothing before the objective. With a budget above 0 (tool definitions counted), the
// oldest loops, replies and prompts after the objective go first until the request fits.
func KeepEverything(system string, tok *o200k.Tokenizer, tools []ToolDef, budget int) System {
	name := "keep everything, no budget"
	if budget > 0 {
		name = fmt.Sprintf("keep everything, budget %s", thousands(int64(budget)))
	}
	c := tok.NewCounter()
	toolTokens := ToolTokens(c, tools)
	p := compose.DefaultPolicy()
	return System{Name: name, Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		start := 0
		for i := len(rows) - 1; i >= 0; i-- {
			if IsCommanderPrompt(rows[i]) {
				start = i
				break
			}
		}
		w := rows[start:]
		args := map[string]string{}
		for _, r := range w {
			for _, tc := range r.ToolCalls {
				args[tc.ID] = tc.Arguments
			}
		}
		seen := map[string]bool{}
		body := make([]chat.Message, len(w))
		for i := len(w) - 1; i >= 0; i-- {
			body[i] = toMessage(w[i])
			if r := w[i]; r.Role == chat.RoleTool {
				k := p.CallKey(r.ToolName, args[r.ToolCallID])
				switch {
				case seen[k]:
					body[i].Content = fmt.Sprintf("[superseded: a newer %s result follows; this one is memory #%d]", r.ToolName, r.ID)
				case c.Count(r.Content) > p.ToolResultCap:
					// Cut like every budgeted system cuts (a 50–200 KB map would otherwise dwarf the rest).
					body[i].Content = r.Content[:c.PrefixLen(r.Content, p.ToolResultCap-32)] +
						fmt.Sprintf("…[truncated; full result is memory #%d]", r.ID)
				}
				seen[k] = true
			}
		}
		head := []chat.Message{{Role: chat.RoleSystem, Content: system}}
		if len(body) > 0 && body[0].Role == chat.RoleUser {
			head, body = append(head, body[0]), body[1:]
		}
		if budget > 0 {
			n := HistoryTokens(c, head) + toolTokens
			sizes := make([]int, len(body))
			for i, m := range body {
				sizes[i] = MessageTokens(c, m)
				n += sizes[i]
			}
			from := 0
			for n > budget && from < len(body)-1 {
				// Drop one unit from the front: a message and the tool results answering it.
				n -= sizes[from]
				from++
				for from < len(body) && body[from].Role == chat.RoleTool {
					n -= sizes[from]
					from++
				}
				// The first message after the head must not be a second user message in a row.
				for from < len(body)-1 && body[from].Role == chat.RoleUser && len(head) > 1 {
					n -= sizes[from]
					from++
				}
			}
			body = body[from:]
		}
		return append(head, body...), nil
	}}
}
