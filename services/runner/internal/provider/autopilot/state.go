package autopilot

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// turnState is what the autopilot believes about its ship after reading the current turn's tool results in order.
// It is rebuilt from the messages on every call: the provider keeps no memory, so the same conversation always
// leads to the same decision.
type turnState struct {
	// seenStatus is set once a get_status (or login) result has been read this turn.
	seenStatus bool
	poi        string // "" when unknown or in hyperspace
	docked     bool
	inTransit  bool
	transitTo  string
	arrivesIn  int
	fuel       int
	fuelMax    int
	cargoUsed  int
	cargoMax   int
	credits    int
	hasCredits bool

	// cargo lists what is known to be in the hold, in the order the game reported or the autopilot mined it.
	// cargoChecked is set by get_cargo, after which cargo is the whole hold.
	cargo        []cargoItem
	cargoChecked bool

	iterations  int    // assistant messages with tool calls in this turn
	lastTool    string // name of the newest tool result read
	lastErrCode string // its error code, "" when it succeeded
	needStatus  bool   // the newest result leaves the position unclear: read get_status next
	justSold    bool   // the newest result is a successful sale
	cargoFull   bool   // mine said cargo_full or no_cargo_space
	beltEmpty   bool   // mine said deposit_too_sparse
	noFuel      bool
	refuelled   bool // refuel succeeded this turn, even if it could not fill the tank
	refuelFail  bool
	unsellable  map[string]bool
	errorStreak int
	rateLimited int // rate_limited answers this turn
	// done lists what happened this turn, for the closing summary.
	done []string
}

type cargoItem struct {
	id  string
	qty int
}

// readTurn rebuilds the state from the messages of the current turn: everything after the newest user message
// (a commander's prompt, a broadcast or a nudge opens every turn).
func readTurn(msgs []chat.Message) *turnState {
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == chat.RoleUser {
			start = i + 1
			break
		}
	}
	s := &turnState{unsellable: map[string]bool{}}
	calls := map[string]chat.ToolCall{}
	for _, m := range msgs[start:] {
		switch m.Role {
		case chat.RoleAssistant:
			if len(m.ToolCalls) > 0 {
				s.iterations++
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
			}
		case chat.RoleTool:
			c, ok := calls[m.ToolCallID]
			if !ok {
				c = chat.ToolCall{Name: m.Name}
			}
			c.Name, c.Arguments = fromV2(c.Name, c.Arguments)
			s.apply(c, fromV2Result(asJSON(m.Content)))
		}
	}
	return s
}

// gameError splits the tools' error text "Error: <code>: <message>".
func gameError(text string) (code, msg string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "Error:")
	if !ok {
		return "", "", false
	}
	code, msg, _ = strings.Cut(strings.TrimSpace(rest), ":")
	return strings.TrimSpace(code), strings.TrimSpace(msg), true
}

// apply folds one tool result into the state.
func (s *turnState) apply(call chat.ToolCall, content string) {
	s.lastTool, s.lastErrCode, s.justSold, s.needStatus = call.Name, "", false, false
	if code, _, isErr := gameError(content); isErr {
		s.applyError(call, code)
		return
	}
	var r result
	if err := json.Unmarshal([]byte(content), &r); err != nil {
		// A field of an unexpected type only loses that field; anything else (a compacted snapshot stub, a
		// search result, free text) teaches nothing.
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return
		}
	}
	s.errorStreak = 0
	switch call.Name {
	case "get_status", "login", "register":
		s.applyStatus(r)
	case "get_ship":
		s.applyShip(r.Ship)
	case "get_cargo":
		s.cargo = s.cargo[:0]
		for _, it := range r.Cargo {
			if it.Quantity > 0 {
				s.cargo = append(s.cargo, cargoItem{id: it.ItemID, qty: it.Quantity})
			}
		}
		s.cargoChecked = true
		set(&s.cargoUsed, r.Used)
		set(&s.cargoMax, r.Capacity)
		s.cargoFull = s.cargoMax > 0 && s.cargoUsed >= s.cargoMax
	case "mine":
		s.docked = false // a mine while docked undocks first (auto_undocked)
		s.applyMine(r)
	case "travel":
		if r.POIID != nil {
			s.poi = *r.POIID
		}
		s.docked, s.inTransit = false, false
		s.done = append(s.done, "travelled to "+s.poi)
	case "dock":
		s.docked = true
		s.done = append(s.done, "docked")
	case "undock":
		s.docked = false
		s.done = append(s.done, "undocked")
	case "sell":
		s.applySell(call, r)
	case "refuel":
		before := s.fuel
		set(&s.fuel, r.Fuel)
		set(&s.fuelMax, r.FuelMax)
		if r.Cost != nil && s.hasCredits {
			s.credits -= *r.Cost
		}
		s.refuelled = true
		if r.Fuel != nil && *r.Fuel > before {
			s.done = append(s.done, fmt.Sprintf("refuelled %d units", *r.Fuel-before))
		}
	}
}

func (s *turnState) applyError(call chat.ToolCall, code string) {
	s.lastErrCode = code
	s.errorStreak++
	s.done = append(s.done, call.Name+" failed ("+code+")")
	switch code {
	case "cargo_full", "no_cargo_space":
		s.cargoFull = true
		if s.cargoMax > 0 {
			s.cargoUsed = s.cargoMax
		}
	case "deposit_too_sparse":
		s.beltEmpty = true
	case "docked", "already_docked": // "docked": the simulator's code before the live server's
		s.docked = true
	case "not_docked":
		s.docked = false
		if call.Name == "sell" || call.Name == "refuel" {
			// No base here to trade with: the position is not what we thought.
			s.needStatus = true
		}
	case "item_not_available":
		var a struct {
			ItemID string `json:"item_id"`
		}
		_ = json.Unmarshal([]byte(call.Arguments), &a)
		s.unsellable[a.ItemID] = true
	case "no_credits":
		if call.Name == "refuel" {
			s.refuelFail = true
		}
	case "no_fuel":
		s.noFuel = true
	case "rate_limited":
		s.rateLimited++
		s.needStatus = true
	default:
		// action_pending, in_transit, rate_limited and anything unexpected: the world moved on without us,
		// so look before acting again.
		s.needStatus = true
	}
}

func (s *turnState) applyStatus(r result) {
	if r.Player != nil {
		p := r.Player
		s.seenStatus = true
		s.poi = p.CurrentPOI
		if p.InTransit {
			s.poi = "" // current_poi is where the move started
		}
		s.docked = p.DockedAtBase != ""
		s.inTransit = p.InTransit
		s.transitTo, s.arrivesIn = "", 0
		if p.Transit != nil {
			s.transitTo, s.arrivesIn = p.Transit.ToPOI, p.Transit.ArrivesInSeconds
		}
		s.setCredits(p.Credits)
	}
	before := s.cargoUsed
	s.applyShip(r.Ship)
	if r.Ship == nil || r.Ship.Cargo == nil {
		if s.cargoUsed != before || s.cargoUsed == 0 {
			// The hold changed behind our back (or is empty): what we knew of its contents is stale.
			s.cargo, s.cargoChecked = nil, s.cargoUsed == 0
		}
	}
	s.cargoFull = s.cargoMax > 0 && s.cargoUsed >= s.cargoMax
}

func (s *turnState) applyShip(sh *shipResult) {
	if sh == nil {
		return
	}
	set(&s.fuel, sh.Fuel)
	set(&s.fuelMax, sh.MaxFuel)
	set(&s.cargoUsed, sh.CargoUsed)
	set(&s.cargoMax, sh.CargoCapacity)
	if sh.Cargo != nil {
		// ship.cargo is the whole hold.
		s.cargo = s.cargo[:0]
		for _, it := range *sh.Cargo {
			if it.Quantity > 0 {
				s.cargo = append(s.cargo, cargoItem{id: it.ItemID, qty: it.Quantity})
			}
		}
		s.cargoChecked = true
	}
}

func (s *turnState) applyMine(r result) {
	qty := 0
	if r.Quantity != nil {
		qty = *r.Quantity
	}
	if r.CargoUsed != nil {
		s.cargoUsed = *r.CargoUsed
	} else {
		s.cargoUsed += qty
	}
	set(&s.cargoMax, r.CargoCapacity)
	if r.ResourceID != "" && qty > 0 {
		s.addCargo(r.ResourceID, qty)
		s.done = append(s.done, fmt.Sprintf("mined %d %s", qty, r.ResourceID))
	}
	s.cargoFull = s.cargoMax > 0 && s.cargoUsed >= s.cargoMax
}

func (s *turnState) applySell(call chat.ToolCall, r result) {
	item := r.ItemID
	if item == "" {
		var a struct {
			ItemID string `json:"item_id"`
		}
		_ = json.Unmarshal([]byte(call.Arguments), &a)
		item = a.ItemID
	}
	sold, earned := 0, 0
	if r.QuantitySold != nil {
		sold = *r.QuantitySold
	}
	if r.TotalEarned != nil {
		earned = *r.TotalEarned
	}
	if s.hasCredits {
		s.credits += earned
	}
	s.docked = true // selling docks automatically
	if sold == 0 {
		s.unsellable[item] = true
		s.done = append(s.done, "could not sell "+item)
		return
	}
	s.cargoUsed = max(0, s.cargoUsed-sold)
	s.cargoFull = false
	s.addCargo(item, -sold)
	s.justSold = true
	s.done = append(s.done, fmt.Sprintf("sold %d %s for %d credits", sold, item, earned))
}

func (s *turnState) addCargo(id string, delta int) {
	for i := range s.cargo {
		if s.cargo[i].id == id {
			s.cargo[i].qty += delta
			if s.cargo[i].qty <= 0 {
				s.cargo = append(s.cargo[:i], s.cargo[i+1:]...)
			}
			return
		}
	}
	if delta > 0 {
		s.cargo = append(s.cargo, cargoItem{id: id, qty: delta})
	}
}

func (s *turnState) setCredits(c *int) {
	if c != nil {
		s.credits, s.hasCredits = *c, true
	}
}

// sellable is the first item in the hold that the station has not refused.
func (s *turnState) sellable() (cargoItem, bool) {
	for _, it := range s.cargo {
		if it.qty > 0 && !s.unsellable[it.id] {
			return it, true
		}
	}
	return cargoItem{}, false
}

func set(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

// result is the union of the SpaceMolt result fields the autopilot reads (field names from the game's tools).
// Pointers tell "absent" from zero: a mine result without cargo_used must not empty the hold.
type result struct {
	Player *playerResult `json:"player"`
	Ship   *shipResult   `json:"ship"`

	Cargo []struct {
		ItemID   string `json:"item_id"`
		Quantity int    `json:"quantity"`
	} `json:"cargo"`
	Used     *int `json:"used"`
	Capacity *int `json:"capacity"`

	// mine (the simulator answers with the yield; the real server notifies it)
	ResourceID    string `json:"resource_id"`
	Quantity      *int   `json:"quantity"`
	CargoUsed     *int   `json:"cargo_used"`
	CargoCapacity *int   `json:"cargo_capacity"`

	POIID *string `json:"poi_id"` // travel

	ItemID       string `json:"item_id"`
	QuantitySold *int   `json:"quantity_sold"`
	TotalEarned  *int   `json:"total_earned"`

	// refuel: fuel is the tank after it
	Fuel    *int `json:"fuel"`
	FuelMax *int `json:"fuel_max"`
	Cost    *int `json:"cost"`
}

// playerResult is the player block of get_status, login and register. in_transit and transit are the simulator's
// own, present only while a move is under way.
type playerResult struct {
	Credits       *int   `json:"credits"`
	CurrentSystem string `json:"current_system"`
	CurrentPOI    string `json:"current_poi"`
	DockedAtBase  string `json:"docked_at_base"`
	InTransit     bool   `json:"in_transit"`
	Transit       *struct {
		ToPOI            string `json:"to_poi"`
		ArrivesInSeconds int    `json:"arrives_in_seconds"`
	} `json:"transit"`
}

// shipResult is the ship block; its cargo lists the whole hold.
type shipResult struct {
	Fuel          *int `json:"fuel"`
	MaxFuel       *int `json:"max_fuel"`
	CargoUsed     *int `json:"cargo_used"`
	CargoCapacity *int `json:"cargo_capacity"`
	Cargo         *[]struct {
		ItemID   string `json:"item_id"`
		Quantity int    `json:"quantity"`
	} `json:"cargo"`
}
