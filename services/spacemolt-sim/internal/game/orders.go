package game

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Player orders on a station exchange, as the live game has them kept simple: an order is escrowed when placed
// (a sell order's items, a buy order's credits), crosses the station's book at once where the price allows (no fee
// on that part), and the rest rests on the book for a 1% listing fee. The simulator has no other traders, so a
// resting order never fills later; cancel_order returns its escrow (items to the cargo hold, where the live game
// uses station storage, which the simulator does not have).

// MaxOrderPrice is the live game's per-unit price cap (price_too_high above it).
const MaxOrderPrice = 1_000_000_000_000

// maxOrderQuantity bounds an order's quantity (the simulator's own; no hold comes near it).
const maxOrderQuantity = 1_000_000

// playerOrder is one resting order.
type playerOrder struct {
	ID         string    `json:"order_id"`
	BaseID     string    `json:"base_id"`
	Side       string    `json:"side"` // "buy" or "sell"
	ItemID     string    `json:"item_id"`
	Price      int       `json:"price_each"`
	Quantity   int       `json:"quantity"`
	Filled     int       `json:"filled"`
	ListingFee int       `json:"listing_fee"`
	CreatedAt  time.Time `json:"created_at"`
}

func (o *playerOrder) remaining() int { return o.Quantity - o.Filled }

// listingFee is 1% of the listed value, at least 1 credit.
func listingFee(qty, price int) int {
	if qty == 0 {
		return 0
	}
	return max(1, (qty*price+99)/100)
}

// sellAtLeast fills up to qty into the bids paying at least minPrice, best first.
func (b *Book) sellAtLeast(qty, minPrice int) (fills []Fill, sold, earned int) {
	for _, l := range b.Bids {
		if qty == 0 || l.Price < minPrice {
			break
		}
		n := min(qty, l.Qty)
		if n == 0 {
			continue
		}
		l.Qty -= n
		qty -= n
		sold += n
		earned += n * l.Price
		fills = append(fills, Fill{Quantity: n, PriceEach: l.Price, Subtotal: n * l.Price})
	}
	return fills, sold, earned
}

// buyAtMost takes up to qty from the asks priced at most maxPrice, cheapest first.
func (b *Book) buyAtMost(qty, maxPrice int) (fills []Fill, bought, cost int) {
	for _, l := range b.Asks {
		if qty == 0 || l.Price > maxPrice {
			break
		}
		n := min(qty, l.Qty)
		if n == 0 {
			continue
		}
		l.Qty -= n
		qty -= n
		bought += n
		cost += n * l.Price
		fills = append(fills, Fill{Quantity: n, PriceEach: l.Price, Subtotal: n * l.Price})
	}
	return fills, bought, cost
}

// CreateSellOrder lists cargo on the exchange of the station the player is at (one tick).
func (e *Engine) CreateSellOrder(ctx context.Context, sid, item string, qty, price int) (any, error) {
	return e.submit(ctx, sid, command{name: "create_sell_order", item: item, qty: qty, price: price})
}

// CreateBuyOrder places a standing offer to buy (one tick).
func (e *Engine) CreateBuyOrder(ctx context.Context, sid, item string, qty, price int) (any, error) {
	return e.submit(ctx, sid, command{name: "create_buy_order", item: item, qty: qty, price: price})
}

// CancelOrder cancels one order, or every order at the station with "all" or "*" (one tick).
func (e *Engine) CancelOrder(ctx context.Context, sid, orderID string) (any, error) {
	return e.submit(ctx, sid, command{name: "cancel_order", target: orderID})
}

// ModifyOrder reprices an order (one tick).
func (e *Engine) ModifyOrder(ctx context.Context, sid, orderID string, price int) (any, error) {
	return e.submit(ctx, sid, command{name: "modify_order", target: orderID, price: price})
}

// resolveItem accepts an item id or its name ("Iron Ore"), as the live server does.
func resolveItem(s string) (Item, bool) {
	if it, ok := itemByID(s); ok {
		return it, true
	}
	for _, it := range itemCatalog {
		if strings.EqualFold(it.Name, s) {
			return it, true
		}
	}
	return Item{}, false
}

func checkOrderArgs(qty, price int) error {
	if qty < 1 || price < 1 {
		return errorf(CodeInvalidPayload, "quantity and price_each must be at least 1. Example: {\"item_id\": \"iron_ore\", \"quantity\": 10, \"price_each\": 6}")
	}
	if price > MaxOrderPrice {
		return errorf(CodePriceTooHigh, "price_each %d is above the cap of %d credits per unit.", price, MaxOrderPrice)
	}
	if qty > maxOrderQuantity { // keeps quantity × price inside an int64
		return errorf(CodeInvalidPayload, "quantity must be at most %d. Example: {\"item_id\": \"iron_ore\", \"quantity\": 10, \"price_each\": 6}", maxOrderQuantity)
	}
	return nil
}

func (e *Engine) doCreateSellOrder(w *World, p *Player, cmd command) (any, error) {
	if err := checkOrderArgs(cmd.qty, cmd.price); err != nil {
		return nil, err
	}
	b, err := stationHere(w, p, "list orders")
	if err != nil {
		return nil, err
	}
	it, ok := resolveItem(cmd.item)
	if !ok || p.cargo[it.ID] < cmd.qty {
		return nil, errorf(CodeItemNotAvailable, "You have %d %s in your cargo; the order needs %d.", p.cargo[it.ID], cmd.item, cmd.qty)
	}
	docked := e.autoDock(p, b)
	book := b.Market.book(it.ID)
	fills, sold, earned := book.sellAtLeast(cmd.qty, cmd.price)
	listed := cmd.qty - sold
	fee := listingFee(listed, cmd.price)
	if fee > p.credits+earned {
		return nil, errorf(CodeNoCredits, "The listing fee is %d credits; you have %d.", fee, p.credits)
	}
	p.cargo[it.ID] -= cmd.qty
	if p.cargo[it.ID] == 0 {
		delete(p.cargo, it.ID)
	}
	p.credits += earned - fee
	p.creditsEarned += earned
	p.creditsSpent += fee
	if sold > 0 {
		p.trades++
	}
	res := &CreateOrderResult{
		Action: "create_sell_order", Item: it.Name, ItemID: it.ID, Quantity: cmd.qty, PriceEach: cmd.price,
		ListingFee: fee, Fills: fillsOrEmpty(fills), QuantityFilled: sold, QuantityListed: listed, TotalEarned: &earned,
		FromCargo: &cmd.qty, AutoDocked: docked,
	}
	res.Message = fmt.Sprintf("Sold %d %s at once for %d credits.", sold, it.Name, earned)
	if listed > 0 {
		o := e.listOrder(p, b, "sell", it.ID, cmd.price, cmd.qty, sold, fee)
		res.OrderID = o.ID
		res.Message = fmt.Sprintf("Listed %d %s at %d cr each (order %s, fee %d).", listed, it.Name, cmd.price, o.ID, fee)
		if sold > 0 {
			res.Message = fmt.Sprintf("Sold %d at once for %d credits; listed %d at %d cr each (order %s, fee %d).", sold, earned, listed, cmd.price, o.ID, fee)
		}
	}
	return res, nil
}

func (e *Engine) doCreateBuyOrder(w *World, p *Player, cmd command) (any, error) {
	if err := checkOrderArgs(cmd.qty, cmd.price); err != nil {
		return nil, err
	}
	b, err := stationHere(w, p, "place orders")
	if err != nil {
		return nil, err
	}
	it, ok := resolveItem(cmd.item)
	if !ok {
		return nil, errorf(CodeItemNotAvailable, "%s does not trade %q.", b.Name, cmd.item)
	}
	book := b.Market.book(it.ID)
	// Price the instant part first (without changing the book) to check the credits for all of it.
	free := p.ship.CargoMax - p.cargoUsed()
	instant, instantCost := 0, 0
	for _, l := range book.Asks {
		if l.Price > cmd.price || instant == min(cmd.qty, free) {
			break
		}
		n := min(min(cmd.qty, free)-instant, l.Qty)
		instant += n
		instantCost += n * l.Price
	}
	listed := cmd.qty - instant
	fee := listingFee(listed, cmd.price)
	escrow := listed * cmd.price
	if need := instantCost + escrow + fee; need > p.credits {
		return nil, errorf(CodeNoCredits, "The order needs %d credits (%d escrowed, %d listing fee, %d for instant fills); you have %d.", need, escrow, fee, instantCost, p.credits)
	}
	docked := e.autoDock(p, b)
	fills, bought, cost := book.buyAtMost(instant, cmd.price)
	p.cargo[it.ID] += bought
	p.credits -= cost + escrow + fee
	p.creditsSpent += cost + fee
	if bought > 0 {
		p.trades++
	}
	res := &CreateOrderResult{
		Action: "create_buy_order", Item: it.Name, ItemID: it.ID, Quantity: cmd.qty, PriceEach: cmd.price,
		ListingFee: fee, Fills: fillsOrEmpty(fills), QuantityFilled: bought, QuantityListed: listed,
		TotalEscrowed: &escrow, TotalSpent: &cost, DeliveredToCargo: &bought, AutoDocked: docked,
	}
	res.Message = fmt.Sprintf("Bought %d %s at once for %d credits.", bought, it.Name, cost)
	if listed > 0 {
		o := e.listOrder(p, b, "buy", it.ID, cmd.price, cmd.qty, bought, fee)
		res.OrderID = o.ID
		res.Message = fmt.Sprintf("Buy order %s for %d %s at %d cr each: %d credits escrowed, fee %d.", o.ID, listed, it.Name, cmd.price, escrow, fee)
		if bought > 0 {
			res.Message = fmt.Sprintf("Bought %d at once for %d credits; %s", bought, cost, res.Message)
		}
	}
	return res, nil
}

func fillsOrEmpty(f []Fill) []Fill {
	if f == nil {
		return []Fill{}
	}
	return f
}

func (e *Engine) listOrder(p *Player, b *Base, side, item string, price, qty, filled, fee int) *playerOrder {
	o := &playerOrder{
		ID: e.hexID(8), BaseID: b.ID, Side: side, ItemID: item, Price: price, Quantity: qty, Filled: filled,
		ListingFee: fee, CreatedAt: e.now(),
	}
	p.orders = append(p.orders, o)
	return o
}

func (e *Engine) doCancelOrder(w *World, p *Player, id string) (any, error) {
	if id == "" {
		return nil, errorf(CodeInvalidPayload, "Requires 'order_id' (string), or 'all' for every order at this station. Example: {\"order_id\": \"<order_id>\"}")
	}
	var cancel []*playerOrder
	if id == "all" || id == "*" {
		poi := w.poi(p.poiID)
		if poi == nil || poi.Base == nil {
			return nil, errorf(CodeNotDocked, "order_id 'all' cancels your orders at the station you are at; you are at no station.")
		}
		for _, o := range p.orders {
			if o.BaseID == poi.Base.ID {
				cancel = append(cancel, o)
			}
		}
	} else if i := slices.IndexFunc(p.orders, func(o *playerOrder) bool { return o.ID == id }); i >= 0 {
		cancel = append(cancel, p.orders[i])
	} else {
		return nil, errorf(CodeOrderNotFound, "You have no order %q. view_orders lists yours. Example: {\"order_id\": \"<order_id>\"}", id)
	}
	// Returned items go to the hold: all of them must fit.
	items := 0
	for _, o := range cancel {
		if o.Side == "sell" {
			items += o.remaining()
			if p.dockedAt != o.BaseID {
				return nil, errorf(CodeNotDocked, "A sell order's items come back to your cargo hold: dock at the order's station (%s) to cancel it.", o.BaseID)
			}
		}
	}
	if free := p.ship.CargoMax - p.cargoUsed(); items > free {
		return nil, errorf(CodeCargoFull, "Cancelling returns %d items to your hold; you have %d free.", items, free)
	}
	res := &CancelOrderResult{Action: "cancel_order", OrderID: id, DeliveredTo: "cargo"}
	credits := 0
	for _, o := range cancel {
		if o.Side == "sell" {
			p.cargo[o.ItemID] += o.remaining()
			res.ReturnedItems = &ReturnedItems{ItemID: o.ItemID, Quantity: o.remaining()}
		} else {
			credits += o.remaining() * o.Price
		}
	}
	p.credits += credits
	if credits > 0 {
		res.ReturnedCredits = &credits
	}
	p.orders = slices.DeleteFunc(p.orders, func(o *playerOrder) bool { return slices.Contains(cancel, o) })
	res.Message = fmt.Sprintf("Cancelled %d order(s).", len(cancel))
	if credits > 0 {
		res.Message += fmt.Sprintf(" %d credits returned to your wallet.", credits)
	}
	if items > 0 {
		res.Message += fmt.Sprintf(" %d items returned to your cargo.", items)
	}
	return res, nil
}

func (e *Engine) doModifyOrder(p *Player, id string, price int) (any, error) {
	if price < 1 {
		return nil, errorf(CodeInvalidPayload, "new_price must be at least 1. Example: {\"order_id\": \"<order_id>\", \"new_price\": 7}")
	}
	if price > MaxOrderPrice {
		return nil, errorf(CodePriceTooHigh, "new_price %d is above the cap of %d credits per unit.", price, MaxOrderPrice)
	}
	i := slices.IndexFunc(p.orders, func(o *playerOrder) bool { return o.ID == id })
	if i < 0 {
		return nil, errorf(CodeOrderNotFound, "You have no order %q. view_orders lists yours. Example: {\"order_id\": \"<order_id>\", \"new_price\": 7}", id)
	}
	o := p.orders[i]
	old := o.Price
	if o.Side == "buy" {
		diff := (price - old) * o.remaining()
		if diff > p.credits {
			return nil, errorf(CodeNoCredits, "Raising the price escrows %d more credits; you have %d.", diff, p.credits)
		}
		p.credits -= diff
	}
	o.Price = price
	return &ModifyOrderResult{
		Action: "modify_order", OrderID: id, OldPrice: old, NewPrice: price,
		Message: fmt.Sprintf("Order %s repriced from %d to %d cr each.", id, old, price),
	}, nil
}

// ViewOrders answers view_orders: the player's orders at station_id, else at the station it is at.
func (e *Engine) ViewOrders(sid, stationID, orderType, itemID, sortBy string, page, pageSize int) (*ViewOrdersResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	here := ""
	if poi := w.poi(p.poiID); poi != nil && poi.Base != nil {
		here = poi.Base.ID
	}
	var mine []playerOrder
	for _, o := range p.orders {
		mine = append(mine, *o)
	}
	p.mu.Unlock()
	if stationID == "" {
		stationID = here
	}
	if stationID == "" {
		return nil, e.count(p, errorf(CodeNotDocked, "You are at no station. Pass station_id to view your orders elsewhere. Example: {\"station_id\": \"%s\"}", HomeBase))
	}
	loc := w.baseLocation(stationID)
	if loc == nil {
		return nil, e.count(p, errorf(CodeInvalidPayload, "Unknown station %q. Example: {\"station_id\": \"%s\"}", stationID, HomeBase))
	}
	if sortBy == "" {
		sortBy = "newest"
	}
	if pageSize <= 0 {
		pageSize = 20
	}
	page, pageSize = max(1, page), min(pageSize, 50)
	var sel []playerOrder
	for _, o := range mine {
		if o.BaseID != stationID || (orderType != "" && o.Side != orderType) {
			continue
		}
		if itemID != "" {
			if it, ok := resolveItem(itemID); !ok || it.ID != o.ItemID {
				continue
			}
		}
		sel = append(sel, o)
	}
	slices.SortStableFunc(sel, func(a, b playerOrder) int {
		switch sortBy {
		case "oldest":
			return a.CreatedAt.Compare(b.CreatedAt)
		case "price_asc":
			return cmp.Compare(a.Price, b.Price)
		case "price_desc":
			return cmp.Compare(b.Price, a.Price)
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	res := &ViewOrdersResult{
		Action: "view_orders", Base: loc.Base.Name, Scope: "personal", SortBy: sortBy, Page: page, PageSize: pageSize,
		Total: len(sel), Orders: []OrderView{}, OrderType: orderType, ItemFilter: itemID,
	}
	res.TotalPages = max(1, (len(sel)+pageSize-1)/pageSize)
	for i := (page - 1) * pageSize; i < len(sel) && i < page*pageSize; i++ {
		o := sel[i]
		it, _ := itemByID(o.ItemID)
		res.Orders = append(res.Orders, OrderView{
			OrderID: o.ID, OrderType: o.Side, Side: o.Side, ItemID: o.ItemID, ItemName: it.Name, PriceEach: o.Price,
			Quantity: o.Quantity, FilledQuantity: o.Filled, Remaining: o.remaining(), ListingFee: o.ListingFee,
			CreatedAt: timestamp(o.CreatedAt),
		})
	}
	res.HasMore = page < res.TotalPages
	res.Hint = "cancel_order returns an order's escrow; modify_order reprices it."
	return res, nil
}

// EstimatePurchase answers estimate_purchase: what buying quantity of item at this station would cost.
func (e *Engine) EstimatePurchase(sid, item string, qty int) (*EstimateResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	var b *Base
	if p.poiID == "" {
		err = errorf(CodeInTransit, "You are in transit; markets are at stations.")
	} else {
		b, err = stationHere(w, p, "estimate purchases")
	}
	p.mu.Unlock()
	if err != nil {
		return nil, e.count(p, err)
	}
	if qty < 1 {
		return nil, e.count(p, errorf(CodeInvalidPayload, "quantity must be at least 1. Example: {\"item_id\": \"iron_ore\", \"quantity\": 10}"))
	}
	it, ok := resolveItem(item)
	if !ok {
		return nil, e.count(p, errorf(CodeItemNotAvailable, "%s does not trade %q.", b.Name, item))
	}
	res := &EstimateResult{Action: "estimate_purchase", Item: it.Name, QuantityRequested: qty, Fills: []Fill{}}
	e.mu.RLock()
	left := qty
	for _, l := range b.Market.book(it.ID).Asks {
		res.Available += l.Qty
		if n := min(left, l.Qty); n > 0 {
			res.Fills = append(res.Fills, Fill{Quantity: n, PriceEach: l.Price, Subtotal: n * l.Price})
			res.TotalCost += n * l.Price
			left -= n
		}
	}
	e.mu.RUnlock()
	res.Unfilled = left
	res.Message = fmt.Sprintf("%d %s would cost %d credits here.", qty-left, it.Name, res.TotalCost)
	if left > 0 {
		res.Message += fmt.Sprintf(" %d cannot be filled right now.", left)
	}
	return res, nil
}

// AnalyzeMarket answers analyze_market: how this station's bids compare with the ores' base values and with the
// stations the player has visited.
func (e *Engine) AnalyzeMarket(sid string) (*AnalyzeResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	var b *Base
	if p.poiID == "" {
		err = errorf(CodeInTransit, "You are in transit; markets are at stations.")
	} else {
		b, err = stationHere(w, p, "analyze its market")
	}
	visited := make([]string, 0, len(p.visited))
	for s := range p.visited {
		visited = append(visited, s)
	}
	p.mu.Unlock()
	if err != nil {
		return nil, e.count(p, err)
	}
	slices.Sort(visited)
	res := &AnalyzeResult{Station: b.Name, SkillLevel: 0, Insights: []Insight{}}
	e.mu.RLock()
	for _, it := range itemCatalog {
		here, _ := best(b.Market.book(it.ID).Bids)
		switch {
		case here >= it.GuidePrice:
			res.Insights = append(res.Insights, Insight{Category: "demand", Item: it.Name, ItemID: it.ID, Priority: 2,
				Message: fmt.Sprintf("%s sells well here: %d cr (base value %d).", it.Name, here, it.GuidePrice)})
		case here > 0:
			res.Insights = append(res.Insights, Insight{Category: "price", Item: it.Name, ItemID: it.ID, Priority: 3,
				Message: fmt.Sprintf("%s bids are low here: %d cr (base value %d).", it.Name, here, it.GuidePrice)})
		}
		bestElsewhere, where := 0, ""
		for _, sysID := range visited {
			for _, poi := range w.system(sysID).POIs {
				if poi.Base == nil || poi.Base.Market == nil || poi.Base == b {
					continue
				}
				if pr, _ := best(poi.Base.Market.book(it.ID).Bids); pr > bestElsewhere {
					bestElsewhere, where = pr, poi.Base.Name
				}
			}
		}
		if bestElsewhere > here {
			res.Insights = append(res.Insights, Insight{Category: "arbitrage", Item: it.Name, ItemID: it.ID, Priority: 1,
				Message: fmt.Sprintf("%s pays %d cr at %s against %d here.", it.Name, bestElsewhere, where, here)})
		}
	}
	e.mu.RUnlock()
	slices.SortStableFunc(res.Insights, func(a, b Insight) int { return cmp.Compare(a.Priority, b.Priority) })
	res.Message = fmt.Sprintf("%d insights at %s (trading skill %d; stations you have visited only).", len(res.Insights), b.Name, res.SkillLevel)
	return res, nil
}
