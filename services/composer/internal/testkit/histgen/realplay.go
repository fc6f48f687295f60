package histgen

// Realistic play sessions for the replay benchmark (internal/replaybench, cmd/composereplay). Unlike Case, which
// produces every way a stored history breaks, RealPlay produces well-formed histories shaped like recorded LLM play of
// SpaceMolt: a commander mission, login or register first, turns of 20–50 tool calls, repeated reads of the same
// tools with the same or other arguments, results from a dozen characters to a few KB with an occasional 50–200 KB
// galaxy map, parallel calls, text replies between loops for the personalities that write them, and missions that
// change every few hundred calls. Result bodies follow the shapes of the simulator's tools
// (services/spacemolt-sim/internal/game/views.go) so their token counts are those of real results.
//
// The assumptions behind the numbers are listed in docs/COMPOSITION.md ("Replay benchmark"). They are tuned to look
// like play, never to favour one composition system.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Personality is the play style of one model: how long its turns are, how often it reads instead of acting, whether
// it writes text replies between loops, how often it calls tools in parallel.
type Personality struct {
	Name string
	// TurnCalls is the range of tool calls the model makes after one prompt before it ends the turn with a reply.
	TurnCalls [2]int
	// TextBetweenLoops is the chance, after each loop, of a text-only reply that ends the turn early (some models,
	// e.g. Claude and GLM, narrate between loops; the runner then opens a new turn with a nudge).
	TextBetweenLoops float64
	// Parallel is the chance that one assistant message carries 2–4 calls (mostly reads).
	Parallel float64
	// ReadRate is the chance a call is a read (get_status, view_market, …) rather than the plan's next action.
	ReadRate float64
	// StatusHabit is the share of reads that are get_status (small models re-check it compulsively).
	StatusHabit float64
	// MapRate is the chance per call of a full get_map (50–200 KB).
	MapRate float64
	// TalkWithCalls is the chance an assistant message with calls also carries a sentence of text.
	TalkWithCalls float64
	// Register is the chance the session starts with register instead of login.
	Register float64
}

// Personalities returns the play styles the benchmark mixes, round robin over sessions.
func Personalities() []Personality {
	return []Personality{
		{Name: "grinder", TurnCalls: [2]int{20, 50}, TextBetweenLoops: 0, Parallel: 0.10, ReadRate: 0.45, StatusHabit: 0.30, MapRate: 0.002, TalkWithCalls: 0.10, Register: 0.2},
		{Name: "narrator", TurnCalls: [2]int{20, 50}, TextBetweenLoops: 0.18, Parallel: 0.35, ReadRate: 0.50, StatusHabit: 0.25, MapRate: 0.003, TalkWithCalls: 0.60, Register: 0.2},
		{Name: "checker", TurnCalls: [2]int{20, 40}, TextBetweenLoops: 0.04, Parallel: 0.05, ReadRate: 0.62, StatusHabit: 0.55, MapRate: 0.001, TalkWithCalls: 0.05, Register: 0.5},
		{Name: "explorer", TurnCalls: [2]int{25, 50}, TextBetweenLoops: 0.12, Parallel: 0.20, ReadRate: 0.50, StatusHabit: 0.20, MapRate: 0.008, TalkWithCalls: 0.30, Register: 0.2},
		{Name: "trader", TurnCalls: [2]int{20, 45}, TextBetweenLoops: 0.08, Parallel: 0.25, ReadRate: 0.55, StatusHabit: 0.20, MapRate: 0.002, TalkWithCalls: 0.30, Register: 0.2},
	}
}

// RealSession is one generated mysis history. Requests are the indexes of the assistant rows: the runner called
// the LLM with the history Rows[:i] and stored its reply as Rows[i].
type RealSession struct {
	Personality string
	Rows        []compose.Memory
	Requests    []int
	Calls       int
	// Facts are the planted facts (plantFacts): a piece of an early result asked for again later.
	Facts []Fact
}

// RealPrompt is the system prompt sessions are composed with: the runner's default prompt in length and content.
const RealPrompt = `You are a mysis: an autonomous captain in SpaceMolt, a multiplayer space game, flying one ship as part of a swarm commanded by a human, the commander.

Goals, in order:
1. Follow the commander's current mission (the latest broadcast or direct order). If there is none, build wealth: mine ore, sell it, keep your ship fuelled and safe.
2. Be useful to the swarm: share discoveries (good deposits, prices, routes) in chat when they help others.
3. Stay alive and solvent: watch fuel, hull and cargo; never strand yourself without fuel far from a station.

How to play:
- You act only through tools. Read first (get_status, get_system, get_poi, get_cargo, view_market are free and instant), then act (travel, jump, dock, undock, mine, sell, buy, refuel take one game tick each; travel and jump block until you arrive).
- The starter loop: undock → travel to an asteroid belt → mine until the hold is full → travel back to the station → dock → sell the ore → refuel. Then repeat, or improve on it.
- One action per tick: if a tool says action_pending or in_transit, wait for it instead of retrying in a loop. If a call fails, read the error, change something, and try differently.
- Make a few tool calls per reply, then continue; end your reply without tool calls when you have finished what you set out to do this turn.

Memory: you only see recent history. Use zoea_search_messages to recall facts you saw before (prices, ids, routes, earlier tool results), zoea_search_reasoning to recall why you decided something, and zoea_search_broadcasts to re-read the commander's missions. Keep a captain's log with captains_log_add for anything worth remembering long term (plans, discoveries, lessons) and read it with captains_log_list.

Be concise: short reasoning, decisive actions. Report to the commander in plain words when you finish a mission step.`

// RealNudge is the runner's gentle nudge, stored as the prompt of every autonomous turn.
const RealNudge = "Continue your mission. Check notifications and coordinate with the swarm."

type realMission int

const (
	realMine realMission = iota
	realTrade
	realExplore
)

var realMissionTexts = map[realMission][]string{
	realMine: {
		"Commander: mine iron and copper ore in %s and sell it at the station. Keep fuel above 40%%.",
		"Commander: we need credits. Fill your hold at the nearest belt in %s, sell, repeat. Report every 1,000 credits.",
	},
	realTrade: {
		"Commander: run trades out of %s: buy where best_sell is low, sell where best_buy is high. Log the prices you see.",
		"Commander: check the markets around %s and haul whatever pays best. Never let credits drop below 200.",
	},
	realExplore: {
		"Commander: explore beyond %s. Visit at least five new systems, log every station and belt, share rich deposits in chat.",
		"Commander: scout the routes from %s outward and find a system with titanium or gold. Report back in faction chat.",
	},
}

var realOres = map[string]string{"iron_ore": "Iron Ore", "copper_ore": "Copper Ore", "silicon_ore": "Silicon Ore",
	"titanium_ore": "Titanium Ore", "gold_ore": "Gold Ore"}

var realItems = []struct {
	id, name string
	guide    int
}{
	{"iron_ore", "Iron Ore", 5}, {"copper_ore", "Copper Ore", 8}, {"silicon_ore", "Silicon Ore", 10},
	{"titanium_ore", "Titanium Ore", 25}, {"gold_ore", "Gold Ore", 45}, {"fuel_cell", "Fuel Cell", 12},
	{"steel_plate", "Steel Plate", 30}, {"copper_wire", "Copper Wire", 22}, {"circuit_board", "Circuit Board", 80},
	{"hull_patch", "Hull Patch", 60}, {"ration_pack", "Ration Pack", 6}, {"water_ice", "Water Ice", 4},
	{"medical_kit", "Medical Kit", 90}, {"drone_part", "Drone Part", 140}, {"laser_lens", "Laser Lens", 210},
	{"shield_cell", "Shield Cell", 175}, {"nav_chip", "Nav Chip", 260}, {"reactor_coil", "Reactor Coil", 420},
}

type realPOI struct {
	id, name, kind string
	base           bool
	x, y           float64
}

type realSystem struct {
	id, name, empire, security string
	x, y                       float64
	links                      []int
	pois                       []realPOI
}

type realGalaxy struct{ systems []realSystem }

var realSyllables = []string{"al", "be", "cor", "dra", "el", "fen", "gar", "hel", "ix", "jun", "ka", "lor", "mir", "nox",
	"or", "pra", "qu", "ros", "sol", "tau", "ul", "vex", "wy", "zen"}

func newPlayGalaxy(r *rand.Rand, n int) *realGalaxy {
	g := &realGalaxy{}
	empires := []string{"solarian", "voidborn", "crimson", "nebula", "outerrim"}
	for i := range n {
		name := "Sol"
		id := "sol"
		if i > 0 {
			name = strings.ToUpper(realSyllables[r.IntN(len(realSyllables))][:1]) + realSyllables[r.IntN(len(realSyllables))][1:] +
				realSyllables[r.IntN(len(realSyllables))] + fmt.Sprintf("-%d", 100+r.IntN(900))
			id = strings.ToLower(strings.ReplaceAll(name, "-", "_"))
		}
		s := realSystem{id: id, name: name, empire: empires[r.IntN(len(empires))], x: float64(r.IntN(4000)-2000) / 10,
			y: float64(r.IntN(4000)-2000) / 10, security: []string{"high", "medium", "low", "lawless"}[r.IntN(4)]}
		np := 3 + r.IntN(6)
		for j := range np {
			p := realPOI{x: float64(r.IntN(200)) / 10, y: float64(r.IntN(200)) / 10}
			switch {
			case j == 0:
				p.kind, p.base, p.id, p.name = "station", true, id+"_central", name+" Central"
			case j%3 == 1:
				p.kind, p.id, p.name = "asteroid_belt", fmt.Sprintf("%s_belt_%d", id, j), fmt.Sprintf("%s Belt %d", name, j)
			case j%3 == 2:
				p.kind, p.id, p.name = "planet", fmt.Sprintf("%s_%c", id, 'b'+rune(j)), fmt.Sprintf("%s %c", name, 'B'+rune(j))
			default:
				p.kind, p.id, p.name = "gas_cloud", fmt.Sprintf("%s_cloud_%d", id, j), fmt.Sprintf("%s Nebula %d", name, j)
			}
			s.pois = append(s.pois, p)
		}
		g.systems = append(g.systems, s)
	}
	for i := 1; i < n; i++ { // a spanning tree plus extra links
		j := r.IntN(i)
		g.link(i, j)
	}
	for range n {
		g.link(r.IntN(n), r.IntN(n))
	}
	return g
}

func (g *realGalaxy) link(a, b int) {
	if a == b || slices.Contains(g.systems[a].links, b) {
		return
	}
	g.systems[a].links = append(g.systems[a].links, b)
	g.systems[b].links = append(g.systems[b].links, a)
}

// realPlayer is the simulated game state the results are generated from.
type realPlayer struct {
	name                        string
	sys, poi                    int
	docked                      bool
	credits, fuel, hull, shield int
	cargo                       map[string]int
	tick                        int64
	visited                     map[int]bool
	logCount                    int
	sessionID                   string
	prices                      map[string]int // this session's price drift per item
	password                    uint64
}

func (p *realPlayer) used() int {
	n := 0
	for _, q := range p.cargo {
		n += q
	}
	return n
}

const realCargoMax = 70

type realGen struct {
	r       *rand.Rand
	opts    RealOptions
	pers    Personality
	g       *realGalaxy
	p       *realPlayer
	s       RealSession
	seq, id int64
	turn    int64
	callN   int
	mission realMission
	// plan progress for explore/trade missions
	target int
	// relogin is set by a session_invalid error: the model logs in again next.
	relogin bool
}

// RealPlay generates one session of at least calls tool calls with personality pers, deterministically from seed.
func RealPlay(seed uint64, calls int, pers Personality) RealSession {
	return RealPlayWith(seed, calls, pers, RealOptions{})
}

// RealPlayWith is RealPlay with the objective lengths and endpoint of o; the zero RealOptions is RealPlay.
func RealPlayWith(seed uint64, calls int, pers Personality, o RealOptions) RealSession {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	pg := &realGen{r: r, opts: o, pers: pers, g: newPlayGalaxy(r, 70+r.IntN(170))}
	pg.p = &realPlayer{name: fmt.Sprintf("mysis-%d", seed%1000), credits: 100 + r.IntN(50), fuel: 100, hull: 100, shield: 55,
		cargo: map[string]int{}, tick: 1000 + int64(r.IntN(50000)), visited: map[int]bool{0: true}, prices: map[string]int{}, password: r.Uint64()}
	pg.s.Personality = pers.Name
	pg.run(calls)
	pg.plantFacts()
	if o.V2 {
		toV2(pg.s.Rows)
	}
	return pg.s
}

func (pg *realGen) add(m compose.Memory) {
	pg.seq++
	pg.id += 1 + int64(pg.r.IntN(4)) // other myses' rows interleave in the id space
	m.Seq, m.ID = pg.seq, pg.id
	if m.Role == chat.RoleUser && (m.Source == compose.SourceDirect || m.Source == compose.SourceBroadcast || m.Source == compose.SourceNudge) {
		pg.turn++
	}
	m.Turn = pg.turn
	pg.s.Rows = append(pg.s.Rows, m)
}

func (pg *realGen) reply(m compose.Memory) {
	pg.s.Requests = append(pg.s.Requests, len(pg.s.Rows))
	pg.add(m)
}

func (pg *realGen) chance(p float64) bool { return pg.r.Float64() < p }

func (pg *realGen) between(a, b int) int { return a + pg.r.IntN(b-a+1) }

func (pg *realGen) run(calls int) {
	nextMission := 0
	first := true
	for pg.callN < calls {
		switch {
		case pg.callN >= nextMission:
			pg.newMission(first)
			nextMission = pg.callN + pg.objectiveCalls()
		case pg.chance(0.04):
			pg.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceBroadcast, SenderID: fmt.Sprintf("mysis-%d", pg.r.IntN(9)),
				Content: pg.pick("mysis-%d: found a rich titanium deposit at %s, prices at %s Central are good.",
					"mysis-%d: pirates near %s, avoid it. Market at %s pays 9 for iron.")})
		default:
			pg.add(compose.Memory{Role: chat.RoleUser, Source: compose.SourceNudge, Content: RealNudge})
		}
		pg.turnLoops(first)
		first = false
	}
	pg.s.Calls = pg.callN
}

func (pg *realGen) pick(formats ...string) string {
	f := formats[pg.r.IntN(len(formats))]
	return fmt.Sprintf(f, pg.r.IntN(9), pg.g.systems[pg.r.IntN(len(pg.g.systems))].name, pg.g.systems[pg.r.IntN(len(pg.g.systems))].name)
}

func (pg *realGen) newMission(first bool) {
	pg.mission = realMission(pg.r.IntN(3))
	if pg.pers.Name == "explorer" && pg.chance(0.5) {
		pg.mission = realExplore
	}
	if pg.pers.Name == "trader" && pg.chance(0.5) {
		pg.mission = realTrade
	}
	texts := realMissionTexts[pg.mission]
	content := fmt.Sprintf(texts[pg.r.IntN(len(texts))], pg.g.systems[pg.p.sys].name)
	src := compose.SourceBroadcast
	if !first && pg.chance(0.4) {
		src = compose.SourceDirect
	}
	pg.add(compose.Memory{Role: chat.RoleUser, Source: src, Content: content})
	pg.target = pg.r.IntN(len(pg.g.systems))
}

// turnLoops plays one turn: loops of calls until the turn's call budget is spent or the model replies with text.
func (pg *realGen) turnLoops(first bool) {
	budget := pg.between(pg.pers.TurnCalls[0], pg.pers.TurnCalls[1])
	done := 0
	if first {
		name, args := "login", pg.loginArgs()
		if pg.chance(pg.pers.Register) {
			name, args = "register", fmt.Sprintf(`{"username":%q,"empire":"solarian","registration_code":"SM-%d"}`, pg.p.name, 1000+pg.r.IntN(9000))
		}
		pg.loop([]chat.ToolCall{{Name: name, Arguments: args}})
		done++
	}
	for done < budget {
		var calls []chat.ToolCall
		if pg.relogin {
			pg.relogin = false
			pg.loop([]chat.ToolCall{{Name: "login", Arguments: pg.loginArgs()}})
			done++
			continue
		}
		if pg.chance(pg.pers.Parallel) {
			// Models batch different reads, never the same call twice in one message.
			for range pg.between(2, 4) {
				for range 5 {
					c := pg.read()
					if !slices.ContainsFunc(calls, func(o chat.ToolCall) bool { return o.Name == c.Name && o.Arguments == c.Arguments }) {
						calls = append(calls, c)
						break
					}
				}
			}
			if pg.chance(0.3) {
				calls = append(calls, pg.next())
			}
		} else if pg.chance(pg.pers.ReadRate) {
			calls = append(calls, pg.read())
		} else {
			calls = append(calls, pg.next())
		}
		pg.loop(calls)
		done += len(calls)
		if done < budget && pg.chance(pg.pers.TextBetweenLoops) {
			pg.reply(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: pg.narration(),
				Reasoning: "Summarise progress for the commander."})
			return
		}
	}
	pg.reply(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: pg.summary(),
		Reasoning: "That completes this step of the mission; report and wait for the next turn."})
}

func (pg *realGen) narration() string {
	p := pg.p
	opts := []string{
		fmt.Sprintf("I'm at %s with %d/%d cargo and %d fuel. Next I'll %s.", pg.poiName(), p.used(), realCargoMax, p.fuel, pg.intent()),
		fmt.Sprintf("Status: %d credits, hull %d%%. Continuing with the plan: %s.", p.credits, p.hull, pg.intent()),
		fmt.Sprintf("Market checked. %s", pg.intent()),
	}
	return opts[pg.r.IntN(len(opts))]
}

func (pg *realGen) summary() string {
	p := pg.p
	var b strings.Builder
	fmt.Fprintf(&b, "Progress report: %d credits, %d/%d cargo, fuel %d, located at %s in %s.", p.credits, p.used(), realCargoMax,
		p.fuel, pg.poiName(), pg.g.systems[p.sys].name)
	if pg.chance(0.6) {
		fmt.Fprintf(&b, " Visited %d systems so far. Next: %s.", len(p.visited), pg.intent())
	}
	if pg.chance(0.3) {
		b.WriteString(" Iron sells best at the home station; copper is worth the extra trip when the hold is full.")
	}
	return b.String()
}

func (pg *realGen) intent() string {
	switch pg.mission {
	case realTrade:
		return "compare prices and haul the best-paying cargo"
	case realExplore:
		return fmt.Sprintf("jump toward %s and survey it", pg.g.systems[pg.target].name)
	}
	if pg.p.used() >= realCargoMax-5 {
		return "return to the station and sell the ore"
	}
	return "keep mining at the belt until the hold is full"
}

func (pg *realGen) poiName() string {
	return pg.g.systems[pg.p.sys].pois[pg.p.poi].name
}

// loop stores one assistant message with calls and their results.
func (pg *realGen) loop(calls []chat.ToolCall) {
	for k := range calls {
		calls[k].ID = fmt.Sprintf("call_%s_%d_%d", pg.p.name, pg.seq+1, k)
	}
	content := ""
	if pg.chance(pg.pers.TalkWithCalls) {
		content = realTalk(calls[0].Name)
	}
	pg.reply(compose.Memory{Role: chat.RoleAssistant, Source: compose.SourceLLM, Content: content, ToolCalls: calls,
		Reasoning: "Plan the next step from the latest state."})
	for _, c := range calls {
		pg.callN++
		pg.p.tick += int64(pg.r.IntN(2))
		pg.add(compose.Memory{Role: chat.RoleTool, Source: compose.SourceTool, ToolCallID: c.ID, ToolName: c.Name,
			Content: pg.result(c)})
	}
}

// read picks a read-only call, weighted by the personality.
func (pg *realGen) read() chat.ToolCall {
	if pg.chance(pg.pers.StatusHabit) {
		return chat.ToolCall{Name: "get_status", Arguments: "{}"}
	}
	p := pg.p
	type w struct {
		n    int
		call func() chat.ToolCall
	}
	simple := func(name string) func() chat.ToolCall {
		return func() chat.ToolCall { return chat.ToolCall{Name: name, Arguments: "{}"} }
	}
	ws := []w{
		{10, simple("get_cargo")}, {9, simple("get_system")}, {6, simple("get_poi")}, {5, simple("get_ship")},
		{7, simple("get_notifications")}, {3, simple("get_nearby")},
		{4, func() chat.ToolCall {
			t := []string{"ore", "component", "consumable", ""}[pg.r.IntN(4)]
			if t == "" {
				return chat.ToolCall{Name: "catalog", Arguments: "{}"}
			}
			return chat.ToolCall{Name: "catalog", Arguments: fmt.Sprintf(`{"type":%q}`, t)}
		}},
		{2, func() chat.ToolCall {
			return chat.ToolCall{Name: "zoea_search_messages", Arguments: fmt.Sprintf(`{"query":%q}`,
				[]string{"iron_ore price", "titanium", "route to " + pg.g.systems[pg.target].id, "best_buy copper"}[pg.r.IntN(4)])}
		}},
		{1, func() chat.ToolCall { return chat.ToolCall{Name: "captains_log_list", Arguments: "{}"} }},
		{1, func() chat.ToolCall {
			return chat.ToolCall{Name: "help", Arguments: fmt.Sprintf(`{"topic":%q}`, []string{"mining", "market", "travel", "fuel"}[pg.r.IntN(4)])}
		}},
		{3, func() chat.ToolCall {
			return chat.ToolCall{Name: "find_route", Arguments: fmt.Sprintf(`{"target_system":%q}`, pg.g.systems[pg.target].id)}
		}},
	}
	if p.docked || pg.mission == realTrade {
		ws = append(ws, w{14, func() chat.ToolCall {
			if pg.chance(0.45) {
				return chat.ToolCall{Name: "view_market", Arguments: "{}"}
			}
			it := realItems[pg.r.IntN(6)].id
			if pg.mission == realTrade {
				it = realItems[pg.r.IntN(len(realItems))].id
			}
			return chat.ToolCall{Name: "view_market", Arguments: fmt.Sprintf(`{"item_id":%q}`, it)}
		}})
	}
	total := 0
	for _, x := range ws {
		total += x.n
	}
	v := pg.r.IntN(total)
	for _, x := range ws {
		if v < x.n {
			return x.call()
		}
		v -= x.n
	}
	return ws[0].call()
}

// next is the plan's next action for the current mission.
func (pg *realGen) next() chat.ToolCall {
	p := pg.p
	s := &pg.g.systems[p.sys]
	if pg.chance(pg.pers.MapRate * 2) { // next() makes about half the calls
		return chat.ToolCall{Name: "get_map", Arguments: "{}"}
	}
	if pg.chance(0.03) {
		return chat.ToolCall{Name: "captains_log_add", Arguments: fmt.Sprintf(`{"entry":"Tick %d: %s, %d credits, %d fuel. %s"}`,
			p.tick, s.name, p.credits, p.fuel, pg.intent())}
	}
	if pg.chance(0.02) {
		return chat.ToolCall{Name: "chat", Arguments: fmt.Sprintf(`{"channel":"faction","content":"%s: iron pays %d at %s Central."}`,
			p.name, pg.price("iron_ore"), s.name)}
	}
	here := s.pois[p.poi]
	switch {
	case p.docked && p.used() > 0 && pg.mission != realExplore:
		item := pg.cargoItem()
		return chat.ToolCall{Name: "sell", Arguments: fmt.Sprintf(`{"item_id":%q,"quantity":%d}`, item, p.cargo[item])}
	case p.docked && p.fuel < 70:
		return chat.ToolCall{Name: "refuel", Arguments: "{}"}
	case p.docked && pg.mission == realTrade && p.credits > 300 && pg.chance(0.5):
		it := realItems[pg.r.IntN(len(realItems))]
		return chat.ToolCall{Name: "buy", Arguments: fmt.Sprintf(`{"item_id":%q,"quantity":%d}`, it.id, 1+pg.r.IntN(20))}
	case p.docked:
		return chat.ToolCall{Name: "undock", Arguments: "{}"}
	case pg.mission == realExplore || (pg.mission == realTrade && pg.chance(0.3)):
		if pg.chance(0.5) && len(s.links) > 0 {
			return chat.ToolCall{Name: "jump", Arguments: fmt.Sprintf(`{"target_system":%q}`, pg.g.systems[s.links[pg.r.IntN(len(s.links))]].id)}
		}
		return chat.ToolCall{Name: "travel", Arguments: fmt.Sprintf(`{"target_poi":%q}`, s.pois[pg.r.IntN(len(s.pois))].id)}
	case here.kind == "asteroid_belt" && p.used() < realCargoMax:
		return chat.ToolCall{Name: "mine", Arguments: "{}"}
	case here.base:
		return chat.ToolCall{Name: "dock", Arguments: "{}"}
	case p.used() >= realCargoMax || here.kind != "asteroid_belt":
		target := s.pois[0].id
		if p.used() < realCargoMax {
			for _, q := range s.pois {
				if q.kind == "asteroid_belt" {
					target = q.id
					break
				}
			}
		}
		return chat.ToolCall{Name: "travel", Arguments: fmt.Sprintf(`{"target_poi":%q}`, target)}
	}
	return chat.ToolCall{Name: "mine", Arguments: "{}"}
}

func (pg *realGen) cargoItem() string {
	keys := make([]string, 0, len(pg.p.cargo))
	for k, q := range pg.p.cargo {
		if q > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys[pg.r.IntN(len(keys))]
}

func (pg *realGen) price(item string) int {
	for _, it := range realItems {
		if it.id == item {
			return max(1, it.guide+pg.p.prices[item]+pg.r.IntN(3)-1)
		}
	}
	return 5
}

func realJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the generator's own literal types are marshalled
	}
	return string(b)
}

type realObj = map[string]any

// realError is a SpaceMolt error as the MCP client stores it.
func realError(code, msg string) string { return "Error: " + code + ": " + msg }

// result plays call c against the simulated state and returns its result body.
func (pg *realGen) result(c chat.ToolCall) string {
	if pg.chance(0.003) && c.Name != "login" && c.Name != "register" {
		pg.relogin = true
		return realError("session_invalid", "your session has expired; log in again")
	}
	mutation := !slices.Contains([]string{"get_status", "get_ship", "get_cargo", "get_system", "get_poi", "get_nearby",
		"get_map", "find_route", "view_market", "catalog", "get_notifications", "help", "captains_log_list",
		"zoea_search_messages"}, c.Name)
	if mutation && pg.chance(0.05) {
		switch pg.r.IntN(3) {
		case 0:
			return realError("action_pending", "an action is already queued for this tick")
		case 1:
			return "Error: in_transit"
		default:
			return realError("rate_limited", fmt.Sprintf("too many requests, retry_after %d", 2+pg.r.IntN(8)))
		}
	}
	h, ok := realResults[c.Name]
	if !ok {
		return realError("unknown_tool", c.Name)
	}
	rc := realCall{name: c.Name, sys: &pg.g.systems[pg.p.sys]}
	_ = json.Unmarshal([]byte(c.Arguments), &rc.args)
	return h(pg, rc)
}

// realCall is one tool call as a result handler sees it: the tool's name, its decoded arguments and the system the
// player is in when the call arrives.
type realCall struct {
	name string
	args map[string]any
	sys  *realSystem
}

// str is the string argument k, or "".
func (c realCall) str(k string) string { v, _ := c.args[k].(string); return v }

// realResults maps each tool to the handler that plays it against the simulated state.
var realResults = map[string]func(*realGen, realCall) string{
	"login":                (*realGen).loginResult,
	"register":             (*realGen).loginResult,
	"get_status":           (*realGen).getStatusResult,
	"get_ship":             (*realGen).getShipResult,
	"get_cargo":            (*realGen).getCargoResult,
	"get_system":           (*realGen).getSystemResult,
	"get_poi":              (*realGen).getPoiResult,
	"get_nearby":           (*realGen).getNearbyResult,
	"get_map":              (*realGen).getMapResult,
	"find_route":           (*realGen).findRouteResult,
	"view_market":          (*realGen).viewMarketResult,
	"catalog":              (*realGen).catalogResult,
	"get_notifications":    (*realGen).getNotificationsResult,
	"help":                 (*realGen).helpResult,
	"captains_log_list":    (*realGen).captainsLogListResult,
	"captains_log_add":     (*realGen).captainsLogAddResult,
	"chat":                 (*realGen).chatResult,
	"zoea_search_messages": (*realGen).zoeaSearchMessagesResult,
	"undock":               (*realGen).undockResult,
	"dock":                 (*realGen).dockResult,
	"travel":               (*realGen).travelResult,
	"jump":                 (*realGen).jumpResult,
	"mine":                 (*realGen).mineResult,
	"sell":                 (*realGen).sellResult,
	"buy":                  (*realGen).buyResult,
	"refuel":               (*realGen).refuelResult,
}

// loginResult answers login and register.
func (pg *realGen) loginResult(c realCall) string {
	p, s := pg.p, c.sys
	p.sessionID = fmt.Sprintf("%08x-%04x-%04x", pg.r.Uint32(), pg.r.IntN(1<<16), pg.r.IntN(1<<16))
	player := pg.playerView()
	player["skill_xp"] = realObj{}
	res := realObj{"player": player, "ship": pg.shipView(), "system": pg.systemView(p.sys), "poi": pg.poiBrief(s.pois[p.poi]),
		"captains_log": []any{}, "pending_trades": []any{}, "session_id": p.sessionID, "message": "Welcome back, captain."}
	if c.name == "register" {
		delete(res, "captains_log")
		delete(res, "pending_trades")
		res["password"] = fmt.Sprintf("%016x%016x%016x%016x", pg.r.Uint64(), pg.r.Uint64(), pg.r.Uint64(), pg.r.Uint64())
		res["player_id"] = "pl_" + p.sessionID[:8]
		res["message"] = "Registered. Save your password: it is shown only once."
	}
	return realJSON(res)
}

// getStatusResult answers get_status.
func (pg *realGen) getStatusResult(c realCall) string {
	return realJSON(realObj{"player": pg.playerView(), "ship": pg.shipView(), "modules": pg.modules()})
}

// getShipResult answers get_ship.
func (pg *realGen) getShipResult(c realCall) string {
	return realJSON(realObj{"ship": pg.shipView(), "modules": pg.modules(), "cargo_used": pg.p.used(), "cargo_max": realCargoMax})
}

// getCargoResult answers get_cargo.
func (pg *realGen) getCargoResult(c realCall) string {
	p := pg.p
	items := []realObj{}
	keys := make([]string, 0, len(p.cargo))
	for k := range p.cargo {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if p.cargo[k] > 0 {
			items = append(items, realObj{"item_id": k, "name": realItemName(k), "quantity": p.cargo[k], "size": 1})
		}
	}
	return realJSON(realObj{"cargo": items, "used": p.used(), "capacity": realCargoMax, "available": realCargoMax - p.used()})
}

// getSystemResult answers get_system.
func (pg *realGen) getSystemResult(c realCall) string {
	p := pg.p
	s := pg.g.systems[p.sys]
	return realJSON(realObj{"action": "get_system", "system": pg.systemView(p.sys), "security_status": s.security,
		"poi": pg.poiBrief(s.pois[p.poi])})
}

// getPoiResult answers get_poi.
func (pg *realGen) getPoiResult(c realCall) string {
	p, s := pg.p, c.sys
	q := s.pois[p.poi]
	res := realObj{"poi": realObj{"id": q.id, "system_id": s.id, "type": q.kind, "name": q.name,
		"description": "A " + strings.ReplaceAll(q.kind, "_", " ") + " in the " + s.name + " system.", "position": realObj{"x": q.x, "y": q.y}}}
	if q.kind == "asteroid_belt" {
		resource := func(id, name string, richness, remaining, max int) realObj {
			return realObj{"resource_id": id, "name": name, "richness": richness, "remaining": remaining, "max_remaining": max,
				"remaining_display": fmt.Sprintf("%d/%d", remaining, max)}
		}
		ironRich, iron := 3+pg.r.IntN(5), 200+pg.r.IntN(5000)
		copperRich, copper := 1+pg.r.IntN(4), 100+pg.r.IntN(3000)
		res["resources"] = []realObj{resource("iron_ore", "Iron Ore", ironRich, iron, 5200), resource("copper_ore", "Copper Ore", copperRich, copper, 3100)}
	}
	if q.base {
		res["base"] = pg.baseView(s, q)
		res["poi"].(realObj)["base_id"] = q.id + "_base"
		res["services"] = []string{"market", "fuel", "repair"}
	}
	return realJSON(res)
}

// getNearbyResult answers get_nearby.
func (pg *realGen) getNearbyResult(c realCall) string {
	p, s := pg.p, c.sys
	ps := []realObj{}
	for i := range pg.r.IntN(6) {
		id, name := fmt.Sprintf("pl_%06x", pg.r.IntN(1<<24)), fmt.Sprintf("pilot_%d", i*37+pg.r.IntN(30))
		_ = pg.chance(0.5) // the draw of the old docked flag, so the play stays the one the benchmarks measured
		ps = append(ps, realObj{"player_id": id, "username": name, "ship_class": "theoria", "ship_name": name + "'s Theoria",
			"anonymous": false, "in_combat": false})
	}
	return realJSON(realObj{"poi_id": s.pois[p.poi].id, "nearby": ps, "count": len(ps), "pirates": []any{}, "pirate_count": 0})
}

// getMapResult answers get_map.
func (pg *realGen) getMapResult(c realCall) string {
	p, s := pg.p, c.sys
	// The galaxy map is the one huge result: 50–200 KB.
	var systems []realObj
	for i := range pg.g.systems {
		v := pg.systemView(i)
		v["system_id"] = v["id"]
		delete(v, "id")
		delete(v, "police_level")
		v["position"] = realObj{"x": pg.g.systems[i].x, "y": pg.g.systems[i].y}
		v["has_station"] = true
		v["visited"] = p.visited[i]
		systems = append(systems, v)
	}
	return realJSON(realObj{"systems": systems, "total_count": len(systems), "current_system": s.id})
}

// findRouteResult answers find_route.
func (pg *realGen) findRouteResult(c realCall) string {
	p := pg.p
	n := 1 + pg.r.IntN(7)
	var route []realObj
	for i := range n {
		t := pg.g.systems[(pg.target+i*7)%len(pg.g.systems)]
		route = append(route, realObj{"system_id": t.id, "name": t.name, "jumps": i + 1})
	}
	return realJSON(realObj{"found": true, "route": route, "total_jumps": n, "estimated_fuel": n * 6, "fuel": p.fuel})
}

// viewMarketResult answers view_market.
func (pg *realGen) viewMarketResult(c realCall) string {
	p, s := pg.p, c.sys
	if !p.docked && pg.mission != realTrade {
		return realError("not_docked", "dock at a base to view its market")
	}
	item := c.str("item_id")
	var items []realObj
	for _, it := range realItems {
		if item != "" && it.id != item {
			continue
		}
		pr := pg.price(it.id)
		line := realObj{"item_id": it.id, "name": it.name, "guide_price": it.guide, "best_buy": pr, "buy_volume": 50 + pg.r.IntN(900),
			"best_sell": pr + 1 + pr/5, "sell_volume": pg.r.IntN(400)}
		if item != "" {
			var buys, sells []realObj
			for k := range 6 + pg.r.IntN(6) {
				buys = append(buys, realObj{"price": max(1, pr-k), "quantity": 10 + pg.r.IntN(200)})
				sells = append(sells, realObj{"price": pr + 1 + pr/5 + k, "quantity": 10 + pg.r.IntN(200)})
			}
			line["buy_orders"], line["sell_orders"] = buys, sells
		}
		items = append(items, line)
	}
	return realJSON(realObj{"base_id": s.pois[0].id + "_base", "items": items})
}

// catalogResult answers catalog.
func (pg *realGen) catalogResult(c realCall) string {
	t := c.str("type")
	var items []realObj
	for i, it := range realItems {
		kind := "component"
		switch {
		case strings.HasSuffix(it.id, "_ore") || it.id == "water_ice":
			kind = "ore"
		case i%3 == 0:
			kind = "consumable"
		}
		if t != "" && kind != t {
			continue
		}
		items = append(items, realObj{"item_id": it.id, "name": it.name, "type": kind, "guide_price": it.guide, "volume": 1 + i%4,
			"description": fmt.Sprintf("%s: traded at most stations; refined from raw materials or mined in belts of %s-rich systems.", it.name, strings.Split(it.id, "_")[0])})
	}
	return realJSON(realObj{"items": items, "count": len(items)})
}

// getNotificationsResult answers get_notifications.
func (pg *realGen) getNotificationsResult(c realCall) string {
	p := pg.p
	var ns []realObj
	for i := range pg.r.IntN(12) {
		kinds := []string{"chat", "market", "system", "trade"}
		ns = append(ns, realObj{"id": fmt.Sprintf("n_%d", p.tick*10+int64(i)), "type": kinds[pg.r.IntN(4)], "msg_type": "info",
			"timestamp": fmt.Sprintf("2026-11-23T%02d:%02d:%02dZ", pg.r.IntN(24), pg.r.IntN(60), pg.r.IntN(60)),
			"data":      realObj{"from": fmt.Sprintf("pilot_%d", pg.r.IntN(300)), "content": "Selling copper at " + pg.g.systems[pg.r.IntN(len(pg.g.systems))].name + ", anyone buying?"}})
	}
	if len(ns) == 0 {
		return realJSON(realObj{"notifications": []any{}, "count": 0, "remaining": 0, "current_tick": p.tick})
	}
	return realJSON(realObj{"notifications": ns, "count": len(ns), "remaining": pg.r.IntN(5), "current_tick": p.tick})
}

// helpResult answers help.
func (pg *realGen) helpResult(c realCall) string {
	return realJSON(realObj{"topic": c.str("topic"), "text": strings.Repeat("Mining: travel to an asteroid belt and call mine once per tick; each call yields ore by your mining power and the deposit's richness. Deposits deplete and refill slowly. Sell at a station market: sell fills against buy orders, best price first. ", 3+pg.r.IntN(5))})
}

// captainsLogListResult answers captains_log_list.
func (pg *realGen) captainsLogListResult(c realCall) string {
	p := pg.p
	if p.logCount == 0 {
		return realJSON(realObj{"entry": nil, "index": 0, "total_count": 0})
	}
	return realJSON(realObj{"entry": fmt.Sprintf("Tick %d: plan is to %s.", p.tick-int64(pg.r.IntN(500)), pg.intent()), "index": 0, "total_count": p.logCount})
}

// captainsLogAddResult answers captains_log_add.
func (pg *realGen) captainsLogAddResult(c realCall) string {
	p := pg.p
	p.logCount = min(p.logCount+1, 20)
	return realJSON(realObj{"index": 0, "total_count": p.logCount, "message": "Log entry added."})
}

// chatResult answers chat.
func (pg *realGen) chatResult(c realCall) string {
	p := pg.p
	return realJSON(realObj{"sent_at": fmt.Sprintf("tick %d", p.tick), "channel": "faction", "recipients": pg.r.IntN(12)})
}

// zoeaSearchMessagesResult answers zoea_search_messages.
func (pg *realGen) zoeaSearchMessagesResult(c realCall) string {
	var hits []realObj
	for i := range pg.r.IntN(8) {
		hits = append(hits, realObj{"memory_id": pg.id - int64(10+pg.r.IntN(2000)), "role": "tool", "tool_name": "view_market",
			"snippet": fmt.Sprintf("…\"item_id\":\"iron_ore\",\"best_buy\":%d,\"buy_volume\":%d… (%d)", pg.price("iron_ore"), pg.r.IntN(900), i)})
	}
	return realJSON(realObj{"results": hits, "count": len(hits)})
}

// undockResult answers undock.
func (pg *realGen) undockResult(c realCall) string {
	pg.p.docked = false
	return realJSON(realObj{"action": "undock"})
}

// dockResult answers dock.
func (pg *realGen) dockResult(c realCall) string {
	p, s := pg.p, c.sys
	p.docked = true
	q := s.pois[p.poi]
	return realJSON(realObj{"command": "dock", "pending": false, "message": "Docked at " + q.name + " Base."})
}

// travelResult answers travel.
func (pg *realGen) travelResult(c realCall) string {
	p, s := pg.p, c.sys
	target := c.str("target_poi")
	for i, q := range s.pois {
		if q.id == target {
			used := max(1, pg.r.IntN(6))
			p.poi, p.docked, p.fuel = i, false, max(0, p.fuel-used)
			_ = pg.r.IntN(4) // the draw of the old ticks field, so the play stays the one the benchmarks measured
			return realJSON(realObj{"action": "travel", "poi": q.name, "poi_id": q.id, "online_players": []any{},
				"online_players_count": 0, "online_players_truncated": false})
		}
	}
	return realError("invalid_poi", "no POI "+target+" in this system")
}

// jumpResult answers jump.
func (pg *realGen) jumpResult(c realCall) string {
	p, s := pg.p, c.sys
	target := c.str("target_system")
	for _, l := range s.links {
		if pg.g.systems[l].id == target {
			used := 4 + pg.r.IntN(6)
			p.sys, p.poi, p.docked, p.fuel = l, 0, false, max(0, p.fuel-used)
			p.visited[l] = true
			t := pg.g.systems[l]
			if l == pg.target || pg.chance(0.1) {
				pg.target = pg.r.IntN(len(pg.g.systems))
			}
			return realJSON(realObj{"command": "jump", "pending": false, "message": "Jumped to " + t.name + "; you are at " + t.pois[0].name + "."})
		}
	}
	return realError("not_connected", target+" is not adjacent to "+s.id)
}

// mineResult answers mine.
func (pg *realGen) mineResult(c realCall) string {
	p, s := pg.p, c.sys
	if s.pois[p.poi].kind != "asteroid_belt" {
		return realError("invalid_poi", "nothing to mine here")
	}
	if p.used() >= realCargoMax {
		return realError("cargo_full", "your hold is full")
	}
	ore := "iron_ore"
	if pg.chance(0.3) {
		ore = "copper_ore"
	}
	q := min(realCargoMax-p.used(), 3+pg.r.IntN(5))
	p.cargo[ore] += q
	return realJSON(realObj{"command": "mine", "pending": false, "message": fmt.Sprintf("Mined %d %s.", q, realOres[ore]),
		"resource_id": ore, "name": realOres[ore], "quantity": q, "remaining": 100 + pg.r.IntN(4000),
		"cargo_used": p.used(), "cargo_capacity": realCargoMax})
}

// sellResult answers sell.
func (pg *realGen) sellResult(c realCall) string {
	p := pg.p
	item := c.str("item_id")
	q := min(p.cargo[item], int(realArgInt(c.args, "quantity")))
	if q <= 0 {
		return realError("no_cargo", "you have no "+item)
	}
	pr := pg.price(item)
	p.cargo[item] -= q
	p.credits += q * pr
	pg.p.prices[item] -= pg.r.IntN(2)
	return realJSON(realObj{"action": "sell", "item": realItemName(item), "item_id": item, "quantity_sold": q, "total_earned": q * pr,
		"fills": []realObj{{"quantity": q, "price_each": pr, "subtotal": q * pr}}, "unsold": 0, "level_up": false,
		"message": fmt.Sprintf("Sold %d %s.", q, realItemName(item))})
}

// buyResult answers buy.
func (pg *realGen) buyResult(c realCall) string {
	p := pg.p
	item := c.str("item_id")
	q := int(realArgInt(c.args, "quantity"))
	pr := pg.price(item) + 2
	if q*pr > p.credits {
		return realError("no_credits", fmt.Sprintf("need %d credits, have %d", q*pr, p.credits))
	}
	if p.used()+q > realCargoMax {
		return realError("no_cargo_space", "not enough cargo space")
	}
	p.credits -= q * pr
	p.cargo[item] += q
	return realJSON(realObj{"action": "buy", "item": realItemName(item), "item_id": item, "quantity": q, "total_cost": q * pr,
		"fills": []realObj{{"quantity": q, "price_each": pr, "subtotal": q * pr}}, "delivered_to_cargo": q, "level_up": false,
		"message": fmt.Sprintf("Bought %d %s.", q, realItemName(item))})
}

// refuelResult answers refuel.
func (pg *realGen) refuelResult(c realCall) string {
	p := pg.p
	add := 100 - p.fuel
	cost := min(add*2, p.credits)
	p.fuel += cost / 2
	p.credits -= cost
	return realJSON(realObj{"action": "refuel", "source": "credits", "fuel": p.fuel, "fuel_now": p.fuel, "fuel_max": 100, "cost": cost})
}

// loginArgs are the account's credentials, the same on every login of the session.
func (pg *realGen) loginArgs() string {
	return fmt.Sprintf(`{"username":%q,"password":"%016x"}`, pg.p.name, pg.p.password)
}

// realTalk is a sentence a model writes next to its calls, matching the first call.
func realTalk(name string) string {
	switch name {
	case "get_status", "get_ship", "get_cargo":
		return "Let me check my status first."
	case "view_market", "catalog", "sell", "buy":
		return "Checking the market before trading."
	case "get_system", "get_map", "find_route", "get_poi", "get_nearby":
		return "Looking at the map around me."
	case "travel", "jump", "undock", "dock":
		return "Heading out."
	case "mine":
		return "Mining until the hold is full."
	case "refuel":
		return "Refuelling before the next trip."
	}
	return "Next step."
}

func realArgInt(args map[string]any, k string) float64 {
	v, _ := args[k].(float64)
	return v
}

func realItemName(id string) string {
	for _, it := range realItems {
		if it.id == id {
			return it.name
		}
	}
	return id
}

func (pg *realGen) playerView() realObj {
	p := pg.p
	s := pg.g.systems[p.sys]
	q := s.pois[p.poi]
	at := "2026-11-23T08:00:00Z"
	v := realObj{"id": "pl_" + p.name, "username": p.name, "empire": "solarian", "credits": p.credits,
		"current_system": s.id, "current_poi": q.id, "current_ship_id": "sh_" + p.name, "home_base": pg.g.systems[0].pois[0].id + "_base",
		"created_at": at, "last_active_at": at, "last_login_at": at, "last_chat_check": at,
		"anonymous": false, "is_cloaked": false, "clan_tag": "", "primary_color": "#ffffff", "secondary_color": "#000000",
		"status_message": "", "revealed_pois": realObj{}, "skills": realObj{}, "experience": 0,
		"stats": realObj{"credits_earned": 0, "credits_spent": 0, "ore_mined": 0, "distance_traveled": 0, "time_played": 0,
			"trades_completed": 0, "items_crafted": 0, "systems_explored": len(p.visited), "ships_destroyed": 0, "ships_lost": 0,
			"pirates_destroyed": 0, "bases_destroyed": 0}}
	if p.docked {
		v["docked_at_base"] = q.id + "_base"
	}
	return v
}

func (pg *realGen) shipView() realObj {
	p := pg.p
	keys := make([]string, 0, len(p.cargo))
	for k := range p.cargo {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	cargo := []realObj{}
	for _, k := range keys {
		if p.cargo[k] > 0 {
			cargo = append(cargo, realObj{"item_id": k, "name": realItemName(k), "quantity": p.cargo[k], "size": 1})
		}
	}
	return realObj{"id": "sh_" + p.name, "owner_id": "pl_" + p.name, "class_id": "theoria", "name": p.name + "'s Theoria",
		"created_at": "2026-11-23T08:00:00Z", "hull": p.hull, "max_hull": 100, "shield": p.shield, "max_shield": 55,
		"shield_recharge": 2, "armor": 0, "fuel": p.fuel, "max_fuel": 100, "speed": 1, "cargo_used": p.used(), "cargo_capacity": realCargoMax,
		"cpu_capacity": 12, "cpu_used": 7, "power_capacity": 20, "power_used": 9, "weapon_slots": 1, "defense_slots": 1, "utility_slots": 3,
		"modules": []string{"mod_1", "mod_2", "mod_3", "mod_4"}, "cargo": cargo}
}

func (pg *realGen) modules() []realObj {
	mod := func(id, typeID, name, typ string, cpu, power int, stat string, v int) realObj {
		return realObj{"id": id, "type_id": typeID, "name": name, "type": typ, "size": 1, "cpu_usage": cpu, "power_usage": power,
			"quality": 1, "quality_grade": "standard", "wear": 0, "wear_status": "pristine", stat: v}
	}
	return []realObj{
		mod("mod_1", "basic_mining_laser", "Basic Mining Laser", "mining", 2, 3, "mining_power", 5),
		mod("mod_2", "cargo_pod_i", "Cargo Pod Mk I", "cargo", 1, 1, "cargo_bonus", 40),
		mod("mod_3", "light_shield_emitter", "Light Shield Emitter", "shield", 2, 3, "shield_bonus", 55),
		mod("mod_4", "ion_thruster", "Ion Thruster", "engine", 2, 2, "speed_bonus", 1),
	}
}

func (pg *realGen) baseView(s *realSystem, q realPOI) realObj {
	return realObj{"id": q.id + "_base", "poi_id": q.id, "name": q.name + " Base", "type": "station", "description": q.name + " Base, a station.",
		"empire": s.empire, "defense_level": 50, "has_drones": false, "public_access": true, "facilities": []string{"fuel", "market", "repair"}}
}

func (pg *realGen) poiBrief(q realPOI) realObj {
	b := realObj{"id": q.id, "name": q.name, "type": q.kind, "has_base": q.base, "online": 0, "position": realObj{"x": q.x, "y": q.y}}
	if q.base {
		b["base_id"], b["base_name"] = q.id+"_base", q.name+" Base"
	}
	return b
}

// systemView is a system as get_system and login show it.
func (pg *realGen) systemView(i int) realObj {
	s := pg.g.systems[i]
	var conns []realObj
	for _, l := range s.links {
		t := pg.g.systems[l]
		d := int(realAbs(t.x-s.x) + realAbs(t.y-s.y))
		conns = append(conns, realObj{"system_id": t.id, "name": t.name, "distance": d})
	}
	var pois []realObj
	for _, q := range s.pois {
		pois = append(pois, pg.poiBrief(q))
	}
	police := map[string]int{"high": 100, "medium": 50}[s.security]
	return realObj{"id": s.id, "name": s.name, "empire": s.empire, "security_status": s.security, "police_level": police,
		"connections": conns, "pois": pois}
}

func realAbs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
