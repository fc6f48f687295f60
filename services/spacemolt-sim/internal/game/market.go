package game

import "math"

// Market is a station's order book per item. The station's buy orders (bids)
// are what players sell into; its sell orders (asks) are what players buy from.
type Market struct {
	books []*Book // sorted by item id
}

// Book holds the price ladders of one item.
type Book struct {
	ItemID string
	Bids   []*Level // best (highest) first
	Asks   []*Level // best (lowest) first
}

// Level is one price level of a ladder. Filled quantity refills by Regen every
// tick, so prices fall while players dump ore and recover when they stop.
type Level struct {
	Price int
	Qty   int
	Max   int
	Regen int
}

// Fill is one executed slice of a market order.
type Fill struct {
	Quantity  int `json:"quantity"`
	PriceEach int `json:"price_each"`
	Subtotal  int `json:"subtotal"`
}

const ladderLevels = 6

// newLadder builds levels starting at top, each step 10% further from it.
func newLadder(top int, step float64, depth int) []*Level {
	out := make([]*Level, 0, ladderLevels)
	for k := range ladderLevels {
		p := max(1, int(math.Round(float64(top)*(1+step*float64(k)))))
		out = append(out, &Level{Price: p, Qty: depth, Max: depth, Regen: max(1, depth/25)})
	}
	return out
}

func (m *Market) book(itemID string) *Book {
	for _, b := range m.books {
		if b.ItemID == itemID {
			return b
		}
	}
	return nil
}

func best(levels []*Level) (price, volume int) {
	for _, l := range levels {
		if l.Qty > 0 && price == 0 {
			price = l.Price
		}
		volume += l.Qty
	}
	return price, volume
}

// sellInto walks the bids from the best price down and fills up to qty.
func (b *Book) sellInto(qty int) (fills []Fill, sold, earned int) {
	for _, l := range b.Bids {
		if qty == 0 {
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

// quoteBuy prices qty units against the asks without changing the book.
func (b *Book) quoteBuy(qty int) (cost int, ok bool) {
	for _, l := range b.Asks {
		n := min(qty, l.Qty)
		cost += n * l.Price
		qty -= n
		if qty == 0 {
			return cost, true
		}
	}
	return cost, false
}

// buyFrom takes qty units from the asks; the caller has quoted it first.
func (b *Book) buyFrom(qty int) (fills []Fill, cost int) {
	for _, l := range b.Asks {
		if qty == 0 {
			break
		}
		n := min(qty, l.Qty)
		if n == 0 {
			continue
		}
		l.Qty -= n
		qty -= n
		cost += n * l.Price
		fills = append(fills, Fill{Quantity: n, PriceEach: l.Price, Subtotal: n * l.Price})
	}
	return fills, cost
}

func (m *Market) recover() {
	for _, b := range m.books {
		for _, l := range b.Bids {
			l.Qty = min(l.Max, l.Qty+l.Regen)
		}
		for _, l := range b.Asks {
			l.Qty = min(l.Max, l.Qty+l.Regen)
		}
	}
}
