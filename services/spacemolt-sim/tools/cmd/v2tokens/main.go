// Command v2tokens measures, with the o200k_base tokenizer, what a model would read of every action the simulator
// serves on /mcp/v2 (the text rendering or the structuredContent as JSON), and the tool-definition block a mysis
// sends on /mcp and on /mcp/v2. It plays one account through the starter loop in process and prints Markdown for
// docs/BENCHMARKS.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "v2tokens:", err)
		os.Exit(1)
	}
}

type row struct {
	call             string
	text, structured int
}

func run() error {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return err
	}
	count := func(s string) int { n, _ := enc.Count(s); return n }
	engine := game.New(game.Config{Seed: 1, Tick: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = engine.Run(ctx) }()
	v1, v2 := mcpserver.New(engine, mcpserver.Options{}), mcpserver.NewV2(engine, mcpserver.Options{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", v1.Handler())
	mux.Handle("/mcp/v2", v2.Handler())
	ts := httptest.NewServer(mux)
	defer ts.Close()
	defer v1.Close()
	defer v2.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "v2tokens", Version: "1"}, nil)
	blocks, tools := map[string]int{}, map[string]int{}
	for _, ep := range []string{"/mcp", "/mcp/v2"} {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + ep}, nil)
		if err != nil {
			return err
		}
		total := 0
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			// What a provider sends per tool: name, description and the parameters without session_id (the runner
			// removes it, tools.llmSchema).
			schema, _ := json.Marshal(t.InputSchema)
			var m map[string]any
			_ = json.Unmarshal(schema, &m)
			if props, ok := m["properties"].(map[string]any); ok {
				delete(props, "session_id")
			}
			def, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": m}})
			total += count(string(def))
			tools[ep]++
		}
		blocks[ep] = total
		_ = cs.Close()
	}

	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp/v2"}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	var rows []row
	do := func(tool string, args map[string]any) (*mcp.CallToolResult, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return nil, err
		}
		text := res.Content[0].(*mcp.TextContent).Text
		sc, _ := json.Marshal(res.StructuredContent)
		name := tool
		if a, ok := args["action"].(string); ok {
			name += "." + a
		}
		if res.IsError {
			name += " (error " + strings.SplitN(strings.TrimPrefix(text, "Error: "), ":", 2)[0] + ")"
		}
		rows = append(rows, row{call: name, text: count(text), structured: count(string(sc))})
		return res, nil
	}
	a := func(action string, kv ...any) map[string]any {
		m := map[string]any{"action": action}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	script := []struct {
		tool string
		args map[string]any
	}{
		{"spacemolt_auth", a("register", "username", "measurer", "empire", "solarian")},
		{"spacemolt", a("get_status")}, {"spacemolt", a("get_ship")}, {"spacemolt", a("get_cargo")},
		{"spacemolt", a("get_system")}, {"spacemolt", a("get_poi")}, {"spacemolt", a("get_nearby")},
		{"spacemolt", a("get_map", "system_id", "sol")}, {"spacemolt", a("find_route", "id", "sol")},
		{"spacemolt_market", a("view_market")}, {"spacemolt_market", a("view_market", "item_id", "iron_ore")},
		{"spacemolt", a("undock")}, {"spacemolt", a("travel", "id", "main_belt")},
		{"spacemolt", a("mine")}, {"spacemolt", a("mine")}, {"spacemolt", a("mine")},
		{"spacemolt", a("travel", "id", "sol_central")}, {"spacemolt", a("dock")},
		{"spacemolt", a("sell", "id", "iron_ore", "quantity", 5)}, {"spacemolt", a("buy", "id", "iron_ore", "quantity", 1)},
		{"spacemolt", a("refuel")}, {"spacemolt", a("jump", "id", "nowhere")},
		{"spacemolt_social", a("chat", "target", "local", "content", "hello")},
		{"spacemolt_social", a("captains_log_add", "content", "Day one.")}, {"spacemolt_social", a("captains_log_list")},
		{"spacemolt", a("get_notifications")}, {"spacemolt", a("help")}, {"spacemolt_market", a("help")},
		{"spacemolt", a("get_commands")}, {"spacemolt_catalog", map[string]any{"type": "items"}},
		{"spacemolt_market", a("create_buy_order")}, {"spacemolt_auth", a("logout")},
	}
	for _, st := range script {
		if _, err := do(st.tool, st.args); err != nil {
			return fmt.Errorf("%s %v: %w", st.tool, st.args, err)
		}
	}
	slices.SortStableFunc(rows, func(x, y row) int { return strings.Compare(x.call, y.call) })
	fmt.Println("| call | text tokens | structuredContent tokens | text / structured |")
	fmt.Println("|---|---:|---:|---:|")
	var tt, ts2, tOK, sOK int
	for _, r := range rows {
		fmt.Printf("| `%s` | %d | %d | %.2f |\n", r.call, r.text, r.structured, float64(r.text)/float64(max(1, r.structured)))
		tt += r.text
		ts2 += r.structured
		if !strings.Contains(r.call, "(error") && !strings.HasSuffix(r.call, "get_commands") {
			tOK += r.text
			sOK += r.structured
		}
	}
	fmt.Printf("| **all %d calls** | %d | %d | %.2f |\n", len(rows), tt, ts2, float64(tt)/float64(ts2))
	fmt.Printf("| **successful calls without get_commands** | %d | %d | %.2f |\n", tOK, sOK, float64(tOK)/float64(sOK))
	fmt.Println()
	fmt.Println("| endpoint | tools | tool-definition block tokens |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| `/mcp` | %d | %d |\n", tools["/mcp"], blocks["/mcp"])
	fmt.Printf("| `/mcp/v2` | %d | %d |\n", tools["/mcp/v2"], blocks["/mcp/v2"])
	return nil
}
