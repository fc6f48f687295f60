package game

import (
	"math"
	"slices"
)

// Item is a tradeable good. Only ores exist in the simulator; ids, names and base values are the live game's.
type Item struct {
	ID         string
	Name       string
	GuidePrice int
}

// itemCatalog follows SpaceMolt's ore guide prices.
var itemCatalog = [...]Item{
	{ID: "iron_ore", Name: "Iron Ore", GuidePrice: 5},
	{ID: "copper_ore", Name: "Copper Ore", GuidePrice: 8},
	{ID: "silicon_ore", Name: "Silicon Ore", GuidePrice: 10},
	{ID: "titanium_ore", Name: "Titanium Ore", GuidePrice: 25},
	{ID: "gold_ore", Name: "Gold Ore", GuidePrice: 45},
	// Last so the ores before it keep their catalog index (views and saved markets follow this order).
	{ID: "nickel_ore", Name: "Nickel Ore", GuidePrice: 7},
}

func itemByID(id string) (Item, bool) {
	for _, it := range itemCatalog {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

// System is a star system: a node of the jump graph.
type System struct {
	ID          string
	Name        string
	Empire      string
	Security    string
	X, Y        float64
	Connections []Connection // sorted by system id
	POIs        []*POI       // arrival POI first
}

// Connection is an edge of the jump graph; Distance is in light years.
type Connection struct {
	SystemID string
	Distance int
}

// POI types.
const (
	POIStation = "station"
	POIBelt    = "asteroid_belt"
	POIPlanet  = "planet"
)

// POI is a point of interest inside a system; travel moves between them.
type POI struct {
	ID          string
	SystemID    string
	Name        string
	Type        string
	Description string
	X, Y        float64 // AU inside the system
	Base        *Base
	Deposits    []*Deposit
}

// Deposit is one minable resource at a belt. It depletes when mined and
// regains RegenPerTick units every tick up to Max.
type Deposit struct {
	ResourceID   string
	Richness     int // relative weight when a mining roll picks a resource
	Remaining    int
	Max          int
	RegenPerTick int
}

// Base is a dockable station with services.
type Base struct {
	ID        string
	Name      string
	FuelPrice int // credits per unit of fuel
	Market    *Market
}

func (b *Base) services() []string {
	s := []string{"fuel", "repair"}
	if b.Market != nil {
		s = append(s, "market")
	}
	slices.Sort(s)
	return s
}

// World is the galaxy. Its layout (systems, links, POIs, bases) never changes
// after generation and is read without locks; Deposit.Remaining and the
// market levels change every tick and are guarded by Engine.mu.
type World struct {
	systems  []*System // sorted by id
	systemBy map[string]*System
	poiBy    map[string]*POI
}

func (w *World) system(id string) *System { return w.systemBy[id] }
func (w *World) poi(id string) *POI       { return w.poiBy[id] }

func (s *System) connection(to string) (Connection, bool) {
	for _, c := range s.Connections {
		if c.SystemID == to {
			return c, true
		}
	}
	return Connection{}, false
}

// arrivalPOI is where a jump into the system ends.
func (s *System) arrivalPOI() *POI { return s.POIs[0] }

func poiDistance(a, b *POI) int {
	d := math.Hypot(a.X-b.X, a.Y-b.Y)
	return max(1, int(math.Ceil(d-1e-9)))
}

// travelFuel is SpaceMolt's travel formula: ceil(speed × distance × 0.07), min 1.
// Jumps use the same formula over light years.
func travelFuel(speed, distance int) int {
	return max(1, int(math.Ceil(float64(speed*distance)*0.07-1e-9)))
}

// travelTicks is ceil(distance / speed), min 1.
func travelTicks(speed, distance int) int {
	return max(1, (distance+speed-1)/speed)
}

// jumpTicks is max(1, 7 − speed).
func jumpTicks(speed int) int { return max(1, 7-speed) }

// upkeep refills deposits and market orders; called once per tick.
func (w *World) upkeep() {
	for _, sys := range w.systems {
		for _, p := range sys.POIs {
			for _, d := range p.Deposits {
				d.Remaining = min(d.Max, d.Remaining+d.RegenPerTick)
			}
			if p.Base != nil && p.Base.Market != nil {
				p.Base.Market.recover()
			}
		}
	}
}

// route finds the fewest-jumps path with BFS; neighbours are visited in id
// order so the answer is deterministic.
func (w *World) route(from, to string) []string {
	if w.systemBy[from] == nil || w.systemBy[to] == nil {
		return nil
	}
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			break
		}
		for _, c := range w.systemBy[cur].Connections {
			if _, seen := prev[c.SystemID]; !seen {
				prev[c.SystemID] = cur
				queue = append(queue, c.SystemID)
			}
		}
	}
	if _, ok := prev[to]; !ok {
		return nil
	}
	var path []string
	for at := to; at != ""; at = prev[at] {
		path = append(path, at)
	}
	slices.Reverse(path)
	return path
}
