package main

// The single-session replay (-turns): what each context strategy would send, request by request, over one session
// from internal/testkit/replay — the whole history, the original 20-message sliding window, the original loop slice
// (system + prompt + latest loop), and Zoea's composer.

import (
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/replay"
)

// strategy composes a request from the rows before a reply.
type strategy struct {
	Name    string
	Compose func(rows []compose.Memory) ([]chat.Message, error)
}

func toMessage(m compose.Memory) chat.Message {
	switch m.Role {
	case chat.RoleTool:
		return chat.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.ToolName}
	case chat.RoleAssistant:
		return chat.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls}
	}
	return chat.Message{Role: m.Role, Content: m.Content}
}

func withSystem(rows []compose.Memory) []chat.Message {
	out := []chat.Message{{Role: chat.RoleSystem, Content: replay.SystemPrompt}}
	for _, m := range rows {
		out = append(out, toMessage(m))
	}
	return out
}

// strategies returns the four strategies compared.
func strategies(policy compose.Policy) []strategy {
	return []strategy{
		{"full history", func(rows []compose.Memory) ([]chat.Message, error) { return withSystem(rows), nil }},
		{"seed sliding window (20)", func(rows []compose.Memory) ([]chat.Message, error) {
			return withSystem(rows[max(0, len(rows)-20):]), nil
		}},
		{"seed loop slice", func(rows []compose.Memory) ([]chat.Message, error) {
			w := rows[max(0, len(rows)-20):]
			out := []chat.Message{{Role: chat.RoleSystem, Content: replay.SystemPrompt}}
			prompt := -1
			for i := len(w) - 1; i >= 0; i-- {
				if w[i].Role == chat.RoleUser {
					prompt = i
					break
				}
			}
			if prompt >= 0 {
				out = append(out, toMessage(w[prompt]))
			} else {
				out = append(out, chat.Message{Role: chat.RoleUser, Content: "Continue your mission. Check notifications and coordinate with the swarm."})
			}
			call := -1
			for i := len(w) - 1; i >= 0; i-- {
				if w[i].Role == chat.RoleAssistant && len(w[i].ToolCalls) > 0 {
					call = i
					break
				}
			}
			if call >= 0 {
				out = append(out, toMessage(w[call]))
				for i := call + 1; i < len(w) && w[i].Role == chat.RoleTool; i++ {
					out = append(out, toMessage(w[i]))
				}
			}
			return out, nil
		}},
		{"zoea", func(rows []compose.Memory) ([]chat.Message, error) {
			var mission *compose.Mission
			for i := len(rows) - 1; i >= 0; i-- {
				if m := rows[i]; m.Role == chat.RoleUser && (m.Source == compose.SourceDirect || m.Source == compose.SourceBroadcast) {
					mission = &compose.Mission{MemoryID: m.ID, Seq: m.Seq, Source: m.Source, Content: m.Content}
					break
				}
			}
			res, err := compose.Compose(compose.Input{SystemPrompt: replay.SystemPrompt, Mission: mission,
				Window: rows[max(0, len(rows)-policy.ScanWindow):]}, policy)
			return res.Messages, err
		}},
	}
}

// strategyStats summarises one strategy over a session.
type strategyStats struct {
	Name        string
	Requests    int
	Invalid     int
	OverBudget  int
	Errors      int
	MeanAtTurn  map[int64]float64 // mean tokens per request within the given turns
	MaxTokens   int
	TotalTokens int64
}

// replayStrategies replays s through every strategy and reports tokens per request at the given turns.
func replayStrategies(s replay.Session, policy compose.Policy, at []int64) ([]strategyStats, error) {
	tok, err := o200k.Load()
	if err != nil {
		return nil, err
	}
	var out []strategyStats
	for _, st := range strategies(policy) {
		stats := strategyStats{Name: st.Name, MeanAtTurn: map[int64]float64{}}
		sums := map[int64]int{}
		ns := map[int64]int{}
		for i, at := range s.Requests {
			msgs, err := st.Compose(s.Rows[:at])
			stats.Requests++
			if err != nil {
				stats.Errors++
				continue
			}
			if chatvalid.Strict.Validate(msgs) != nil {
				stats.Invalid++
			}
			n := histgen.RequestTokens(tok, msgs)
			if n > policy.TokenBudget {
				stats.OverBudget++
			}
			stats.MaxTokens = max(stats.MaxTokens, n)
			stats.TotalTokens += int64(n)
			sums[s.Turns[i]] += n
			ns[s.Turns[i]]++
		}
		for _, t := range at {
			if ns[t] > 0 {
				stats.MeanAtTurn[t] = float64(sums[t]) / float64(ns[t])
			}
		}
		out = append(out, stats)
	}
	return out, nil
}
