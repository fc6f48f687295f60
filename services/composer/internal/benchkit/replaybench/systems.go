package replaybench

import (
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
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
