package histgen

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
)

// PlayOptions shape a generated session.
type PlayOptions struct {
	Calls       int    // tool calls in the session
	Seed        uint64 // the same seed gives the same session
	TextReplies bool   // the model replies with text between loops (each reply ends a turn; the runner nudges)
}

// PlaySession is a generated session shaped like real LLM play of SpaceMolt: login first, a commander prompt
// followed by 20–50 tool calls, repeated reads of the same tools with the same or other arguments, results from 15
// characters to 4 KB and now and then a 50 KB map, missions changing every couple of hundred calls.
type PlaySession struct {
	Rows     []compose.Memory
	Requests []int // the runner composed a request from Rows[:i] for each i
	Tools    []compose.Tool
	missions []int // indexes of mission rows
}

// MissionAt is the mission in force for a request composed from Rows[:at].
func (s PlaySession) MissionAt(at int) *compose.Mission {
	var m *compose.Mission
	for _, i := range s.missions {
		if i < at {
			r := s.Rows[i]
			m = &compose.Mission{MemoryID: r.ID, Seq: r.Seq, Source: r.Source, Content: r.Content}
		}
	}
	return m
}

// ObjectiveAt is the mission's seq for a request composed from Rows[:at] (0 when none).
func (s PlaySession) ObjectiveAt(at int) int64 {
	if m := s.MissionAt(at); m != nil {
		return m.Seq
	}
	return 0
}

// Play generates a session.
func Play(o PlayOptions) PlaySession {
	r := rand.New(rand.NewPCG(o.Seed, 11))
	var s PlaySession
	var seq, turn int64
	add := func(m compose.Memory) {
		seq++
		m.Seq, m.ID = seq, 1000+seq
		if m.Role == chat.RoleUser && (m.Source == compose.SourceBroadcast || m.Source == compose.SourceDirect || m.Source == compose.SourceNudge) {
			turn++
		}
		m.Turn = turn
		s.Rows = append(s.Rows, m)
	}
	filler := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			fmt.Fprintf(&b, `{"id":"item_%d","name":"Item %d","qty":%d},`, r.IntN(500), r.IntN(500), r.IntN(90))
		}
		return "[" + b.String() + "{}]"
	}
	type tool struct {
		name string
		args func() string
		body func() string
	}
	stations := []string{"sol_station", "vega_hub", "rigel_port", "deneb_yard"}
	tools := []tool{
		{"get_status", func() string { return "{}" }, func() string {
			return fmt.Sprintf(`{"credits":%d,"location":"%s","fuel":%d,"hull":100,"cargo_used":%d}`, r.IntN(9000), stations[r.IntN(4)], r.IntN(100), r.IntN(50))
		}},
		{"view_market", func() string { return fmt.Sprintf(`{"station":"%s"}`, stations[r.IntN(4)]) }, func() string { return filler(800 + r.IntN(3200)) }},
		{"catalog", func() string {
			return fmt.Sprintf(`{"category":"%s"}`, []string{"ships", "modules", "ores"}[r.IntN(3)])
		}, func() string { return filler(1500 + r.IntN(2500)) }},
		{"get_cargo", func() string { return "{}" }, func() string { return fmt.Sprintf(`{"iron_ore":%d,"copper_ore":%d}`, r.IntN(40), r.IntN(10)) }},
		{"mine", func() string { return "{}" }, func() string { return fmt.Sprintf(`{"mined":"iron_ore","quantity":%d}`, 1+r.IntN(5)) }},
		{"travel", func() string { return fmt.Sprintf(`{"to":"poi_%d"}`, r.IntN(30)) }, func() string { return `{"arrived":true}` }},
		{"dock", func() string { return "{}" }, func() string { return "docked" }},
		{"undock", func() string { return "{}" }, func() string { return "ok" }},
		{"sell", func() string { return fmt.Sprintf(`{"item":"iron_ore","quantity":%d}`, 1+r.IntN(30)) }, func() string { return fmt.Sprintf(`{"sold":%d}`, r.IntN(30)) }},
		{"get_map", func() string { return "{}" }, func() string { return filler(50_000) }},
	}
	for _, t := range tools {
		s.Tools = append(s.Tools, compose.Tool{Name: t.name, Description: "SpaceMolt: " + strings.ReplaceAll(t.name, "_", " ") + ". Returns JSON.",
			Parameters: `{"type":"object","properties":{"session_id":{"type":"string"},"target":{"type":"string"}}}`})
	}
	calls := 0
	loop := func(name, args, body string) {
		id := fmt.Sprintf("call_%d", seq+1)
		s.Requests = append(s.Requests, len(s.Rows))
		add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Reasoning: "thinking about " + name,
			ToolCalls: []chat.ToolCall{{ID: id, Name: name, Arguments: args}}})
		add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: id, ToolName: name, Content: body, CallArguments: args})
		calls++
	}
	text := func(content string) {
		s.Requests = append(s.Requests, len(s.Rows))
		add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: content})
	}
	mission := 0
	nextMission := 0
	for calls < o.Calls {
		if calls >= nextMission {
			mission++
			nextMission = calls + 150 + r.IntN(150)
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceBroadcast, Content: fmt.Sprintf("Commander: mission %d — mine iron and sell it where it pays best.", mission)})
			s.missions = append(s.missions, len(s.Rows)-1)
			if mission == 1 {
				loop("login", `{"username":"mysis-7","password":"***"}`, `{"session_id":"9f3a-77b1","welcome":"Welcome back, pilot."}`)
			}
		} else {
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceNudge, Content: "Continue your mission. Check notifications and coordinate with the swarm."})
		}
		n := 20 + r.IntN(31)
		if o.TextReplies {
			n = 2 + r.IntN(6)
		}
		for range n {
			k := r.IntN(len(tools) - 1)
			if r.IntN(60) == 0 {
				k = len(tools) - 1
			}
			t := tools[k]
			loop(t.name, t.args(), t.body())
		}
		text(fmt.Sprintf("Status: %d calls so far; next I will keep mining and check prices.", calls))
	}
	return s
}

// ToolTokens counts the tool definitions the way the composer does: each as the JSON function definition the
// provider receives, plus the per-message framing.
func ToolTokens(tok *o200k.Tokenizer, tools []compose.Tool) int {
	n := 0
	for _, t := range tools {
		n += 4 + tok.Count(t.JSON())
	}
	return n
}
