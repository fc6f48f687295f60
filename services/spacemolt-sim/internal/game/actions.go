package game

import (
	"context"
	"math"
)

// command is a queued mutation.
type command struct {
	name   string
	target string
	item   string
	qty    int
	price  int
}

// Travel moves to a POI in the current system; it returns at arrival, with the ships found there.
func (e *Engine) Travel(ctx context.Context, sid, targetPOI string) (any, error) {
	p, err := e.begin(sid, kindMutation)
	if err != nil {
		return nil, err
	}
	res, err := e.enqueue(ctx, p, command{name: "travel", target: targetPOI})
	if tr, ok := res.(*TravelResult); ok && err == nil {
		// Taken after the tick, outside the world lock (accMu comes before it in the lock order).
		tr.OnlinePlayers, tr.OnlinePlayersCount = e.playersAt(p, tr.POIID)
		tr.OnlinePlayersTruncated = tr.OnlinePlayersCount > len(tr.OnlinePlayers)
	}
	return res, e.count(p, err)
}

// Jump moves to an adjacent system; it returns at arrival.
func (e *Engine) Jump(ctx context.Context, sid, targetSystem string) (any, error) {
	return e.submit(ctx, sid, command{name: "jump", target: targetSystem})
}

// Dock docks at the base of the current POI.
func (e *Engine) Dock(ctx context.Context, sid string) (any, error) {
	return e.submit(ctx, sid, command{name: "dock"})
}

// Undock leaves the base.
func (e *Engine) Undock(ctx context.Context, sid string) (any, error) {
	return e.submit(ctx, sid, command{name: "undock"})
}

// Mine extracts ore at the current belt.
func (e *Engine) Mine(ctx context.Context, sid string) (any, error) {
	return e.submit(ctx, sid, command{name: "mine"})
}

// Sell sells cargo into the station's buy orders.
func (e *Engine) Sell(ctx context.Context, sid, item string, qty int) (any, error) {
	return e.submit(ctx, sid, command{name: "sell", item: item, qty: qty})
}

// Buy buys from the station's sell orders.
func (e *Engine) Buy(ctx context.Context, sid, item string, qty int) (any, error) {
	return e.submit(ctx, sid, command{name: "buy", item: item, qty: qty})
}

// Refuel fills the tank as far as credits allow.
func (e *Engine) Refuel(ctx context.Context, sid string) (any, error) {
	return e.submit(ctx, sid, command{name: "refuel"})
}

// submit queues a mutation for the next tick and waits for its outcome. If ctx
// ends first the action still resolves; only the answer is lost, as with the
// real server.
func (e *Engine) submit(ctx context.Context, sid string, cmd command) (any, error) {
	p, err := e.begin(sid, kindMutation)
	if err != nil {
		return nil, err
	}
	res, err := e.enqueue(ctx, p, cmd)
	return res, e.count(p, err)
}

func (e *Engine) enqueue(ctx context.Context, p *Player, cmd command) (any, error) {
	p.mu.Lock()
	if p.arriveTick > 0 {
		secs, to := e.secondsUntil(p.arriveTick), p.transitTo
		p.mu.Unlock()
		return nil, &Error{
			Code:             CodeInTransit,
			Message:          "Your ship is in transit to " + to + " and arrives in " + itoa(secs) + " seconds.",
			SecondsRemaining: secs,
		}
	}
	if p.pending != nil {
		prev := p.pending.cmd.name
		p.mu.Unlock()
		return nil, errorf(CodeActionPending, "Your previous action (%s) is still waiting for the next tick.", prev)
	}
	a := &action{p: p, gen: p.gen, cmd: cmd, done: make(chan outcome, 1)}
	p.pending = a
	p.mu.Unlock()

	e.qMu.Lock()
	e.queue = append(e.queue, a)
	close(e.queued)
	e.queued = make(chan struct{})
	e.qMu.Unlock()

	select {
	case o := <-a.done:
		return o.result, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *Engine) secondsUntil(arriveTick int64) int {
	ticks := max(1, arriveTick-e.tick.Load())
	return max(1, int(math.Ceil(float64(ticks)*e.cfg.Tick.Seconds())))
}

// resolve applies one queued mutation. It runs under the world write lock and
// the player's lock. A multi-tick move sets a.arriveTick and a.finish (called
// under the same locks at arrival) and returns no result yet.
func (e *Engine) resolve(w *World, a *action, t int64) (any, error) {
	switch a.cmd.name {
	case "travel":
		return e.doTravel(w, a, t)
	case "jump":
		return e.doJump(w, a, t)
	case "dock":
		return e.doDock(w, a.p)
	case "undock":
		return e.doUndock(a.p)
	case "mine":
		return e.doMine(w, a.p)
	case "sell":
		return e.doSell(w, a.p, a.cmd.item, a.cmd.qty)
	case "buy":
		return e.doBuy(w, a.p, a.cmd.item, a.cmd.qty)
	case "refuel":
		return e.doRefuel(w, a.p)
	case "accept_mission":
		return e.doAcceptMission(w, a.p, a.cmd.target)
	case "complete_mission":
		return e.doCompleteMission(w, a.p, a.cmd.target)
	case "create_sell_order":
		return e.doCreateSellOrder(w, a.p, a.cmd)
	case "create_buy_order":
		return e.doCreateBuyOrder(w, a.p, a.cmd)
	case "cancel_order":
		return e.doCancelOrder(w, a.p, a.cmd.target)
	case "modify_order":
		return e.doModifyOrder(a.p, a.cmd.target, a.cmd.price)
	case "jettison":
		return e.doJettison(a.p, a.cmd.item, a.cmd.qty)
	}
	return nil, errorf(CodeInvalidPayload, "unknown action %q", a.cmd.name)
}

func (e *Engine) doTravel(w *World, a *action, t int64) (any, error) {
	p := a.p
	target := w.poi(a.cmd.target)
	if target == nil {
		return nil, errorf(CodeInvalidPOI, "Unknown POI %q. get_system lists the POIs of your system.", a.cmd.target)
	}
	if target.SystemID != p.systemID {
		return nil, errorf(CodeWrongSystem, "%s is in system %s but you are in %s. Jump there first (find_route).", target.ID, target.SystemID, p.systemID)
	}
	if target.ID == p.poiID {
		return nil, errorf(CodeInvalidPOI, "You are already at %s.", target.ID)
	}
	dist := poiDistance(w.poi(p.poiID), target)
	fuel := travelFuel(p.ship.Speed, dist)
	if p.ship.Fuel < fuel {
		return nil, errorf(CodeNoFuel, "Travelling to %s needs %d fuel; you have %d. Dock at a station and refuel.", target.ID, fuel, p.ship.Fuel)
	}
	ticks := travelTicks(p.ship.Speed, dist)
	undocked := p.dockedAt != ""
	p.dockedAt = ""
	p.ship.Fuel -= fuel
	p.distance += dist
	res := &TravelResult{Action: "travel", POI: target.Name, POIID: target.ID, AutoUndocked: undocked}
	arrive := func() any {
		p.poiID, p.transit = target.ID, nil
		return res
	}
	if ticks == 1 {
		return arrive(), nil
	}
	a.arriveTick = t + int64(ticks) - 1
	a.finish = arrive
	p.transit = &transit{kind: "travel", fromSystem: p.systemID, fromPOI: p.poiID, toSystem: p.systemID, toPOI: target.ID, departTick: t, arriveTick: a.arriveTick}
	p.poiID = ""
	return nil, nil
}

func (e *Engine) doJump(w *World, a *action, t int64) (any, error) {
	p := a.p
	target := w.system(a.cmd.target)
	if target == nil {
		return nil, errorf(CodeInvalidSystem, "Unknown system %q. get_map lists systems.", a.cmd.target)
	}
	cur := w.system(p.systemID)
	if target == cur {
		return nil, errorf(CodeInvalidSystem, "You are already in %s.", target.ID)
	}
	conn, ok := cur.connection(target.ID)
	if !ok {
		return nil, errorf(CodeNotConnected, "%s is not connected to %s. Use find_route to plan jumps.", target.ID, cur.ID)
	}
	fuel := travelFuel(p.ship.Speed, conn.Distance)
	if p.ship.Fuel < fuel {
		return nil, errorf(CodeNoFuel, "Jumping to %s needs %d fuel; you have %d. Dock at a station and refuel.", target.ID, fuel, p.ship.Fuel)
	}
	ticks := jumpTicks(p.ship.Speed)
	autoUndocked := p.dockedAt != ""
	p.dockedAt = ""
	p.ship.Fuel -= fuel
	arrival := target.arrivalPOI()
	from := cur.ID
	p.distance += conn.Distance
	res := &JumpResult{PendingResult{Command: "jump"}}
	arrive := func() any {
		p.systemID, p.poiID, p.transit = target.ID, arrival.ID, nil
		first := !p.visited[target.ID]
		p.visited[target.ID] = true
		res.Message = "Jumped to " + target.Name + "; you are at " + arrival.Name + "."
		if autoUndocked {
			res.Message = "Undocked automatically. " + res.Message
		}
		e.notifyLater(p, "system", "system_entered", map[string]any{"system_id": target.ID, "first_visit": first})
		return res
	}
	if ticks == 1 {
		return arrive(), nil
	}
	a.arriveTick = t + int64(ticks) - 1
	a.finish = arrive
	p.transit = &transit{kind: "jump", fromSystem: from, fromPOI: p.poiID, toSystem: target.ID, toPOI: arrival.ID, departTick: t, arriveTick: a.arriveTick}
	p.poiID = ""
	return nil, nil
}

func (e *Engine) doDock(w *World, p *Player) (any, error) {
	poi := w.poi(p.poiID)
	if p.dockedAt != "" {
		return nil, errorf(CodeAlreadyDocked, "You are already docked at %s.", p.dockedAt)
	}
	if poi.Base == nil {
		return nil, errorf(CodeInvalidPOI, "There is no base at %s to dock with.", poi.ID)
	}
	p.dockedAt = poi.Base.ID
	return &DockResult{PendingResult{Command: "dock", Message: "Docked at " + poi.Base.Name + "."}}, nil
}

func (e *Engine) doUndock(p *Player) (any, error) {
	if p.dockedAt == "" {
		return nil, errorf(CodeNotDocked, "You are not docked.")
	}
	p.dockedAt = ""
	return &UndockResult{Action: "undock"}, nil
}

func (e *Engine) doMine(w *World, p *Player) (any, error) {
	poi := w.poi(p.poiID)
	// Mining while docked undocks first, in the same tick, as the live server does (auto_undocked).
	undocked := p.dockedAt != ""
	p.dockedAt = ""
	if len(poi.Deposits) == 0 {
		return nil, errorf(CodeNoResources, "There is nothing to mine at %s. Travel to an asteroid belt (get_system lists them).", poi.ID)
	}
	free := p.ship.CargoMax - p.cargoUsed()
	if free <= 0 {
		return nil, errorf(CodeCargoFull, "Your cargo hold is full (%d/%d). Sell some cargo first.", p.cargoUsed(), p.ship.CargoMax)
	}
	total := 0
	for _, d := range poi.Deposits {
		if d.Remaining > 0 {
			total += d.Richness
		}
	}
	if total == 0 {
		return nil, errorf(CodeDepositTooSparse, "The deposits at %s are too sparse to mine. Try another belt.", poi.ID)
	}
	// The roll depends only on the seed, the player and how often it mined, so
	// one player's luck does not depend on who else acted this tick.
	roll := int(splitmix64(uint64(e.cfg.Seed)^uint64(p.seq)<<32^p.mineRolls) % uint64(total))
	p.mineRolls++
	var dep *Deposit
	for _, d := range poi.Deposits {
		if d.Remaining == 0 {
			continue
		}
		if roll < d.Richness {
			dep = d
			break
		}
		roll -= d.Richness
	}
	qty := min(p.ship.MiningPower, dep.Remaining, free)
	dep.Remaining -= qty
	p.cargo[dep.ResourceID] += qty
	p.oreMined += qty
	it, _ := itemByID(dep.ResourceID)
	return &MineResult{
		PendingResult: PendingResult{Command: "mine", Message: "Mined " + itoa(qty) + " " + it.Name + "."},
		AutoUndocked:  undocked, ResourceID: dep.ResourceID, Name: it.Name, Quantity: qty, Remaining: dep.Remaining,
		CargoUsed: p.cargoUsed(), CargoCapacity: p.ship.CargoMax,
	}, nil
}

// stationHere returns the base at the player's POI or a not_docked error.
func stationHere(w *World, p *Player, what string) (*Base, error) {
	poi := w.poi(p.poiID)
	if poi.Base == nil {
		return nil, errorf(CodeNotDocked, "There is no base at %s to %s. Travel to a station.", poi.ID, what)
	}
	return poi.Base, nil
}

func (e *Engine) autoDock(p *Player, b *Base) bool {
	if p.dockedAt != "" {
		return false
	}
	p.dockedAt = b.ID
	return true
}

func (e *Engine) doSell(w *World, p *Player, itemID string, qty int) (any, error) {
	if qty < 1 {
		return nil, errorf(CodeInvalidPayload, "quantity must be at least 1")
	}
	b, err := stationHere(w, p, "sell")
	if err != nil {
		return nil, err
	}
	it, known := resolveItem(itemID) // an id or a name ("Iron Ore"), as the live server takes
	if known {
		itemID = it.ID
	}
	have := p.cargo[itemID]
	if !known || have == 0 {
		return nil, errorf(CodeItemNotAvailable, "You have no %s in your cargo.", itemID)
	}
	book := b.Market.book(itemID)
	if _, vol := best(book.Bids); vol == 0 {
		return nil, errorf(CodeItemNotAvailable, "%s has no buy orders for %s right now; prices recover over time.", b.Name, itemID)
	}
	docked := e.autoDock(p, b)
	fills, sold, earned := book.sellInto(min(qty, have))
	p.cargo[itemID] -= sold
	if p.cargo[itemID] == 0 {
		delete(p.cargo, itemID)
	}
	p.credits += earned
	p.creditsEarned += earned
	if sold > 0 {
		p.trades++
	}
	msg := "Sold " + itoa(sold) + " " + it.Name + " for " + itoa(earned) + " credits."
	if sold < qty {
		msg += " Requested " + itoa(qty) + "; the rest stays in your hold."
	}
	if docked {
		msg = "Docked automatically. " + msg
	}
	e.notifyLater(p, "trade", "sell_filled", map[string]any{"item_id": itemID, "quantity": sold, "total": earned, "base_id": b.ID})
	if fills == nil {
		fills = []Fill{}
	}
	return &SellResult{
		Action: "sell", Item: it.Name, ItemID: itemID, QuantitySold: sold, TotalEarned: earned, Fills: fills,
		Unsold: qty - sold, Message: msg, AutoDocked: docked,
	}, nil
}

func (e *Engine) doBuy(w *World, p *Player, itemID string, qty int) (any, error) {
	if qty < 1 {
		return nil, errorf(CodeInvalidPayload, "quantity must be at least 1")
	}
	b, err := stationHere(w, p, "buy")
	if err != nil {
		return nil, err
	}
	it, known := resolveItem(itemID)
	if known {
		itemID = it.ID
	}
	var book *Book
	if known {
		book = b.Market.book(itemID)
	}
	if book == nil {
		return nil, errorf(CodeItemNotAvailable, "%s does not sell %q.", b.Name, itemID)
	}
	if free := p.ship.CargoMax - p.cargoUsed(); qty > free {
		return nil, errorf(CodeNoCargoSpace, "Buying %d %s needs %d cargo space; you have %d free.", qty, itemID, qty, free)
	}
	cost, ok := book.quoteBuy(qty)
	if !ok {
		_, vol := best(book.Asks)
		return nil, errorf(CodeItemNotAvailable, "Only %d %s are for sale at %s right now.", vol, itemID, b.Name)
	}
	if cost > p.credits {
		return nil, errorf(CodeNoCredits, "%d %s cost %d credits; you have %d.", qty, itemID, cost, p.credits)
	}
	docked := e.autoDock(p, b)
	fills, cost := book.buyFrom(qty)
	p.credits -= cost
	p.creditsSpent += cost
	p.trades++
	p.cargo[itemID] += qty
	msg := "Bought " + itoa(qty) + " " + it.Name + " for " + itoa(cost) + " credits."
	if docked {
		msg = "Docked automatically. " + msg
	}
	e.notifyLater(p, "trade", "buy_filled", map[string]any{"item_id": itemID, "quantity": qty, "total": cost, "base_id": b.ID})
	return &BuyResult{
		Action: "buy", Item: it.Name, ItemID: itemID, Quantity: qty, TotalCost: cost, Fills: fills,
		DeliveredToCargo: qty, Message: msg, AutoDocked: docked,
	}, nil
}

func (e *Engine) doRefuel(w *World, p *Player) (any, error) {
	b, err := stationHere(w, p, "refuel")
	if err != nil {
		return nil, err
	}
	need := p.ship.FuelMax - p.ship.Fuel
	if need == 0 {
		return &RefuelResult{Action: "refuel", Source: "credits", Fuel: p.ship.Fuel, FuelNow: p.ship.Fuel, FuelMax: p.ship.FuelMax}, nil
	}
	add := min(need, p.credits/b.FuelPrice)
	if add == 0 {
		return nil, errorf(CodeNoCredits, "Fuel costs %d credits a unit; you have %d.", b.FuelPrice, p.credits)
	}
	docked := e.autoDock(p, b)
	cost := add * b.FuelPrice
	p.credits -= cost
	p.creditsSpent += cost
	p.ship.Fuel += add
	return &RefuelResult{Action: "refuel", Source: "credits", Fuel: p.ship.Fuel, FuelNow: p.ship.Fuel, FuelMax: p.ship.FuelMax, Cost: cost, AutoDocked: docked}, nil
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
