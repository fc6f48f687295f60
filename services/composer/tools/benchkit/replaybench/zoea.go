package replaybench

import (
	"fmt"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/tools/benchkit/replaybench/v1compose"
)

func v1Memories(rows []compose.Memory) []v1compose.Memory {
	out := make([]v1compose.Memory, len(rows))
	for i, r := range rows {
		out[i] = v1compose.Memory{ID: r.ID, Seq: r.Seq, Turn: r.Turn, Role: r.Role, Source: v1compose.Source(r.Source),
			SenderID: r.SenderID, Content: r.Content, Reasoning: r.Reasoning, ToolCalls: r.ToolCalls,
			ToolCallID: r.ToolCallID, ToolName: r.ToolName}
	}
	return out
}

// ZoeaV1 is composition v1 (the frozen copy) at its default policy (budget overridable), fed what v1's GetComposeWindow returned: the
// newest ScanWindow rows and the mission. v1 does not know the tool definitions.
func ZoeaV1(system string, tok *o200k.Tokenizer, budget int) System {
	p := v1compose.DefaultPolicy()
	if budget > 0 {
		p.TokenBudget = budget
	}
	c := tok.NewCounter()
	return System{Name: "Zoea v1", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		in := v1compose.Input{SystemPrompt: system, Window: v1Memories(V1Window(rows, p.ScanWindow))}
		if m := Mission(rows); m != nil {
			in.Mission = &v1compose.Mission{MemoryID: m.MemoryID, Seq: m.Seq, Source: v1compose.Source(m.Source), SenderID: m.SenderID, Content: m.Content}
		}
		res, err := v1compose.ComposeWith(in, p, c)
		return res.Messages, err
	}}
}

// ZoeaV2 is the live compose package at its default policy (budget overridable), fed what the v2 GetComposeWindow
// returns for the policy's carry options (V2Window, with each tool result's call arguments and key as the memory
// service stores them) and the tool definitions, which it budgets for.
func ZoeaV2(system string, tok *o200k.Tokenizer, tools []ToolDef, budget int, tune func(*compose.Policy)) System {
	next := v2Session(system, tok, tools, budget, v2Policy(tune))
	return System{Name: "Zoea v2", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		res, err := next(rows)
		return res.Messages, err
	}}
}

// ZoeaV2Replicas is Zoea v2 composed by n composer replicas taking turns (round-robin), each starting from the
// compaction it chose itself last, as replicas do for a caller that does not pass previous_compaction back. With it
// passed back (the runner does), n replicas compose what ZoeaV2 does.
func ZoeaV2Replicas(system string, tok *o200k.Tokenizer, tools []ToolDef, budget int, tune func(*compose.Policy), n int) System {
	replicas := make([]func([]compose.Memory) (compose.Result, error), n)
	for i := range replicas {
		replicas[i] = v2Session(system, tok, tools, budget, v2Policy(tune))
	}
	calls := 0
	return System{Name: fmt.Sprintf("Zoea v2, %d replicas without previous_compaction", n), Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		res, err := replicas[calls%n](rows)
		calls++
		return res.Messages, err
	}}
}

// v2Policy is composition v2's policy (the watermark compaction), then tune.
func v2Policy(tune func(*compose.Policy)) func(*compose.Policy) {
	return func(p *compose.Policy) {
		p.Compaction = compose.CompactionWatermark
		if tune != nil {
			tune(p)
		}
	}
}

// v2Session returns one session's Zoea v2 composer: each call composes the request for rows, starting from the
// boundary of the previous call as the composer service remembers it per mysis.
func v2Session(system string, tok *o200k.Tokenizer, tools []ToolDef, budget int, tune func(*compose.Policy)) func([]compose.Memory) (compose.Result, error) {
	p := compose.DefaultPolicy()
	if budget > 0 {
		p.TokenBudget = budget
	}
	if tune != nil {
		tune(&p)
	}
	c := tok.NewCounter()
	ctools := make([]compose.Tool, len(tools))
	for i, t := range tools {
		ctools[i] = compose.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	snapshot, pinned := p.WindowTools() // what the composer asks the memory service for
	o := WindowOptions{Window: p.ScanWindow, CarryLimit: p.CarryLimit, SnapshotTools: snapshot,
		PinnedTools: pinned, ReplyLimit: p.ReplyLimit, MaxTurnRows: p.MaxTurnRows}
	var prev, prevSeq int64 // the previous request's boundary, which the composer remembers
	return func(rows []compose.Memory) (compose.Result, error) {
		o.RecentFrom = prev
		w := V2Window(rows, o)
		in := compose.Input{SystemPrompt: system, Mission: w.Mission, Window: withCallKeys(w.Memories),
			RecentStartSeq: w.RecentStartSeq, ObjectiveSeq: w.ObjectiveSeq, TurnTruncated: w.TurnTruncated, Tools: ctools,
			PrevBoundary: prev, PrevCompactSeq: prevSeq}
		res, err := compose.ComposeWith(in, p, c)
		if err == nil {
			prev, prevSeq = res.Manifest.Boundary, res.Manifest.CompactSeq
		}
		return res, err
	}
}

// withCallKeys sets CallArguments and CallKey on the tool results of a window, as a v2 memory service returns them.
func withCallKeys(rows []compose.Memory) []compose.Memory {
	args := map[string]string{}
	out := make([]compose.Memory, len(rows))
	for i, r := range rows {
		for _, tc := range r.ToolCalls {
			args[tc.ID] = tc.Arguments
		}
		if r.Role == chat.RoleTool {
			r.CallArguments = args[r.ToolCallID]
			r.CallKey = CallKey(r.ToolName, r.CallArguments)
		}
		out[i] = r
	}
	return out
}

// ZoeaV3 is the live compose package at its default policy (composition v3: compaction priced with the Anthropic
// cache model, which billed (a) uses), fed like ZoeaV2.
func ZoeaV3(system string, tok *o200k.Tokenizer, tools []ToolDef, budget int, tune func(*compose.Policy)) System {
	next := v2Session(system, tok, tools, budget, func(p *compose.Policy) {
		p.Compaction = compose.CompactionPriced
		p.Cache = compose.CacheAnthropic
		if tune != nil {
			tune(p)
		}
	})
	return System{Name: "Zoea v3", Compose: func(rows []compose.Memory) ([]chat.Message, error) {
		res, err := next(rows)
		return res.Messages, err
	}}
}
