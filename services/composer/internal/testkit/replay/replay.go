// Package replay generates a long SpaceMolt-like mysis session: the rows a mysis stores and the positions where the
// runner called the LLM. It is test support: the composer's benchmarks (compose, grpcapi) replay its sessions, and so
// do the tools module's composeload and composereplay (services/composer/tools), which compares context strategies
// over it.
package replay

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// SystemPrompt is a realistic mysis system prompt (~300 tokens).
var SystemPrompt = strings.Repeat("You are a mysis, an autonomous pilot in SpaceMolt. Mine, trade, explore and coordinate with your swarm. ", 8) +
	"Context is limited - use zoea_search_messages for older information."

// Session is a generated history plus the positions where the runner called the LLM.
type Session struct {
	Rows     []compose.Memory
	Requests []int // index into Rows of each assistant reply: the request is composed from Rows[:i]
	Turns    []int64
}

// Generate builds a session of the given number of turns.
func Generate(turns int, seed uint64) Session {
	r := rand.New(rand.NewPCG(seed, 7))
	var s Session
	var seq, turn, id int64
	add := func(m compose.Memory) {
		seq++
		id++
		m.Seq, m.ID = seq, id
		if m.Role == chat.RoleUser {
			turn++
		}
		m.Turn = turn
		s.Rows = append(s.Rows, m)
	}
	reply := func(m compose.Memory) {
		s.Requests = append(s.Requests, len(s.Rows))
		s.Turns = append(s.Turns, turn)
		add(m)
	}
	system := func(n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"system":{"id":"sys_%d","name":"System %d","security":"high","pois":[`, n, n)
		for j := range 10 + r.IntN(25) {
			fmt.Fprintf(&b, `{"id":"poi_%d_%d","name":"Belt %d","type":"asteroid_belt","resources":["iron_ore","copper_ore"],"distance":%d},`, n, j, j, j*13)
		}
		b.WriteString(`{}],"links":["sys_1","sys_2"]}}`)
		return b.String()
	}
	galaxy := func() string {
		var b strings.Builder
		for j := range 400 {
			fmt.Fprintf(&b, `{"system":"sys_%d","x":%d,"y":%d,"links":["sys_%d","sys_%d"]},`, j, j%97, j%89, j+1, j*3%400)
		}
		return "[" + b.String() + "{}]"
	}
	tools := []struct {
		name string
		body func() string
	}{
		{"get_status", func() string {
			return fmt.Sprintf(`{"player":{"credits":%d,"current_poi":"poi_%d"},"ship":{"fuel":%d,"hull":100,"cargo_used":%d,"cargo_capacity":50}}`, r.IntN(5000), r.IntN(40), r.IntN(100), r.IntN(50))
		}},
		{"get_system", func() string { return system(r.IntN(400)) }},
		{"mine", func() string { return fmt.Sprintf(`{"mined":"iron_ore","quantity":%d}`, 1+r.IntN(5)) }},
		{"sell", func() string { return fmt.Sprintf(`{"sold":%d,"credits":%d}`, r.IntN(20), r.IntN(900)) }},
		{"travel", func() string { return `{"arrived":true,"ticks":3}` }},
		{"get_cargo", func() string { return fmt.Sprintf(`{"iron_ore":%d,"copper_ore":%d}`, r.IntN(40), r.IntN(10)) }},
		{"get_map", galaxy},
	}
	for t := range turns {
		switch {
		case t == 0:
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceBroadcast, Content: "Commander: mine iron ore in the home system and sell it at the station."})
		case t%40 == 0:
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceDirect, Content: fmt.Sprintf("Commander: new orders, survey system sys_%d.", r.IntN(400))})
		default:
			add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceNudge, Content: "Continue your mission. Check notifications and coordinate with the swarm."})
		}
		for range 2 + r.IntN(5) {
			n := 1 + r.IntN(2)
			var calls []chat.ToolCall
			for range n {
				k := r.IntN(len(tools))
				if k == len(tools)-1 && r.IntN(4) != 0 {
					k = 0 // get_map is rare
				}
				calls = append(calls, chat.ToolCall{ID: fmt.Sprintf("call_%d_%d", seq+1, len(calls)), Name: tools[k].name, Arguments: `{"target":"poi_1"}`})
			}
			reply(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, ToolCalls: calls})
			for _, tc := range calls {
				body := ""
				for _, tl := range tools {
					if tl.name == tc.Name {
						body = tl.body()
					}
				}
				add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: body})
			}
		}
		reply(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: "Mined and sold; heading back to the belt."})
	}
	return s
}
