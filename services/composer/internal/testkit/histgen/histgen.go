// Package histgen generates mysis histories for the composer's fuzz test and soak: well-formed play interleaved with
// every way a stored history breaks in practice — a crash between a call and its results, rows lost mid-loop,
// duplicated or empty tool call ids, results stored after a broadcast, stored system prompts, huge results — plus
// random windows, missions, counts and policies. It also holds the property checks every composition must pass, so
// the fuzz test and the soak command agree on what "correct" means.
package histgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
)

// Case is one generated compose call.
type Case struct {
	Input  compose.Input
	Policy compose.Policy
}

// Source supplies choices: random numbers for the soak, fuzz bytes for the fuzzer.
type Source interface {
	IntN(n int) int
}

// Bytes is a Source reading choices from fuzz input; once exhausted it answers 0, so every input is a valid history.
type Bytes struct {
	data []byte
}

// NewBytes returns a Source over data.
func NewBytes(data []byte) *Bytes { return &Bytes{data: data} }

// IntN returns a number in [0, n).
func (b *Bytes) IntN(n int) int {
	if n <= 1 || len(b.data) == 0 {
		return 0
	}
	v := int(b.data[0])
	b.data = b.data[1:]
	if n > 256 && len(b.data) > 0 {
		v = v<<8 | int(b.data[0])
		b.data = b.data[1:]
	}
	return v % n
}

// Rand adapts math/rand/v2 as a Source.
type Rand struct{ *rand.Rand }

// NewRand returns a seeded Source.
func NewRand(seed uint64) Rand { return Rand{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

// Generator builds cases. Its bodies are prebuilt once so that generating a million cases stays cheap.
type Generator struct {
	small, medium, huge []string
}

var tools = []string{"get_status", "get_ship", "get_system", "get_poi", "get_nearby", "get_cargo", "get_map", "mine",
	"sell", "travel", "login", "register", "get_notifications", "captains_log_add", "zoea_search_messages"}

// NewGenerator returns a Generator with its body pools built.
func NewGenerator() *Generator {
	g := &Generator{}
	g.small = []string{"ok", `{"mined":"iron_ore","quantity":3}`, `{"sold":12,"credits":340}`, "", "error: not docked",
		`{"session_id":"0f3a9c2e-77b1","username":"mysis-7"}`, "Ünïcödé 🚀 result", "a|b:c \"quoted\""}
	for i := range 6 {
		var sb strings.Builder
		sb.WriteString(`{"system":{"id":"sys_` + fmt.Sprint(i) + `","pois":[`)
		for j := range 8 + 5*i {
			fmt.Fprintf(&sb, `{"id":"poi_%d_%d","name":"Belt %d","type":"asteroid_belt","resources":["iron_ore","copper_ore"],"distance":%d.%d},`, i, j, j, j*7, j%10)
		}
		sb.WriteString(`{}]}}`)
		g.medium = append(g.medium, sb.String())
	}
	for i := range 3 {
		var sb strings.Builder
		for j := range 800 * (i + 1) {
			fmt.Fprintf(&sb, `{"system":"S%d","links":["S%d","S%d"],"x":%d,"y":%d}`+"\n", j, j+1, j*3, j%97, j%89)
		}
		g.huge = append(g.huge, sb.String())
	}
	g.huge = append(g.huge, strings.Repeat("x", 12_000)) // one 12 KB "word": the worst case for byte-pair merging
	return g
}

type builder struct {
	src   Source
	g     *Generator
	rows  []compose.Memory
	seq   int64
	turn  int64
	id    int64
	calls []string // ids issued so far, for deliberate duplicates
}

func (b *builder) add(m compose.Memory) {
	b.seq++
	b.id += 1 + int64(b.src.IntN(3))
	m.Seq, m.ID = b.seq, b.id
	if m.Role == chat.RoleUser && (m.Source == compose.SourceDirect || m.Source == compose.SourceBroadcast || m.Source == compose.SourceNudge) {
		b.turn++
	}
	m.Turn = b.turn
	b.rows = append(b.rows, m)
}

func (b *builder) body() string {
	switch v := b.src.IntN(100); {
	case v < 65:
		return b.g.small[b.src.IntN(len(b.g.small))]
	case v < 98:
		return b.g.medium[b.src.IntN(len(b.g.medium))]
	default:
		return b.g.huge[b.src.IntN(len(b.g.huge))]
	}
}

func (b *builder) args() string {
	switch b.src.IntN(10) {
	case 0:
		return ""
	case 1:
		return `{"text":"a|b:c \"q\" }{ [TOOL_CALLS]x:y|z"}`
	case 2:
		return `{"bad":`
	case 3:
		return `[1,2]`
	default:
		return fmt.Sprintf(`{"target":"poi_%d"}`, b.src.IntN(50))
	}
}

// loop adds an assistant message with parallel calls and (usually) their results, with the faults of real stores.
func (b *builder) loop() {
	n := 1 + b.src.IntN(4)
	var calls []chat.ToolCall
	for k := range n {
		id := fmt.Sprintf("call_%d_%d", b.seq+1, k)
		switch b.src.IntN(25) {
		case 0:
			id = ""
		case 1:
			if len(b.calls) > 0 {
				id = b.calls[b.src.IntN(len(b.calls))]
			}
		case 2:
			if k > 0 {
				id = calls[0].ID
			}
		}
		name := tools[b.src.IntN(len(tools))]
		if b.src.IntN(40) == 0 {
			name = ""
		}
		calls = append(calls, chat.ToolCall{ID: id, Name: name, Arguments: b.args()})
		b.calls = append(b.calls, id)
	}
	content := ""
	if b.src.IntN(3) == 0 {
		content = "Let me check."
	}
	b.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: content, ToolCalls: calls, Reasoning: "thinking"})
	if b.src.IntN(12) == 0 {
		return // crash before any result was stored
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if b.src.IntN(4) == 0 {
		for i := n - 1; i > 0; i-- {
			j := b.src.IntN(i + 1)
			order[i], order[j] = order[j], order[i]
		}
	}
	for _, k := range order {
		switch b.src.IntN(30) {
		case 0:
			continue // lost row
		case 1:
			b.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceBroadcast, Content: "Broadcast: regroup at Sol."})
		case 2:
			b.add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: "ghost", ToolName: "mine", Content: "orphan"})
		}
		r := compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: calls[k].ID, ToolName: calls[k].Name, Content: b.body()}
		b.add(r)
		if b.src.IntN(40) == 0 {
			b.add(r) // duplicated result row (retried append without idempotency)
		}
	}
}

// Case builds one case from src.
func (g *Generator) Case(src Source) Case {
	b := &builder{src: src, g: g}
	steps := b.src.IntN(70)
	var prompts []compose.Memory
	for range steps {
		switch v := b.src.IntN(100); {
		case v < 8:
			b.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceDirect, Content: fmt.Sprintf("Commander: mine %d iron ore and sell it.", b.src.IntN(100))})
			prompts = append(prompts, b.rows[len(b.rows)-1])
		case v < 14:
			sender := ""
			if b.src.IntN(3) == 0 {
				sender = "mysis-2"
			}
			b.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceBroadcast, SenderID: sender, Content: "Swarm: explore the northern systems."})
			if sender == "" {
				prompts = append(prompts, b.rows[len(b.rows)-1])
			}
		case v < 20:
			b.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceNudge, Content: "Continue your mission. Check notifications and coordinate with the swarm."})
		case v < 75:
			b.loop()
		case v < 88:
			b.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: "Done. Cargo is full."})
		case v < 90:
			b.add(compose.Memory{Role: chat.RoleSystem, Source: compose.SourceSystem, Content: "You are a mysis (stored copy)."})
		case v < 92:
			b.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM})
		case v < 94:
			b.add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: fmt.Sprintf("call_%d_0", b.src.IntN(int(b.seq)+1)), ToolName: "get_status", Content: "late"})
		case v < 95:
			b.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceDirect, Content: "   "})
		default:
			b.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceDirect, Content: strings.Repeat("Long order. ", 50+b.src.IntN(200))})
		}
	}
	p := compose.DefaultPolicy()
	p.ScanWindow = 3 + b.src.IntN(60)
	p.TokenBudget = 1500 + b.src.IntN(15000)
	p.ToolResultCap = 64 + b.src.IntN(2500)
	p.DisableMissionFallback = b.src.IntN(5) == 0

	p.CarryLimit = b.src.IntN(80)
	p.ReplyLimit = b.src.IntN(5)
	p.ReplyCap = 32 + b.src.IntN(300)
	p.HighWater = b.src.IntN(8000)
	p.CompactStep = 1 + b.src.IntN(32)
	if b.src.IntN(3) == 0 { // v2's watermark compaction; else v3's, priced with one of the cache models
		p.Compaction = compose.CompactionWatermark
	}
	p.Cache = []compose.CacheModel{compose.CacheAnthropic, compose.CacheOpenAI, compose.CacheLocal, compose.CacheNone}[b.src.IntN(4)]

	rows := b.rows
	if len(rows) > p.ScanWindow {
		rows = rows[len(rows)-p.ScanWindow:]
	}
	var v2 Window
	if b.src.IntN(2) == 0 { // a v2 window: carried rows before the recent part
		var objective int64
		if len(prompts) > 0 && b.src.IntN(2) == 0 {
			objective = prompts[len(prompts)-1].Seq
		}
		v2 = ComposeWindow(b.rows, p, objective)
		rows = v2.Rows
	}
	rows = slices.Clone(rows)
	for range b.src.IntN(3) { // rows lost at random cut points
		if len(rows) > 0 {
			i := b.src.IntN(len(rows))
			rows = slices.Delete(rows, i, i+1)
		}
	}
	in := compose.Input{
		SystemPrompt:       "You are a mysis, an autonomous SpaceMolt pilot. Use tools. Context is limited - use search tools for older information.",
		Window:             rows,
		EncouragementCount: b.src.IntN(5),
		BeginTurn:          b.src.IntN(2) == 0,
		RecentStartSeq:     v2.RecentStartSeq,
		ObjectiveSeq:       v2.ObjectiveSeq,
		TurnTruncated:      v2.TurnTruncated,
	}
	for i := range b.src.IntN(4) {
		in.Tools = append(in.Tools, Tool(i, b.src.IntN(3)))
	}
	if len(rows) > 0 && b.src.IntN(2) == 0 { // the previous request's compaction, anywhere in the window
		r := rows[b.src.IntN(len(rows))]
		// Its compaction seq was the newest memory then: never past the newest one now.
		in.PrevBoundary, in.PrevCompactSeq = r.Seq, min(r.Seq+int64(b.src.IntN(8)), rows[len(rows)-1].Seq)
	}
	if b.src.IntN(4) == 0 {
		in.SincePrevious = 10 * time.Minute // past every cache's lifetime: a rewrite is free
	}
	switch v := b.src.IntN(4); {
	case v == 0 && len(prompts) > 0:
		m := prompts[len(prompts)-1]
		in.Mission = &compose.Mission{MemoryID: m.ID, Seq: m.Seq, Source: m.Source, Content: m.Content}
	case v == 1:
		in.Mission = &compose.Mission{Source: compose.SourceBroadcast, Content: "Swarm-wide: build a mining outpost."}
	}
	return Case{Input: in, Policy: p}
}

// Outcome classifies a composition for the soak's counters.
type Outcome int

// Outcomes.
const (
	OK         Outcome = iota
	Idle               // no request, by contract
	Unfit              // a *BudgetError: composition refused rather than exceed the budget
	Invalid            // output failed chatvalid.Strict, was not deterministic, or broke the runner contract
	OverBudget         // output exceeds the token budget
)

// Check composes c and verifies every property. It returns the outcome and, for Invalid and OverBudget, why.
func Check(c Case, tok *o200k.Tokenizer) (Outcome, error) {
	res, err := compose.Compose(c.Input, c.Policy)
	if err != nil {
		var be *compose.BudgetError
		if errors.As(err, &be) {
			return Unfit, nil
		}
		return Invalid, err
	}
	if res.Encouragement.Decision == compose.DecisionIdle {
		if res.Messages != nil || !c.Input.BeginTurn || c.Input.EncouragementCount < compose.IdleAfter {
			return Invalid, fmt.Errorf("idle decision broke the contract: %+v", res.Encouragement)
		}
		return Idle, nil
	}
	if err := chatvalid.Strict.Validate(res.Messages); err != nil {
		return Invalid, err
	}
	if n := RequestTokens(tok, res.Messages) + ToolTokens(tok, c.Input.Tools); n > c.Policy.TokenBudget || n != res.Manifest.Tokens.Total {
		if n > c.Policy.TokenBudget {
			return OverBudget, fmt.Errorf("request has %d tokens, budget %d", n, c.Policy.TokenBudget)
		}
		return Invalid, fmt.Errorf("manifest says %d tokens, recount %d", res.Manifest.Tokens.Total, n)
	}
	if err := checkItemTokens(res.Manifest); err != nil {
		return Invalid, err
	}
	return OK, nil
}

// checkItemTokens verifies the per-memory accounting: what each memory adds, plus the system prompt, the synthetic
// messages, an out-of-window mission and the reply priming, is the request's total; dropped memories add nothing.
func checkItemTokens(m compose.Manifest) error {
	sum := m.Tokens.System + m.Tokens.Synthetic + m.Tokens.Tools + m.Tokens.Framing
	if m.Mission != nil {
		sum += m.Mission.Tokens
	}
	for _, it := range m.Items {
		if it.Disposition == compose.Dropped && it.Tokens != 0 {
			return fmt.Errorf("dropped memory #%d has %d tokens", it.MemoryID, it.Tokens)
		}
		sum += it.Tokens
	}
	if sum != m.Tokens.Total {
		return fmt.Errorf("per-memory tokens add up to %d, total %d", sum, m.Tokens.Total)
	}
	return nil
}

// CheckDeterminism composes c twice and compares the JSON of both results, and, when a nudge is to be persisted,
// checks that composing again after persisting it gives the same messages.
func CheckDeterminism(c Case) error {
	a, errA := compose.Compose(c.Input, c.Policy)
	b, errB := compose.Compose(c.Input, c.Policy)
	ja, _ := json.Marshal(struct {
		R compose.Result
		E string
	}{a, fmt.Sprint(errA)})
	jb, _ := json.Marshal(struct {
		R compose.Result
		E string
	}{b, fmt.Sprint(errB)})
	if string(ja) != string(jb) {
		return errors.New("two compositions of the same input differ")
	}
	if errA != nil || a.Nudge == nil {
		return nil
	}
	next := Persisted(c, a)
	r2, err := compose.Compose(next.Input, next.Policy)
	if err != nil {
		return fmt.Errorf("compose after persisting the nudge: %w", err)
	}
	m1, _ := json.Marshal(a.Messages)
	m2, _ := json.Marshal(r2.Messages)
	if string(m1) != string(m2) {
		return fmt.Errorf("messages differ after persisting the nudge:\n%s\n%s", m1, m2)
	}
	if r2.Encouragement.Decision != compose.DecisionNone {
		return fmt.Errorf("mid-turn compose after a nudge decided %v", r2.Encouragement.Decision)
	}
	return nil
}

// Persisted is the case the runner composes next after storing res.Nudge: the nudge row opens a new turn, the
// window is the newest ScanWindow rows, and the count is the one the decision asked for.
func Persisted(c Case, res compose.Result) Case {
	w := c.Input.Window
	var seq, turn, id int64
	for _, m := range w {
		seq, turn, id = max(seq, m.Seq), max(turn, m.Turn), max(id, m.ID)
	}
	w = append(slices.Clone(w), compose.Memory{ID: id + 1000, Seq: seq + 1, Turn: turn + 1, Role: chat.RoleUser,
		Source: compose.SourceNudge, Content: res.Nudge.Content})
	if c.Input.RecentStartSeq == 0 && len(w) > c.Policy.ScanWindow { // a v2 window keeps its rows (see COMPOSITION.md)
		w = w[len(w)-c.Policy.ScanWindow:]
	}
	next := c
	next.Input.Window = w
	next.Input.BeginTurn = false
	next.Input.EncouragementCount = res.Encouragement.Count
	return next
}

// RequestTokens recounts a request independently of the composer's bookkeeping, with the same framing constants.
func RequestTokens(tok *o200k.Tokenizer, msgs []chat.Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + tok.Count(m.Content) + tok.Count(m.Name) + tok.Count(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 4 + tok.Count(tc.ID) + tok.Count(tc.Name) + tok.Count(tc.Arguments)
		}
	}
	return n
}

// Tool returns a generated tool definition: a plain one, a big one, or one with parameters that are not a schema.
func Tool(i, kind int) compose.Tool {
	t := compose.Tool{Name: fmt.Sprintf("tool_%d", i), Description: "Does one SpaceMolt thing.",
		Parameters: `{"type":"object","properties":{"target":{"type":"string"}}}`}
	switch kind {
	case 1:
		t.Description = strings.Repeat("A long description of a complicated tool. ", 40)
	case 2:
		t.Parameters = `not json`
	}
	return t
}
