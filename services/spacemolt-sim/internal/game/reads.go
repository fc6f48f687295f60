package game

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Reads are free: they cost no tick. They take the player's lock briefly and
// the world read lock only to copy deposit or market numbers.

// Status answers get_status.
func (e *Engine) Status(sid string) (*StatusResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	return &StatusResult{Player: e.playerView(e.w(), &st), Ship: shipView(&st), Modules: modules(&st)}, nil
}

// Ship answers get_ship.
func (e *Engine) Ship(sid string) (*ShipResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	return &ShipResult{Ship: shipView(&st), Modules: modules(&st), CargoUsed: st.cargoUsed(), CargoMax: st.ship.CargoMax}, nil
}

// Cargo answers get_cargo.
func (e *Engine) Cargo(sid string) (*CargoResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	res := &CargoResult{Cargo: []CargoItem{}, Used: st.cargoUsed(), Capacity: st.ship.CargoMax}
	res.Available = res.Capacity - res.Used
	for i, it := range itemCatalog {
		if q := st.cargo[i]; q > 0 {
			res.Cargo = append(res.Cargo, CargoItem{ItemID: it.ID, Name: it.Name, Quantity: q, Size: itemSize})
		}
	}
	return res, nil
}

// System answers get_system.
func (e *Engine) System(sid string) (*SystemResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	if st.moving && st.transit.kind == "jump" {
		tr := &st.transit
		tf := e.transitForm(&st, "In hyperspace between "+tr.fromSystem+" and "+tr.toSystem+".")
		tf.FromPOI, tf.ToPOI = "", "" // get_system's transit form names systems only
		return &SystemResult{Action: "get_system", TransitForm: tf}, nil
	}
	sys := w.system(st.systemID)
	v := e.systemView(w, sys)
	res := &SystemResult{Action: "get_system", System: &v, SecurityStatus: sys.Security}
	if st.poiID != "" {
		for i := range v.POIs {
			if v.POIs[i].ID == st.poiID {
				res.POI = &v.POIs[i]
			}
		}
	}
	return res, nil
}

// POI answers get_poi.
func (e *Engine) POI(sid string) (*POIResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	if st.moving {
		tr := &st.transit
		return &POIResult{Action: "get_poi", TransitForm: e.transitForm(&st, "In transit to "+tr.toPOI+".")}, nil
	}
	poi := w.poi(st.poiID)
	res := &POIResult{
		POI: &POIView{
			ID: poi.ID, SystemID: poi.SystemID, Type: poi.Type, Name: poi.Name,
			Description: poi.Description, Position: Position{poi.X, poi.Y},
		},
		Resources: make([]ResourceView, 0, len(poi.Deposits)), Services: []string{},
	}
	e.mu.RLock()
	for _, d := range poi.Deposits {
		res.Resources = append(res.Resources, ResourceView{ResourceID: d.ResourceID, Richness: d.Richness, Remaining: d.Remaining, MaxRemaining: d.Max})
	}
	e.mu.RUnlock()
	for i := range res.Resources {
		r := &res.Resources[i]
		it, _ := itemByID(r.ResourceID)
		r.Name = it.Name
		r.RemainingDisplay = strconv.Itoa(r.Remaining) + "/" + strconv.Itoa(r.MaxRemaining)
		if r.MaxRemaining > 0 {
			r.DepletionPercent = math.Round(1000*float64(r.MaxRemaining-r.Remaining)/float64(r.MaxRemaining)) / 10
		}
	}
	if poi.Base != nil {
		bv := baseView(w, poi)
		res.Base, res.Services, res.POI.BaseID = &bv, poi.Base.services(), poi.Base.ID
	}
	return res, nil
}

// Nearby answers get_nearby: other ships at the same POI.
func (e *Engine) Nearby(sid string) (*NearbyResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	here := p.poiID
	p.mu.Unlock()
	res := &NearbyResult{POIID: here, Nearby: []NearbyPlayer{}, Pirates: []any{}}
	if here == "" {
		return res, nil
	}
	res.Nearby, res.Count = e.playersAt(p, here)
	return res, nil
}

// playersAt lists the other ships at poiID, at most NearbyListCap of them, and counts them all.
func (e *Engine) playersAt(self *Player, poiID string) ([]NearbyPlayer, int) {
	out, n := []NearbyPlayer{}, 0
	e.accMu.RLock()
	defer e.accMu.RUnlock()
	for _, o := range e.players {
		if o == self {
			continue
		}
		o.mu.Lock()
		at, class, name := o.poiID, o.ship.Class, o.ship.Name
		o.mu.Unlock()
		if at != poiID {
			continue
		}
		n++
		if len(out) < NearbyListCap {
			out = append(out, NearbyPlayer{
				PlayerID: o.ID, Username: o.Username, ShipClass: class, ShipName: name,
				PrimaryColor: defaultPrimaryColor, SecondaryColor: defaultSecondaryColor,
			})
		}
	}
	return out, n
}

// Map answers get_map; systemID narrows it to one system.
func (e *Engine) Map(sid, systemID string) (*MapResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	current := p.systemID
	visited := maps.Clone(p.visited)
	p.mu.Unlock()
	res := &MapResult{Systems: []MapSystem{}, CurrentSystem: current}
	for _, s := range w.systems {
		if systemID != "" && s.ID != systemID {
			continue
		}
		ms := MapSystem{
			SystemID: s.ID, Name: s.Name, Empire: s.Empire, SecurityStatus: s.Security,
			Position: Position{s.X, s.Y}, Connections: connections(w, s), POIs: e.poiBriefs(w, s),
			Visited: visited[s.ID],
		}
		for _, poi := range s.POIs {
			ms.HasStation = ms.HasStation || poi.Base != nil
		}
		res.Systems = append(res.Systems, ms)
	}
	if systemID != "" && len(res.Systems) == 0 {
		return nil, e.count(p, errorf(CodeInvalidSystem, "Unknown system %q.", systemID))
	}
	res.TotalCount = len(res.Systems)
	return res, nil
}

// Route answers find_route with the fewest jumps.
func (e *Engine) Route(sid, target string) (*RouteResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	from, fuel, speed, used := p.systemID, p.ship.Fuel, p.ship.Speed, p.cargoUsed()
	p.mu.Unlock()
	res := &RouteResult{Route: []RouteStep{}, TargetSystem: target, FuelAvailable: fuel, CargoUsed: used}
	path := w.route(from, target)
	if path == nil {
		res.Message = "No route to " + target + ". get_map lists known systems."
		return res, nil
	}
	res.Found = true
	for i, id := range path {
		res.Route = append(res.Route, RouteStep{SystemID: id, Name: w.system(id).Name, Jumps: i})
		if i > 0 {
			c, _ := w.system(path[i-1]).connection(id)
			res.EstimatedFuel += travelFuel(speed, c.Distance)
		}
	}
	res.TotalJumps = len(path) - 1
	if res.TotalJumps > 0 {
		res.FuelPerJump = (res.EstimatedFuel + res.TotalJumps - 1) / res.TotalJumps
	}
	res.Message = fmt.Sprintf("%d jumps to %s, about %d fuel; you have %d.", res.TotalJumps, target, res.EstimatedFuel, fuel)
	return res, nil
}

// Market answers view_market at the current station; itemID adds its order book.
func (e *Engine) Market(sid, itemID string) (*MarketResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	poiID := p.poiID
	var b *Base
	if poiID != "" {
		b, err = stationHere(w, p, "trade")
	}
	p.mu.Unlock()
	if poiID == "" {
		return nil, e.count(p, errorf(CodeNotDocked, "You are in transit; markets are at stations."))
	}
	if err != nil {
		return nil, e.count(p, err)
	}
	if itemID != "" {
		if _, ok := itemByID(itemID); !ok {
			return nil, e.count(p, errorf(CodeItemNotAvailable, "%s does not trade %q.", b.Name, itemID))
		}
	}
	// Copy the books under the lock without allocating; build the view after.
	type bookCopy struct {
		itemID     string
		bids, asks [ladderLevels]Level
	}
	var books [len(itemCatalog)]bookCopy
	n := 0
	e.mu.RLock()
	for _, book := range b.Market.books {
		if (itemID != "" && book.ItemID != itemID) || n == len(books) {
			continue
		}
		books[n].itemID = book.ItemID
		for i := range min(len(book.Bids), ladderLevels) {
			books[n].bids[i] = *book.Bids[i]
		}
		for i := range min(len(book.Asks), ladderLevels) {
			books[n].asks[i] = *book.Asks[i]
		}
		n++
	}
	e.mu.RUnlock()

	res := &MarketResult{Action: "view_market", Base: b.Name, BaseID: b.ID, Items: make([]MarketItem, 0, n)}
	for i := range n {
		bc := &books[i]
		it, _ := itemByID(bc.itemID)
		bids, asks := levelPtrs(bc.bids[:]), levelPtrs(bc.asks[:])
		mi := MarketItem{ItemID: it.ID, ItemName: it.Name, Category: "ore", BuyOrders: []Order{}, SellOrders: []Order{}}
		mi.BestBuy, mi.BuyQuantity = best(bids)
		mi.BestSell, mi.SellQuantity = best(asks)
		mi.BuyPrice, mi.SellPrice = mi.BestBuy, mi.BestSell
		if mi.BestBuy > 0 && mi.BestSell > 0 {
			mi.Spread = mi.BestSell - mi.BestBuy
		}
		if itemID != "" {
			mi.BuyOrders, mi.SellOrders = orders(bids), orders(asks)
		}
		res.Items = append(res.Items, mi)
	}
	return res, nil
}

func levelPtrs(ls []Level) []*Level {
	out := make([]*Level, len(ls))
	for i := range ls {
		out[i] = &ls[i]
	}
	return out
}

func orders(levels []*Level) []Order {
	out := []Order{}
	for _, l := range levels {
		if l.Qty > 0 {
			out = append(out, Order{PriceEach: l.Price, Quantity: l.Qty, Source: "station"})
		}
	}
	return out
}

// Captain's log limits, as on the live server.
const (
	LogKeep     = 20
	LogMaxBytes = 30000
)

// LogAdd answers captains_log_add; the newest entry is index 0.
func (e *Engine) LogAdd(sid, entry string) (*LogAddResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(entry) == "" {
		return nil, e.count(p, errorf(CodeEmptyEntry, "Log entry is empty."))
	}
	if len(entry) > LogMaxBytes {
		return nil, e.count(p, errorf(CodeInvalidPayload, "Log entry is %d bytes; the limit is %d.", len(entry), LogMaxBytes))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = slices.Insert(p.log, 0, entry)
	p.logAt = slices.Insert(p.logAt, 0, e.now())
	if len(p.log) > LogKeep {
		p.log = p.log[:LogKeep]
	}
	if len(p.logAt) > len(p.log) {
		p.logAt = p.logAt[:len(p.log)]
	}
	return &LogAddResult{Index: 0, CreatedAt: timestamp(p.logAt[0]), TotalCount: len(p.log), Message: "Entry recorded."}, nil
}

// LogList answers captains_log_list.
func (e *Engine) LogList(sid string, index int) (*LogListResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.log)
	if n == 0 {
		return &LogListResult{Index: 0, TotalCount: 0, MaxEntries: LogKeep}, nil
	}
	if index < 0 || index >= n {
		return nil, e.count(p, errorf(CodeInvalidPayload, "index must be between 0 and %d.", n-1))
	}
	entry := &LogEntryView{Index: index, Entry: p.log[index]}
	if index < len(p.logAt) {
		entry.CreatedAt = timestamp(p.logAt[index])
	}
	return &LogListResult{Entry: entry, Index: index, TotalCount: n, MaxEntries: LogKeep, HasNext: index+1 < n, HasPrev: index > 0}, nil
}

// Chat channels.
var chatChannels = []string{"system", "local", "faction", "private"}

// ChatMaxChars bounds a chat message.
const ChatMaxChars = 500

// Chat answers chat: the message is queued as a notification for every recipient.
func (e *Engine) Chat(sid, channel, content, targetID string) (*ChatResult, error) {
	p, err := e.begin(sid, kindChat)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(chatChannels, channel) {
		return nil, e.count(p, errorf(CodeInvalidPayload, "channel must be one of %s.", strings.Join(chatChannels, ", ")))
	}
	if strings.TrimSpace(content) == "" {
		return nil, e.count(p, errorf(CodeEmptyEntry, "Message is empty."))
	}
	if utf8.RuneCountInString(content) > ChatMaxChars {
		return nil, e.count(p, errorf(CodeInvalidPayload, "Message exceeds %d characters.", ChatMaxChars))
	}
	if channel == "private" && targetID == "" {
		return nil, e.count(p, errorf(CodeInvalidPayload, "private messages need target_id."))
	}
	p.mu.Lock()
	poiID, systemID := p.poiID, p.systemID
	p.mu.Unlock()
	var to []*Player
	e.accMu.RLock()
	if channel == "private" {
		t := e.byID[targetID]
		if t == nil {
			t = e.byName[strings.ToLower(targetID)]
		}
		if t != nil {
			to = append(to, t)
		}
	} else {
		for _, o := range e.players {
			if o == p {
				continue
			}
			o.mu.Lock()
			oPOI, oSystem := o.poiID, o.systemID
			o.mu.Unlock()
			switch {
			case channel == "local" && poiID != "" && oPOI == poiID,
				channel == "system" && oSystem == systemID,
				channel == "faction" && o.Empire == p.Empire:
				to = append(to, o)
			}
		}
	}
	e.accMu.RUnlock()
	if channel == "private" && len(to) == 0 {
		return nil, e.count(p, errorf(CodePlayerNotFound, "No player %q.", targetID))
	}
	sentAt := e.now().UTC().Format(time.RFC3339Nano)
	for _, o := range to {
		e.notify(o, "chat", "chat_message", map[string]any{
			"channel": channel, "from": p.Username, "from_id": p.ID, "content": content, "sent_at": sentAt,
		})
	}
	return &ChatResult{Action: "chat", SentAt: sentAt, Channel: channel, Recipients: len(to)}, nil
}

// MaxNotifications bounds one get_notifications call.
const MaxNotifications = 100

// Notifications answers get_notifications, oldest first. It hands out events
// at most once per tick; a second call in the same tick gets none.
func (e *Engine) Notifications(sid string, limit int, clear bool) (*NotificationsResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxNotifications {
		return nil, e.count(p, errorf(CodeInvalidPayload, "limit must be between 1 and %d.", MaxNotifications))
	}
	t := e.tick.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	res := &NotificationsResult{Notifications: []Notification{}, CurrentTick: t}
	if p.lastNoteTick == t+1 { // stored +1 so the zero value means "never"
		res.Throttled, res.Remaining = true, len(p.notes)
		res.Message = "Notifications were already fetched this tick; try again next tick."
		return res, nil
	}
	p.lastNoteTick = t + 1
	p.lastChatCheck = e.now()
	n := min(limit, len(p.notes))
	res.Notifications = append(res.Notifications, p.notes[:n]...)
	if clear {
		p.notes = slices.Delete(p.notes, 0, n)
	}
	res.Count = n
	res.Remaining = len(p.notes)
	if !clear {
		res.Remaining -= n
	}
	return res, nil
}

// The colours every simulated pilot flies; the simulator has no set_colors.
const (
	defaultPrimaryColor   = "#ffffff"
	defaultSecondaryColor = "#000000"
)

// itemSize is the cargo space one unit of any item takes in the simulator.
const itemSize = 1

// timestamp renders a time as the v1 description's date-time strings do.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (e *Engine) playerView(w *World, st *playerState) PlayerView {
	v := PlayerView{
		ID: st.ID, Username: st.Username, Empire: st.Empire, Credits: st.credits,
		CurrentSystem: st.systemID, CurrentPOI: st.poiID, CurrentShipID: st.ship.ID, HomeBase: HomeBase,
		DockedAtBase: st.dockedAt,
		CreatedAt:    timestamp(st.createdAt), LastActiveAt: timestamp(st.lastActive), LastLoginAt: timestamp(st.lastLoginAt),
		LastChatCheck: timestamp(st.lastChatCheck),
		PrimaryColor:  defaultPrimaryColor, SecondaryColor: defaultSecondaryColor,
		RevealedPOIs: map[string]bool{}, Skills: map[string]int{},
		Stats: PlayerStatsView{
			CreditsEarned: st.creditsEarned, CreditsSpent: st.creditsSpent, OreMined: st.oreMined,
			DistanceTraveled: st.distance, TradesCompleted: st.trades, SystemsExplored: st.explored,
		},
	}
	if st.moving {
		// In transit the player is nowhere; current_poi names where it left from so the field stays a POI id.
		v.CurrentPOI = st.transit.fromPOI
	}
	v.Transit = e.transitView(st)
	v.InTransit = v.Transit != nil
	return v
}

// loginPlayerView is playerView with the fields only login and register carry.
func (e *Engine) loginPlayerView(w *World, st *playerState) PlayerView {
	v := e.playerView(w, st)
	v.SkillXP = &map[string]int{}
	return v
}

func (e *Engine) transitView(st *playerState) *TransitView {
	if !st.moving {
		return nil
	}
	tr := &st.transit
	left := max(0, tr.arriveTick-e.tick.Load())
	return &TransitView{
		Type: tr.kind, FromSystem: tr.fromSystem, FromPOI: tr.fromPOI, ToSystem: tr.toSystem, ToPOI: tr.toPOI,
		TicksRemaining: left, ArrivesInSeconds: int(math.Ceil(float64(max(1, left)) * e.cfg.Tick.Seconds())),
	}
}

// transitForm is the in-transit answer of get_system and get_poi.
func (e *Engine) transitForm(st *playerState, msg string) TransitForm {
	tr := &st.transit
	left := max(0, tr.arriveTick-e.tick.Load())
	return TransitForm{
		InTransit: true, TransitType: tr.kind, FromSystem: tr.fromSystem, FromPOI: tr.fromPOI,
		ToSystem: tr.toSystem, ToPOI: tr.toPOI, TicksRemaining: &left, Message: msg,
	}
}

func shipView(st *playerState) ShipView {
	s := st.ship
	c := shipClasses[s.Class]
	v := ShipView{
		ID: s.ID, OwnerID: st.ID, ClassID: s.Class, Name: s.Name, CreatedAt: timestamp(st.createdAt),
		Hull: s.Hull, MaxHull: s.HullMax, Shield: s.Shield, MaxShield: s.ShieldMax, ShieldRecharge: c.shieldRecharge,
		Armor: c.armor, Fuel: s.Fuel, MaxFuel: s.FuelMax, Speed: s.Speed,
		CargoUsed: st.cargoUsed(), CargoCapacity: s.CargoMax,
		CPUCapacity: c.cpuCapacity, PowerCapacity: c.powerCapacity,
		WeaponSlots: c.weaponSlots, DefenseSlots: c.defenseSlots, UtilitySlots: c.utilitySlots,
		Modules: make([]string, 0, len(starterModules)), Cargo: []ShipCargoItem{}, DockedAtBase: st.dockedAt,
	}
	for _, m := range starterModules {
		v.Modules = append(v.Modules, s.ID+m.suffix)
		v.CPUUsed += m.cpu
		v.PowerUsed += m.power
	}
	for i, it := range itemCatalog {
		if q := st.cargo[i]; q > 0 {
			v.Cargo = append(v.Cargo, ShipCargoItem{ItemID: it.ID, Name: it.Name, Quantity: q, Size: itemSize})
		}
	}
	return v
}

func modules(st *playerState) []ModuleView {
	out := make([]ModuleView, 0, len(starterModules))
	for _, m := range starterModules {
		mv := ModuleView{
			ID: st.ship.ID + m.suffix, TypeID: m.typeID, Name: m.name, Type: m.typ, Size: 1,
			CPUUsage: m.cpu, PowerUsage: m.power, Quality: 1, QualityGrade: "standard", Wear: 0, WearStatus: "pristine",
		}
		switch m.typ {
		case "mining":
			mv.MiningPower = st.ship.MiningPower
		case "cargo":
			mv.CargoBonus = st.ship.CargoMax
		case "fuel":
			mv.MaxFuelBonus = st.ship.FuelMax
		}
		out = append(out, mv)
	}
	return out
}

func baseView(w *World, poi *POI) BaseView {
	b := poi.Base
	return BaseView{
		ID: b.ID, POIID: poi.ID, Name: b.Name, Type: "station", Empire: w.system(poi.SystemID).Empire,
		Description: b.Name + " at " + poi.Name + ".", DefenseLevel: baseDefense(w.system(poi.SystemID)),
		PublicAccess: true, Facilities: b.services(),
	}
}

// baseDefense rates a station 0-100 by its system's security.
func baseDefense(s *System) int {
	switch s.Security {
	case "high":
		return 80
	case "medium":
		return 50
	}
	return 20
}

// policeLevel rates a system's policing 0-100 by its security.
func policeLevel(s *System) int {
	switch s.Security {
	case "high":
		return 100
	case "medium":
		return 50
	}
	return 0
}

func (e *Engine) systemView(w *World, sys *System) SystemView {
	return SystemView{
		ID: sys.ID, Name: sys.Name, Empire: sys.Empire, SecurityStatus: sys.Security, PoliceLevel: policeLevel(sys),
		Connections: connections(w, sys), POIs: e.poiBriefs(w, sys),
	}
}

func connections(w *World, s *System) []ConnectionView {
	out := make([]ConnectionView, 0, len(s.Connections))
	for _, c := range s.Connections {
		out = append(out, ConnectionView{SystemID: c.SystemID, Name: w.system(c.SystemID).Name, Distance: c.Distance})
	}
	return out
}

func (e *Engine) poiBriefs(w *World, s *System) []POIBrief {
	out := make([]POIBrief, 0, len(s.POIs))
	for _, poi := range s.POIs {
		out = append(out, poiBrief(poi))
	}
	return out
}

func poiBrief(poi *POI) POIBrief {
	b := POIBrief{ID: poi.ID, Name: poi.Name, Type: poi.Type, HasBase: poi.Base != nil, Position: Position{poi.X, poi.Y}}
	if poi.Base != nil {
		b.BaseID, b.BaseName = poi.Base.ID, poi.Base.Name
	}
	return b
}
