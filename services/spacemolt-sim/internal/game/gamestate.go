package game

import (
	"slices"
	"time"
)

// SpaceMolt's API v2 (MCP /mcp/v2 and HTTP /api/v2) answers with one canonical game-state blob: get_status and
// get_state carry all of its sections, get_ship and get_cargo the lean ones, and a mutation the sections it changed
// with its own result under details (docs/SPACEMOLT.md, "API v2 results"). The field names are the published v2
// description's (SpaceMolt/client-v2 openapi.json, V2GameState); the simulator fills the sections it has.

// GameState is the v2 state blob. Absent sections are unchanged (in a delta) or not part of the answer.
type GameState struct {
	Player   *StatePlayer          `json:"player,omitempty"`
	Ship     *StateShip            `json:"ship,omitempty"`
	Modules  []StateModule         `json:"modules,omitempty"`
	Cargo    *[]StateCargo         `json:"cargo,omitempty"` // a pointer: an empty hold is [] and still present
	Location *StateLocation        `json:"location,omitempty"`
	Queue    *StateQueue           `json:"queue,omitempty"`
	Skills   map[string]StateSkill `json:"skills,omitempty"`
	Credits  *int                  `json:"credits,omitempty"` // the lean reads (get_ship, get_cargo) carry it here
	Details  any                   `json:"details,omitempty"`
	Message  string                `json:"message,omitempty"`
	Version  string                `json:"version,omitempty"`
}

// StatePlayer is V2GameState.player.
type StatePlayer struct {
	ID             string          `json:"id"`
	Username       string          `json:"username"`
	Empire         string          `json:"empire"`
	Credits        int             `json:"credits"`
	HomeBase       string          `json:"home_base"`
	ClanTag        string          `json:"clan_tag"`
	IsCloaked      bool            `json:"is_cloaked"`
	PrimaryColor   string          `json:"primary_color"`
	SecondaryColor string          `json:"secondary_color"`
	StatusMessage  string          `json:"status_message"`
	Stats          PlayerStatsView `json:"stats"`
}

// StateShip is V2GameState.ship.
type StateShip struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	ClassID        string `json:"class_id"`
	ClassName      string `json:"class_name"`
	Hull           int    `json:"hull"`
	MaxHull        int    `json:"max_hull"`
	Shield         int    `json:"shield"`
	MaxShield      int    `json:"max_shield"`
	ShieldRecharge int    `json:"shield_recharge"`
	Armor          int    `json:"armor"`
	Fuel           int    `json:"fuel"`
	MaxFuel        int    `json:"max_fuel"`
	Speed          int    `json:"speed"`
	CargoUsed      int    `json:"cargo_used"`
	CargoCapacity  int    `json:"cargo_capacity"`
	CPUUsed        int    `json:"cpu_used"`
	CPUCapacity    int    `json:"cpu_capacity"`
	PowerUsed      int    `json:"power_used"`
	PowerCapacity  int    `json:"power_capacity"`
	WeaponSlots    int    `json:"weapon_slots"`
	DefenseSlots   int    `json:"defense_slots"`
	UtilitySlots   int    `json:"utility_slots"`
}

// StateModule is one element of V2GameState.modules.
type StateModule struct {
	ModuleID   string         `json:"module_id"`
	TypeID     string         `json:"type_id"`
	Name       string         `json:"name"`
	Type       string         `json:"type"` // weapon, defense, utility or mining
	Slot       string         `json:"slot"`
	Size       int            `json:"size"`
	CPUUsage   int            `json:"cpu_usage"`
	PowerUsage int            `json:"power_usage"`
	Wear       float64        `json:"wear"`
	WearStatus string         `json:"wear_status"`
	Stats      map[string]int `json:"stats,omitempty"`
}

// StateCargo is one element of V2GameState.cargo.
type StateCargo struct {
	ItemID   string `json:"item_id"`
	ItemName string `json:"item_name"`
	Quantity int    `json:"quantity"`
	Size     int    `json:"size"`
}

// StateLocation is V2GameState.location.
type StateLocation struct {
	SystemID          string          `json:"system_id"`
	SystemName        string          `json:"system_name"`
	Empire            string          `json:"empire"`
	SecurityStatus    string          `json:"security_status"`
	POIID             string          `json:"poi_id"`
	POIName           string          `json:"poi_name"`
	POIType           string          `json:"poi_type"`
	DockedAt          *string         `json:"docked_at"` // null when undocked
	InTransit         bool            `json:"in_transit"`
	Connections       []string        `json:"connections"`
	Resources         []StateResource `json:"resources,omitempty"`
	NearbyPlayerCount int             `json:"nearby_player_count"`
	NearbyPlayers     []StateNearby   `json:"nearby_players"`
	NearbyPirateCount int             `json:"nearby_pirate_count"`
	NearbyPirates     []any           `json:"nearby_pirates"`

	TransitType           string `json:"transit_type,omitempty"`
	TransitArrivalTick    int64  `json:"transit_arrival_tick,omitempty"`
	TransitDestPOIID      string `json:"transit_dest_poi_id,omitempty"`
	TransitDestPOIName    string `json:"transit_dest_poi_name,omitempty"`
	TransitDestSystemID   string `json:"transit_dest_system_id,omitempty"`
	TransitDestSystemName string `json:"transit_dest_system_name,omitempty"`
}

// StateResource is one mineable deposit at the current POI.
type StateResource struct {
	ItemID    string `json:"item_id"`
	ItemName  string `json:"item_name"`
	Remaining int    `json:"remaining"`
	Richness  int    `json:"richness"`
}

// StateNearby is one other ship at the current POI.
type StateNearby struct {
	PlayerID  string `json:"player_id"`
	Username  string `json:"username"`
	ShipClass string `json:"ship_class"`
	ShipName  string `json:"ship_name"`
	ClanTag   string `json:"clan_tag"`
	InCombat  bool   `json:"in_combat"`
	Offline   bool   `json:"offline"`
}

// StateQueue is V2GameState.queue.
type StateQueue struct {
	HasPending bool `json:"has_pending"`
}

// StateSkill is one entry of V2GameState.skills.
type StateSkill struct {
	Name        string `json:"name"`
	Category    string `json:"category"`
	Level       int    `json:"level"`
	MaxLevel    int    `json:"max_level"`
	XP          int    `json:"xp"`
	NextLevelXP int    `json:"next_level_xp"`
}

// StateFormatVersion is V2GameState.version, the state format the simulator writes.
const StateFormatVersion = "2"

// State answers get_status and get_state on v2: every section. It is a read (it renews the session and spends the
// read limit).
func (e *Engine) State(sid string) (*GameState, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	return e.stateOf(p), nil
}

// PeekState is the full state of sid's player without counting a call: the v2 adapter reads it before and after a
// mutation to build the delta. nil when sid has no live player.
func (e *Engine) PeekState(sid string) *GameState {
	_, p := e.sessionPlayer(sid)
	if p == nil {
		return nil
	}
	return e.stateOf(p)
}

func (e *Engine) stateOf(p *Player) *GameState {
	w := e.w()
	p.mu.Lock()
	st := p.snapshot()
	pending := p.pending != nil
	p.mu.Unlock()
	pv := e.playerView(w, &st)
	sv := shipView(&st)
	gs := &GameState{
		Player: &StatePlayer{
			ID: pv.ID, Username: pv.Username, Empire: pv.Empire, Credits: pv.Credits, HomeBase: pv.HomeBase,
			ClanTag: pv.ClanTag, IsCloaked: pv.IsCloaked, PrimaryColor: pv.PrimaryColor, SecondaryColor: pv.SecondaryColor,
			StatusMessage: pv.StatusMessage, Stats: pv.Stats,
		},
		Ship: &StateShip{
			ID: sv.ID, Name: sv.Name, ClassID: sv.ClassID, ClassName: className(sv.ClassID), Hull: sv.Hull, MaxHull: sv.MaxHull,
			Shield: sv.Shield, MaxShield: sv.MaxShield, ShieldRecharge: sv.ShieldRecharge, Armor: sv.Armor,
			Fuel: sv.Fuel, MaxFuel: sv.MaxFuel, Speed: sv.Speed, CargoUsed: sv.CargoUsed, CargoCapacity: sv.CargoCapacity,
			CPUUsed: sv.CPUUsed, CPUCapacity: sv.CPUCapacity, PowerUsed: sv.PowerUsed, PowerCapacity: sv.PowerCapacity,
			WeaponSlots: sv.WeaponSlots, DefenseSlots: sv.DefenseSlots, UtilitySlots: sv.UtilitySlots,
		},
		Queue:   &StateQueue{HasPending: pending},
		Skills:  map[string]StateSkill{},
		Version: StateFormatVersion,
	}
	for _, m := range modules(&st) {
		sm := StateModule{ModuleID: m.ID, TypeID: m.TypeID, Name: m.Name, Type: m.Type, Slot: "utility", Size: m.Size,
			CPUUsage: m.CPUUsage, PowerUsage: m.PowerUsage, Wear: m.Wear, WearStatus: m.WearStatus}
		switch {
		case m.MiningPower > 0:
			sm.Type, sm.Slot, sm.Stats = "mining", "utility", map[string]int{"mining_power": m.MiningPower}
		case m.CargoBonus > 0:
			sm.Type, sm.Stats = "utility", map[string]int{"cargo_bonus": m.CargoBonus}
		case m.MaxFuelBonus > 0:
			sm.Type, sm.Stats = "utility", map[string]int{"max_fuel_bonus": m.MaxFuelBonus}
		default:
			sm.Type = "utility"
		}
		gs.Modules = append(gs.Modules, sm)
	}
	cargo := make([]StateCargo, 0, len(sv.Cargo))
	for _, c := range sv.Cargo {
		cargo = append(cargo, StateCargo{ItemID: c.ItemID, ItemName: c.Name, Quantity: c.Quantity, Size: c.Size})
	}
	gs.Cargo = &cargo
	gs.Location = e.locationOf(w, p, &st)
	return gs
}

func className(id string) string {
	if id == "" {
		return ""
	}
	b := []byte(id)
	if b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
	return string(b)
}

func (e *Engine) locationOf(w *World, p *Player, st *playerState) *StateLocation {
	loc := &StateLocation{SystemID: st.systemID, InTransit: st.moving, Connections: []string{},
		NearbyPlayers: []StateNearby{}, NearbyPirates: []any{}}
	if st.dockedAt != "" {
		d := st.dockedAt
		loc.DockedAt = &d
	}
	if sys := w.system(st.systemID); sys != nil {
		loc.SystemName, loc.Empire, loc.SecurityStatus = sys.Name, sys.Empire, sys.Security
		for _, c := range sys.Connections {
			loc.Connections = append(loc.Connections, c.SystemID)
		}
	}
	if st.moving {
		tr := &st.transit
		loc.TransitType, loc.TransitArrivalTick = tr.kind, tr.arriveTick
		if tr.kind == "jump" {
			loc.TransitDestSystemID = tr.toSystem
			if sys := w.system(tr.toSystem); sys != nil {
				loc.TransitDestSystemName = sys.Name
			}
		} else {
			loc.TransitDestPOIID = tr.toPOI
			if poi := w.poi(tr.toPOI); poi != nil {
				loc.TransitDestPOIName = poi.Name
			}
		}
		return loc
	}
	poi := w.poi(st.poiID)
	if poi == nil {
		return loc
	}
	loc.POIID, loc.POIName, loc.POIType = poi.ID, poi.Name, poi.Type
	if len(poi.Deposits) > 0 {
		e.mu.RLock()
		for _, d := range poi.Deposits {
			loc.Resources = append(loc.Resources, StateResource{ItemID: d.ResourceID, Remaining: d.Remaining, Richness: d.Richness})
		}
		e.mu.RUnlock()
		for i := range loc.Resources {
			it, _ := itemByID(loc.Resources[i].ItemID)
			loc.Resources[i].ItemName = it.Name
		}
	}
	nearby, n := e.playersAt(p, poi.ID)
	loc.NearbyPlayerCount = n
	for _, o := range nearby {
		loc.NearbyPlayers = append(loc.NearbyPlayers, StateNearby{PlayerID: o.PlayerID, Username: o.Username, ShipClass: o.ShipClass, ShipName: o.ShipName, InCombat: o.InCombat})
	}
	return loc
}

// DrainNotifications hands out and clears every queued notification of sid's player, without counting a call or
// the once-per-tick throttle of get_notifications: the HTTP API v2 puts them on the next response, as the live
// server puts "notifications accumulated since the last request" in its envelope. nil when there are none.
func (e *Engine) DrainNotifications(sid string) []Notification {
	_, p := e.sessionPlayer(sid)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.notes) == 0 {
		return nil
	}
	out := slices.Clone(p.notes)
	p.notes = p.notes[:0]
	return out
}

// SessionInfo is what the HTTP API's envelope says about a game session: who is logged in and when it expires.
type SessionInfo struct {
	PlayerID  string
	ExpiresAt time.Time
}

// Session reports sid's player and expiry without renewing it; ok is false when sid is unknown or expired.
func (e *Engine) Session(sid string) (SessionInfo, bool) {
	s, p := e.sessionPlayer(sid)
	if s == nil {
		return SessionInfo{}, false
	}
	last := time.Unix(0, s.lastSeen.Load())
	if e.now().Sub(last) > e.cfg.SessionTTL {
		return SessionInfo{}, false
	}
	info := SessionInfo{ExpiresAt: last.Add(e.cfg.SessionTTL)}
	if p != nil {
		info.PlayerID = p.ID
	}
	return info, true
}

// PeekNotifications hands out up to limit queued notifications of sid's player (only the types named, when any
// are), oldest first, removing them when clear is set; like DrainNotifications it counts no call and has no
// per-tick throttle (GET /api/v2/notifications).
func (e *Engine) PeekNotifications(sid string, limit int, types map[string]bool, clear bool) []Notification {
	_, p := e.sessionPlayer(sid)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Notification
	kept := p.notes[:0:0]
	for _, n := range p.notes {
		if len(out) < limit && (len(types) == 0 || types[n.Type] || types[n.MsgType]) {
			out = append(out, n)
			if clear {
				continue
			}
		}
		kept = append(kept, n)
	}
	p.notes = kept
	return out
}
