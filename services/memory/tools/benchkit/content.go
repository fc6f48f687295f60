package benchkit

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// history generates one mysis's SpaceMolt-like history: turns opened by a commander order, a broadcast or a nudge,
// then tool loops (assistant with tool calls → JSON results of realistic sizes), with reasoning on some assistant
// rows. It is deterministic for a given seed.
type history struct {
	r          *rand.Rand
	seq, turn  int64
	t          time.Time
	pending    []memory.Memory
	broadcasts []broadcastRef // commander broadcasts this mysis may receive, oldest first
	nextBcast  int
	credits    int
	system     string
	poi        string
	session    string
	player     string
}

type broadcastRef struct {
	id      string
	content string
	at      time.Time
}

var (
	systems = []string{"sol", "alpha_centauri", "sirius", "vega", "procyon", "altair", "tau_ceti", "epsilon_eridani"}
	pois    = []string{"sol_central", "main_belt", "haven_station", "outer_ring", "ice_field", "nebula_gate", "dust_cloud"}
	ores    = []string{"iron_ore", "copper_ore", "silicon_ore", "titanium_ore", "gold_ore"}
	orders  = []string{
		"Mine iron_ore in main_belt and sell it at sol_central until you have 2000 credits.",
		"Scout the systems next to sol and write what you find in your captain's log.",
		"Trade copper_ore between haven_station and sol_central; report profits.",
		"Upgrade your ship's cargo hold, then keep mining titanium.",
		"Avoid pirates near outer_ring; stay docked if your hull drops below 50.",
		"Meet the swarm at haven_station and coordinate mining shifts.",
	}
	thoughts = []string{
		"The travel cooldown means I should sell before I jump again.",
		"Cargo is nearly full, so the next step is to travel to the station and sell iron_ore.",
		"Fuel is low; refuel first, otherwise the jump to %s fails with no_fuel.",
		"The market price for %s dropped, better hold the cargo for now.",
		"Mission says mine until 2000 credits. I have %d credits, keep going.",
		"Pirates were reported nearby; check get_nearby before undocking.",
		"The last action returned action_pending, wait one tick before retrying.",
	}
)

func newHistory(seed uint64, start time.Time, broadcasts []broadcastRef) *history {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &history{
		r: r, t: start, broadcasts: broadcasts, credits: 100 + r.IntN(500),
		system: systems[r.IntN(len(systems))], poi: pois[r.IntN(len(pois))],
		session: hexID(r, 16), player: fmt.Sprintf("pilot_%06d", r.IntN(1000000)),
	}
}

func hexID(r *rand.Rand, n int) string {
	const hexd = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = hexd[r.IntN(16)]
	}
	return string(b)
}

func (h *history) emit(rw memory.Memory) {
	h.seq++
	h.t = h.t.Add(time.Duration(500+h.r.IntN(9000)) * time.Millisecond)
	rw.Seq, rw.Turn, rw.CreatedAt = h.seq, h.turn, h.t
	if rw.IdempotencyKey == "" && rw.BroadcastID == "" {
		// A runner retries appends with keys, so every row carries one; it costs index space, which the size
		// measurement should include.
		rw.IdempotencyKey = fmt.Sprintf("t%d/%d", h.turn, h.seq)
	}
	h.pending = append(h.pending, rw)
}

// next returns up to n more rows; it always completes the tool loop it started, so it may return a few more.
func (h *history) next(n int) []memory.Memory {
	h.pending = h.pending[:0]
	for len(h.pending) < n {
		h.turnOf()
	}
	return h.pending
}

// turnOf writes one turn: a prompt and 1–8 tool loops.
func (h *history) turnOf() {
	h.turn++
	switch p := h.r.IntN(10); {
	case p < 2 && h.nextBcast < len(h.broadcasts) && !h.broadcasts[h.nextBcast].at.After(h.t):
		b := h.broadcasts[h.nextBcast]
		h.nextBcast++
		h.emit(memory.Memory{Role: memory.RoleUser, Source: memory.SourceBroadcast, Content: b.content, BroadcastID: b.id})
	case p < 5:
		h.emit(memory.Memory{Role: memory.RoleUser, Source: memory.SourceDirect, Content: orders[h.r.IntN(len(orders))]})
	default:
		h.emit(memory.Memory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue your mission. Check notifications and coordinate with the swarm."})
	}
	if h.seq == 1 || h.r.IntN(50) == 0 {
		h.loop("login", fmt.Sprintf(`{"username":%q,"password":"%s"}`, h.player, hexID(h.r, 16)), h.loginResult())
	}
	for range 1 + h.r.IntN(8) {
		h.randomLoop()
	}
	if h.r.IntN(3) == 0 {
		h.emit(memory.Memory{Role: memory.RoleAssistant, Source: memory.SourceLLM,
			Content: fmt.Sprintf("Status: %d credits at %s in %s. Continuing the mission.", h.credits, h.poi, h.system)})
	}
}

func (h *history) randomLoop() {
	switch p := h.r.IntN(100); {
	case p < 25:
		h.loop("mine", `{}`, h.mineResult())
	case p < 40:
		h.loop("get_status", `{}`, h.statusResult())
	case p < 50:
		h.loop("get_system", `{}`, h.systemResult())
	case p < 60:
		ore := ores[h.r.IntN(len(ores))]
		h.loop("sell", fmt.Sprintf(`{"item_id":%q,"quantity":%d}`, ore, 1+h.r.IntN(40)), h.sellResult(ore))
	case p < 70:
		h.loop("get_cargo", `{}`, h.cargoResult())
	case p < 78:
		h.poi = pois[h.r.IntN(len(pois))]
		h.loop("travel", fmt.Sprintf(`{"target_poi":%q}`, h.poi), fmt.Sprintf(`{"action":"travel","poi":%q,"poi_id":%q,"online_players_count":%d}`, h.poi, h.poi, 1+h.r.IntN(9)))
	case p < 85:
		h.loop("get_nearby", `{}`, h.nearbyResult())
	case p < 90:
		h.loop("get_notifications", `{"limit":20}`, h.notificationsResult())
	case p < 93:
		h.loop("view_market", `{}`, h.marketResult())
	case p < 96:
		h.loop("get_poi", `{}`, h.poiResult())
	case p < 99 || h.r.IntN(10) != 0:
		h.loop("get_ship", `{}`, h.shipResult())
	case h.r.IntN(2) == 0:
		h.loop("get_map", `{}`, h.mapResult())
	default:
		h.loop("captains_log_add", fmt.Sprintf(`{"entry":"Day %d: %d credits, mining %s near %s."}`, h.turn, h.credits, ores[h.r.IntN(len(ores))], h.poi), `{"index":0}`)
	}
}

func (h *history) loop(tool, args, result string) {
	id := "call_" + hexID(h.r, 12)
	rw := memory.Memory{Role: memory.RoleAssistant, Source: memory.SourceLLM}
	if h.r.IntN(4) == 0 {
		rw.Content = fmt.Sprintf("I'll call %s now.", tool)
	}
	if h.r.IntN(10) < 3 {
		th := thoughts[h.r.IntN(len(thoughts))] + " " + thoughts[h.r.IntN(len(thoughts))]
		th = strings.ReplaceAll(th, "%d", strconv.Itoa(h.credits))
		rw.Reasoning = strings.ReplaceAll(th, "%s", ores[h.r.IntN(len(ores))])
	}
	rw.ToolCalls = []memory.ToolCall{{ID: id, Name: tool, Arguments: args}}
	h.emit(rw)
	h.emit(memory.Memory{Role: memory.RoleTool, Source: memory.SourceTool, ToolCallID: id, ToolName: tool, Content: result,
		CallArguments: args})
}

func (h *history) loginResult() string {
	return fmt.Sprintf(`{"session_id":"%s","player":{"username":%q,"empire":"solarian","credits":%d},"system":%q,"poi":%q}`,
		hexID(h.r, 32), h.player, h.credits, h.system, h.poi)
}

func (h *history) mineResult() string {
	ore := ores[h.r.IntN(len(ores))]
	if h.r.IntN(8) == 0 {
		return `{"error":"action_pending","message":"Another action is queued for this tick."}`
	}
	return fmt.Sprintf(`{"command":"mine","pending":false,"resource_id":%q,"quantity":%d,"remaining":%d}`, ore, 1+h.r.IntN(5), h.r.IntN(5000))
}

func (h *history) statusResult() string {
	h.credits += h.r.IntN(50)
	var b strings.Builder
	fmt.Fprintf(&b, `{"player":{"id":"%s","username":%q,"empire":"solarian","credits":%d,"current_system":%q,"current_poi":%q,"docked_at_base":%q,`+
		`"stats":{"credits_earned":%d,"ore_mined":%d},"created_at":"2026-09-%02dT12:00:00Z","last_active_at":"%s",`,
		hexID(h.r, 16), h.player, h.credits, h.system, h.poi, h.poi, h.r.IntN(100), h.r.IntN(100), 1+h.r.IntN(28), h.t.UTC().Format(time.RFC3339))
	ship := h.shipJSON() // drawn before the skills, as the generator always has
	fmt.Fprintf(&b, `"skills":{"mining":%d,"trading":%d,"piloting":%d,"combat":%d}},`, h.r.IntN(20), h.r.IntN(20), h.r.IntN(20), h.r.IntN(5))
	b.WriteString(ship)
	b.WriteString(`}`)
	return b.String()
}

func (h *history) shipJSON() string {
	var b strings.Builder
	fmt.Fprintf(&b, `"ship":{"id":"ship_%s","class_id":"theoria","name":"%s's Theoria","hull":%d,"max_hull":100,"shield":%d,"max_shield":55,`+
		`"fuel":%d,"max_fuel":100,"cargo_used":%d,"cargo_capacity":70,"speed":1},"modules":[`,
		hexID(h.r, 8), h.player, 50+h.r.IntN(51), h.r.IntN(56), h.r.IntN(101), h.r.IntN(71))
	for i := range 3 + h.r.IntN(4) {
		if i > 0 {
			b.WriteByte(',')
		}
		kinds := []string{"mining_laser", "cargo_pod", "shield_booster", "fuel_tank", "scanner", "afterburner"}
		fmt.Fprintf(&b, `{"id":"mod_%s","type_id":%q,"quality":%d,"power_usage":%d,"wear":%d}`, hexID(h.r, 8), kinds[h.r.IntN(len(kinds))], 1+h.r.IntN(3), h.r.IntN(10), 50+h.r.IntN(51))
	}
	b.WriteString(`]`)
	return b.String()
}

func (h *history) shipResult() string { return "{" + h.shipJSON() + "}" }

func (h *history) poiResult() string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"poi":{"id":%q,"system_id":%q,"type":"asteroid_belt","name":%q,"description":"Dense field of metallic asteroids. Pilots report good iron and copper yields; beware of drifting debris near the outer edge."},"resources":[`, h.poi, h.system, h.poi)
	for i, o := range ores[:2+h.r.IntN(4)] {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"resource_id":%q,"name":%q,"richness":%d,"remaining":%d}`, o, strings.ReplaceAll(o, "_", " "), 1+h.r.IntN(10), h.r.IntN(20000))
	}
	fmt.Fprintf(&b, `],"base":null,"services":["refuel","market"],"players_present":%d}`, h.r.IntN(12))
	return b.String()
}

// mapResult is the rare huge result (SpaceMolt's get_map runs to ~190 kB); here 20–60 kB.
func (h *history) mapResult() string {
	var b strings.Builder
	b.WriteString(`{"systems":[`)
	for i := range 100 + h.r.IntN(200) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"system_id":"sys_%s","name":"%s %d","empire":"outerrim","connections":["sys_%s","sys_%s","sys_%s"],"visited":%v,"security":%d}`,
			hexID(h.r, 6), systems[h.r.IntN(len(systems))], i, hexID(h.r, 6), hexID(h.r, 6), hexID(h.r, 6), h.r.IntN(2) == 0, h.r.IntN(10))
	}
	b.WriteString(`]}`)
	return b.String()
}

func (h *history) systemResult() string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"system":{"id":%q,"name":%q,"empire":"solarian","security_status":"high","connections":[`, h.system, strings.ToUpper(h.system[:1])+h.system[1:])
	for i := range 2 + h.r.IntN(4) {
		if i > 0 {
			b.WriteByte(',')
		}
		s := systems[h.r.IntN(len(systems))]
		fmt.Fprintf(&b, `{"system_id":%q,"name":%q,"distance":%d}`, s, s, 1+h.r.IntN(30))
	}
	b.WriteString(`],"pois":[`)
	for i := range 3 + h.r.IntN(6) {
		if i > 0 {
			b.WriteByte(',')
		}
		p := pois[h.r.IntN(len(pois))]
		fmt.Fprintf(&b, `{"id":"%s_%d","name":%q,"type":"asteroid_belt","has_base":%v,"description":"A quiet region of space with drifting rock and scattered beacons, known for %s deposits."}`,
			p, i, p, h.r.IntN(2) == 0, ores[h.r.IntN(len(ores))])
	}
	b.WriteString(`]}}`)
	return b.String()
}

func (h *history) sellResult(ore string) string {
	q := 1 + h.r.IntN(40)
	price := 5 + h.r.IntN(40)
	h.credits += q * price
	return fmt.Sprintf(`{"quantity_sold":%d,"total_earned":%d,"fills":[{"quantity":%d,"price_each":%d}],"item_id":%q}`, q, q*price, q, price, ore)
}

func (h *history) cargoResult() string {
	var b strings.Builder
	b.WriteString(`{"cargo":[`)
	n := 1 + h.r.IntN(4)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		o := ores[h.r.IntN(len(ores))]
		fmt.Fprintf(&b, `{"item_id":%q,"name":%q,"quantity":%d}`, o, strings.ReplaceAll(o, "_", " "), 1+h.r.IntN(30))
	}
	fmt.Fprintf(&b, `],"used":%d,"capacity":70,"available":%d}`, h.r.IntN(70), h.r.IntN(70))
	return b.String()
}

func (h *history) nearbyResult() string {
	var b strings.Builder
	b.WriteString(`{"nearby":[`)
	n := h.r.IntN(6)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"player_id":"%s","username":"pilot_%d","ship":"theoria","status":"mining"}`, hexID(h.r, 16), h.r.IntN(99999))
	}
	fmt.Fprintf(&b, `],"pirates":[],"count":%d}`, n)
	return b.String()
}

func (h *history) notificationsResult() string {
	var b strings.Builder
	b.WriteString(`{"notifications":[`)
	n := h.r.IntN(5)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%s","type":"chat","msg_type":"system","timestamp":%d,"data":{"from":"pilot_%d","text":"Anyone selling %s near %s?\nReply on local."}}`,
			hexID(h.r, 12), h.t.Unix(), h.r.IntN(99999), ores[h.r.IntN(len(ores))], h.poi)
	}
	fmt.Fprintf(&b, `],"count":%d,"remaining":0,"current_tick":%d}`, n, h.t.Unix()/10)
	return b.String()
}

func (h *history) marketResult() string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i, o := range ores {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"item_id":%q,"best_buy":%d,"best_sell":%d}`, o, 3+h.r.IntN(40), 5+h.r.IntN(50))
	}
	b.WriteString(`]}`)
	return b.String()
}
