package compose_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// compose1 composes the request for rows h (a v2 window as the memory service returns it), starting from the
// previous request's compaction.
func composeFrom(t *testing.T, h *hist, mission *compose.Mission, p compose.Policy, prev compose.Manifest) compose.Result {
	t.Helper()
	var obj int64
	if mission != nil {
		obj = mission.Seq
	}
	w := histgen.ComposeWindowFrom(h.rows, p, obj, prev.Boundary)
	return mustCompose(t, compose.Input{SystemPrompt: systemPrompt, Mission: mission, Window: w.Rows, RecentStartSeq: w.RecentStartSeq,
		ObjectiveSeq: w.ObjectiveSeq, PrevBoundary: prev.Boundary, PrevCompactSeq: prev.CompactSeq}, p)
}

// Priced compaction (v3): while the whole history fits the budget nothing is compacted, so every request is the
// previous one plus what happened since, superseded results included; over the budget the boundary moves, and the
// manifest says why with both sides of the price.
func TestPricedCompactsOnlyOverBudget(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: mine iron at the belt.")
	p := compose.DefaultPolicy()
	p.TokenBudget = 3000
	var prev compose.Manifest
	var prevMsgs int
	moved := 0
	for i := range 40 {
		h.loop("get_status", "{}", fmt.Sprintf(`{"credits":%d,"cargo":%d,"note":"%s"}`, 100+i, i, strings.Repeat("status ", 20)))
		h.loop("mine", fmt.Sprintf(`{"n":%d}`, i), `{"mined":3}`)
		res := composeFrom(t, &h, missionOf(&h, mid), p, prev)
		n := res.Manifest.Compaction
		switch {
		case n == nil && res.Manifest.Boundary != prev.Boundary && prev.Boundary != 0:
			t.Fatalf("request %d: the boundary moved from %d to %d without a note", i, prev.Boundary, res.Manifest.Boundary)
		case n == nil && prev.Boundary != 0 && len(res.Messages) < prevMsgs:
			t.Fatalf("request %d: no compaction, yet the request shrank from %d to %d messages", i, prevMsgs, len(res.Messages))
		case n != nil:
			moved++
			if n.Why != "budget" || n.Before <= n.After || n.RewriteCost <= 0 || n.Cache != "anthropic" {
				t.Fatalf("request %d: note %+v", i, *n)
			}
		}
		if moved == 0 && strings.Count(sent(res), `"credits"`) != i+1 {
			t.Fatalf("request %d: before the first compaction every result is sent as stored", i)
		}
		prev, prevMsgs = res.Manifest, len(res.Messages)
	}
	if moved == 0 {
		t.Fatal("40 loops never outgrew a 3,000-token budget: the test proves nothing")
	}
}

// Whether a compaction pays depends on the provider's cache: without a cache (every token costs the same) a smaller
// request is always cheaper and the composer compacts at the next turn's start; with Anthropic's (re-reading costs
// 0.1×, rewriting 1.25×) the same history — little of it superseded, so compaction would save a few prompts and a
// reply but rewrite all the state — is kept as it is.
func TestPriceDependsOnCacheModel(t *testing.T) {
	build := func() (*hist, int64) {
		var h hist
		mid := h.user(compose.SourceBroadcast, "Commander: survey the belt.")
		for turn := range 4 {
			for i := range 6 {
				h.loop("scan", fmt.Sprintf(`{"target":"t%d_%d"}`, turn, i), fmt.Sprintf(`{"target":"t%d_%d","ore":%d}`, turn, i, 7*i+turn))
			}
			h.text(fmt.Sprintf("Turn %d done: %s", turn, strings.Repeat("the belt holds iron and some copper; ", 4)))
			h.user(compose.SourceNudge, "Continue your mission.")
		}
		return &h, mid
	}
	run := func(cache compose.CacheModel) compose.Result {
		h, mid := build()
		p := compose.DefaultPolicy()
		p.Cache = cache
		// The budget leaves room for ~800 more tokens (about a dozen requests of this mysis's growth): the turn
		// fits, and a saving is counted over those requests.
		p.TokenBudget = 60000
		probe := composeFrom(t, h, missionOf(h, mid), p, compose.Manifest{})
		p.TokenBudget = probe.Manifest.Tokens.Total + 800
		// The previous request's compaction: the boundary at the window's start, nothing compacted.
		first := composeFrom(t, h, missionOf(h, mid), p, compose.Manifest{})
		if first.Manifest.Compaction != nil {
			t.Fatalf("%s: a fresh request that fits was compacted: %+v", cache.Name, *first.Manifest.Compaction)
		}
		return composeFrom(t, h, missionOf(h, mid), p, first.Manifest)
	}
	kept := run(compose.CacheAnthropic)
	if kept.Manifest.Compaction != nil {
		t.Errorf("anthropic: compacted although re-reading is cheap: %+v", *kept.Manifest.Compaction)
	}
	res := run(compose.CacheNone)
	n := res.Manifest.Compaction
	if n == nil || n.Why != "price" || n.ExpectedSaving <= n.RewriteCost || n.After >= n.Before {
		t.Fatalf("no cache: want a compaction that pays, got %+v", n)
	}
	if res.Manifest.Tokens.Total >= kept.Manifest.Tokens.Total {
		t.Errorf("no cache: %d tokens after compacting, %d kept whole", res.Manifest.Tokens.Total, kept.Manifest.Tokens.Total)
	}
}

func TestCacheModelFor(t *testing.T) {
	for _, c := range []struct{ provider, model, want string }{
		{"autopilot", "autopilot", "none"}, {"ollama", "qwen3:8b", "local"}, {"llamacpp", "x", "local"},
		{"openai", "gpt-4.1", "openai"}, {"openai", "anthropic/claude-sonnet-4", "anthropic"}, {"anthropic", "claude-3-5", "anthropic"},
		{"zai", "glm-4.6", "anthropic"},
	} {
		if got := compose.CacheModelFor(c.provider, c.model).Name; got != c.want {
			t.Errorf("%s/%s: %s, want %s", c.provider, c.model, got, c.want)
		}
	}
	p := compose.DefaultPolicy()
	p.Cache = compose.CacheModel{Name: "odd", Read: 2, Write: 1}
	if _, err := compose.Compose(compose.Input{SystemPrompt: "s"}, p); err == nil {
		t.Error("a cache model that reads dearer than it writes was accepted")
	}
	p = compose.DefaultPolicy()
	p.Compaction = "sometimes"
	if _, err := compose.Compose(compose.Input{SystemPrompt: "s"}, p); err == nil {
		t.Error("an unknown compaction mode was accepted")
	}
}

// Results the carry bound leaves out below the boundary are named in the carried index, with their arguments and
// memory ids, so a fact seen once stays one search away; the index does not change while the boundary stays.
func TestCarriedIndexNamesWhatIsNotCarried(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: compare the markets.")
	var ids []int64
	for i := range 12 {
		var orders strings.Builder
		for j := range 40 {
			fmt.Fprintf(&orders, "p%d q%d; ", 7*i+j, 13*j+i)
		}
		h.loop("view_market", fmt.Sprintf(`{"item_id":"item_%d"}`, i), fmt.Sprintf(`{"item":"item_%d","best_sell":%d,"orders":"%s"}`, i, 10+i, orders.String()))
		ids = append(ids, h.rows[len(h.rows)-1].ID)
	}
	for i := range 10 {
		h.loop("mine", fmt.Sprintf(`{"n":%d}`, i), `{"mined":3}`)
	}
	p := compose.DefaultPolicy()
	p.TokenBudget, p.CarryTokens = 2500, 400
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	out := sent(res)
	if !strings.Contains(out, "[Earlier results not shown here") {
		t.Fatalf("no carried index\n%s", dump(res.Manifest))
	}
	for i, id := range ids {
		in, named := strings.Contains(out, fmt.Sprintf(`"best_sell":%d`, 10+i)), strings.Contains(out, fmt.Sprintf("item_%d #%d", i, id))
		if !in && !named {
			t.Errorf("market of item_%d neither sent nor named", i)
		}
	}
	kinds := ""
	for _, s := range res.Manifest.Synthetic {
		kinds += s.Kind + " "
	}
	if !strings.Contains(kinds, compose.SynthCarriedIndex) {
		t.Errorf("synthetic kinds %q", kinds)
	}
	// The next request (one more loop, the boundary staying) extends this one: the index is byte-stable.
	h.loop("mine", `{"n":99}`, `{"mined":1}`)
	next := composeFrom(t, &h, missionOf(&h, mid), p, res.Manifest)
	if next.Manifest.Boundary == res.Manifest.Boundary {
		if len(next.Messages) < len(res.Messages) || !equalMessages(res.Messages, next.Messages[:len(res.Messages)]) {
			t.Errorf("the boundary stayed but the request is no extension\n%s\n---\n%s", dump(res.Messages), dump(next.Messages))
		}
	}
}

// Calls made after a compaction push the oldest calls out of the window (it holds the newest CarryLimit calls since
// the objective); the compacted past and its index name only calls the window keeps until the next compaction, so
// while the boundary stays the request still extends the previous one.
func TestCarriedIndexStableWhileNewCallsArrive(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: compare the markets.")
	for i := range 12 {
		var orders strings.Builder
		for j := range 30 {
			fmt.Fprintf(&orders, "p%d q%d; ", 7*i+j, 13*j+i)
		}
		h.loop("view_market", fmt.Sprintf(`{"item_id":"item_%d"}`, i), fmt.Sprintf(`{"item":"item_%d","orders":"%s"}`, i, orders.String()))
	}
	for range 6 {
		h.loop("mine", `{}`, `{"mined":3}`)
	}
	p := compose.DefaultPolicy()
	p.TokenBudget, p.CarryTokens, p.CarryLimit = 2000, 400, 8
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	if !strings.Contains(sent(res), "[Earlier results not shown here") {
		t.Fatalf("no carried index\n%s", dump(res.Manifest))
	}
	// Two new distinct calls: the window no longer holds the two oldest of the calls it held at the compaction.
	h.loop("get_notifications", `{}`, `{"n":0}`)
	h.loop("scan", `{"x":1}`, `{"found":"nothing"}`)
	next := composeFrom(t, &h, missionOf(&h, mid), p, res.Manifest)
	if next.Manifest.Boundary != res.Manifest.Boundary {
		t.Fatalf("the boundary moved (%d → %d): the test needs it to stay", res.Manifest.Boundary, next.Manifest.Boundary)
	}
	if len(next.Messages) < len(res.Messages) || !equalMessages(res.Messages, next.Messages[:len(res.Messages)]) {
		t.Errorf("the boundary stayed but the request is no extension\n%s\n---\n%s", dump(res.Messages), dump(next.Messages))
	}
}

// An index entry quotes a call's argument words (sorted keys, an action-dispatched call's action left out), cut to a
// bound; arguments that are not a JSON object are sent as {} (rule 8), so they quote nothing.
func TestIndexArgWords(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: scout.")
	body := func(k int) string {
		var b strings.Builder
		for j := range 150 {
			fmt.Fprintf(&b, "o%d v%d; ", 31*j+k, 17*j+k)
		}
		return b.String()
	}
	h.loop("spacemolt_market", `{"action":"view_market","item_id":"iron_ore","station":"sol"}`, body(1))
	h.loop("find_route", `not json`, body(2))
	h.loop("catalog", `{"type":"ore","page":2,"all":true}`, body(3))
	for range 8 {
		h.loop("mine", `{}`, `{"mined":3}`)
	}
	p := compose.DefaultPolicy()
	p.TokenBudget, p.CarryTokens = 2000, 64
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	out := sent(res)
	for _, want := range []string{"spacemolt_market.view_market: iron_ore sol #", "find_route: #", "catalog: true 2 ore #"} {
		if !strings.Contains(out, want) {
			t.Errorf("index lacks %q\n%s", want, out)
		}
	}
}

// Below the boundary a carried loop sends its call and result without the words the model wrote with the call:
// those are not state, and under a fixed budget every token of them is room the live part lacks.
func TestCarriedLoopWithoutItsText(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: find iron.")
	const note = "Let me look at the market at Sol Station before deciding where to sell."
	h.add(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: note,
		ToolCalls: []chat.ToolCall{{ID: "call_m", Name: "view_market", Arguments: `{"station":"sol"}`}}})
	h.result("call_m", "view_market", `{"iron_ore":{"buy":11,"sell":14}}`)
	for i := range 60 {
		h.loop("mine", fmt.Sprintf(`{"n":%d}`, i%3), fmt.Sprintf(`{"mined":%d,"log":"%s"}`, i, strings.Repeat("ore ", 40)))
	}
	p := compose.DefaultPolicy()
	p.TokenBudget = 2500
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	out := sent(res)
	if res.Manifest.Boundary <= 3 {
		t.Fatalf("nothing compacted (boundary %d): the test needs the market loop below it", res.Manifest.Boundary)
	}
	if !strings.Contains(out, `"sell":14`) {
		t.Fatalf("the market result is not carried\n%s", dump(res.Manifest))
	}
	if strings.Contains(out, note) {
		t.Errorf("the carried loop still sends its text\n%s", out)
	}
}

// Under priced compaction (v3) the newest turn's tools get no rank of their own: every tool's newest result competes
// for the carry bound smallest first, so a large result of the newest turn gives way to several small ones of an
// earlier turn (each tool's state counts the same), and is named in the carried index instead. Watermark compaction
// (v2) carries the newest turn's tools first (TestCarryRanksTurnThenSmallest).
func TestPricedCarryRanksEveryToolSmallestFirst(t *testing.T) {
	var h hist
	mid := tradingStart(&h)
	h.text("Checked the ship.")
	h.user(compose.SourceNudge, "Continue your mission.")
	h.loop("scan_belt", "{}", `[{"asteroid":"a","ore":"iron","yield":3}]`)
	big := strings.Repeat(`{"item":"iron_ore","buy":10,"sell":12},`, 20) // ~300 tokens, of the newest turn
	h.loop("view_market", `{"station":"sol"}`, "["+big+"]")
	marketID := h.rows[len(h.rows)-1].ID
	for i := range 8 {
		h.loop("mine", "{}", fmt.Sprintf(`{"mined":%d}`, i))
	}
	p := compose.DefaultPolicy()
	// A young objective carries 1.5 times CarryTokens (400 tokens): room for the market with the scan and one small
	// result, or for the four small ones — not for all five. The budget forces a compaction.
	p.TokenBudget, p.CarryTokens = 680, 267
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	if n := res.Manifest.Compaction; n == nil || n.Why != "budget" {
		t.Fatalf("no compaction forced by the budget: %+v\n%s", n, dump(res.Manifest.Items))
	}
	carriesSmallNotMarket(t, res, marketID)
	if out := sent(res); !strings.Contains(out, fmt.Sprintf("view_market: sol #%d", marketID)) {
		t.Errorf("the market is not named in the carried index\n%s", out)
	}
	if err := chatvalid.Strict.Validate(res.Messages); err != nil {
		t.Fatal(err)
	}
}

// At the default carry_limit (160) the carry horizon reaches 120 distinct calls back: a fact seen once, 110 distinct
// calls before a compaction the budget forces, is still carried or named in the carried index (one search away).
// (With carry_limit 128 the horizon was 96 calls, and such a fact fell out of the request.)
func TestCarryHorizonReachesFarBack(t *testing.T) {
	var h hist
	mid := h.user(compose.SourceBroadcast, "Commander: survey the belt, then sell where crystals pay most.")
	h.loop("view_market", `{"item_id":"rare_crystal"}`, `{"item":"rare_crystal","station":"vega_hub","best_sell":977}`)
	factID := h.rows[len(h.rows)-1].ID
	for i := range 110 {
		h.loop("travel", fmt.Sprintf(`{"target_poi":"poi_%d"}`, i), fmt.Sprintf(`{"arrived":"poi_%d","fuel":%d}`, i, 900-i))
	}
	p := compose.DefaultPolicy()
	p.TokenBudget = 3000
	res := composeFrom(t, &h, missionOf(&h, mid), p, compose.Manifest{})
	if n := res.Manifest.Compaction; n == nil || n.Why != "budget" {
		t.Fatalf("no compaction forced by the budget: %+v", n)
	}
	out := sent(res)
	named := regexp.MustCompile(fmt.Sprintf(`#%d\b`, factID)).MatchString(out)
	if !strings.Contains(out, `"best_sell":977`) && !named {
		t.Errorf("the market seen 110 distinct calls ago is neither carried nor named (memory #%d)\n%s", factID, out)
	}
	if err := chatvalid.Strict.Validate(res.Messages); err != nil {
		t.Fatal(err)
	}
}
