package game

import (
	"slices"
	"strings"
)

var helpTopics = map[string]string{
	"":              "SpaceMolt (offline simulator). Start: register(username, empire) or login(username, password). The game advances in ticks; each state-changing action (travel, jump, dock, undock, mine, sell, buy, refuel) takes one tick and blocks until it resolves; travel and jump block until arrival. Reads (get_*, view_market, find_route, captains_log_*, chat, get_notifications) are instant. Starter loop: undock, travel main_belt, mine until the hold is full, travel sol_central, dock, sell iron_ore, refuel. help(topic) explains: travel, jump, mining, market, fuel, session, limits, chat, log.",
	"travel":        "travel(target_poi) moves to another POI in your system. Fuel: ceil(speed × distance × 0.07), at least 1; ticks: ceil(distance / speed). Undocks automatically. Errors: invalid_poi, wrong_system, no_fuel, in_transit, action_pending.",
	"jump":          "jump(target_system) moves to an adjacent system (get_system lists connections; find_route plans longer trips). Takes max(1, 7 − speed) ticks; fuel follows the travel formula over the link's light years. Errors: not_connected, invalid_system, no_fuel.",
	"mining":        "mine() at an asteroid belt extracts up to your mining power (5 for a theoria) of one of the belt's ores per tick. Deposits deplete and slowly refill. Errors: docked, cargo_full, deposit_too_sparse, invalid_poi.",
	"market":        "view_market(item_id?) at a station shows best_buy (what the station pays you) and best_sell (what it charges). sell(item_id, quantity) fills the station's buy orders from the best price down, so big sales earn less per unit; prices recover over ticks. buy(item_id, quantity) needs credits and cargo space. Trading docks automatically.",
	"fuel":          "refuel() at a station fills the tank as far as your credits allow. Errors: not_docked (no station here), no_credits.",
	"session":       "register/login return a session_id. It is bound to your MCP session and can also be passed explicitly as session_id to any tool. A session expires after 30 minutes without requests, and a new login replaces the old session (session_invalid). Call login again when that happens.",
	"limits":        "Per account: 30 actions/min, 300 queries/min, 20 chat messages/min. Over the limit: rate_limited with retry_after seconds. One action per tick: a second one while the first is queued fails action_pending; any action while travelling fails in_transit.",
	"chat":          "chat(channel, content, target_id?) with channel system, local, faction or private (target_id required). Up to 500 characters. Recipients see it in get_notifications.",
	"log":           "captains_log_add(entry) keeps your last 20 entries (newest is index 0, up to 30,000 bytes each). captains_log_list(index?) reads one.",
	"notifications": "get_notifications(limit?, clear?) returns up to 100 queued events (chat, trade, system), oldest first; clear defaults to true. Events are handed out at most once per tick.",
}

// Help answers help; it needs no session.
func (e *Engine) Help(topic string) *HelpResult {
	topic = strings.ToLower(strings.TrimSpace(topic))
	if text, ok := helpTopics[topic]; ok {
		return &HelpResult{Topic: topic, Text: text}
	}
	var topics []string
	for t := range helpTopics {
		if t != "" {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	return &HelpResult{Topic: topic, Text: "Unknown topic. Topics: " + strings.Join(topics, ", ") + "."}
}
