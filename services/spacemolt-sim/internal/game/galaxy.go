package game

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Empires a player may register with.
var empires = []string{"solarian", "voidborn", "crimson", "nebula", "outerrim"}

func validEmpire(e string) bool { return slices.Contains(empires, e) }

// Empires lists the empires a player may register with.
func Empires() []string { return slices.Clone(empires) }

var capitalBases = map[string][2]string{
	"solarian": {"confederacy_central_command", "Confederacy Central Command"},
	"voidborn": {"void_nexus", "Void Nexus"},
	"crimson":  {"crimson_citadel", "Crimson Citadel"},
	"nebula":   {"nebula_concord", "Nebula Concord"},
	"outerrim": {"rim_freeport", "Rim Freeport"},
}

// starNames are the non-home systems; the seed decides where each one lies.
var starNames = []string{
	"alpha_centauri", "barnards_star", "wolf_359", "lalande", "sirius", "luyten", "ross_128",
	"epsilon_eridani", "procyon", "tau_ceti", "kapteyn", "vega", "altair", "fomalhaut", "deneb",
	"rigel", "arcturus", "capella", "aldebaran", "betelgeuse", "polaris", "antares", "spica",
	"regulus", "castor", "pollux", "achernar", "canopus", "mira", "algol", "thuban", "mizar",
	"alcor", "bellatrix", "sadr", "zeta_reticuli", "gliese_581", "trappist", "kepler_442",
}

// Home POIs every galaxy has, whatever the seed.
const (
	HomeSystem  = "sol"
	HomeStation = "sol_central"
	HomeBelt    = "main_belt"
	HomeBase    = "confederacy_central_command"
	// StrippedBelt is mined out and never refills: mining there fails deposit_too_sparse.
	StrippedBelt = "kuiper_belt"
)

func displayName(id string) string {
	parts := strings.Split(id, "_")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, " ")
}

// newWorld generates the galaxy for a seed. Every random draw comes from one
// PCG stream consumed in a fixed order, so a seed always yields the same world.
func newWorld(seed int64) *World {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	names := slices.Clone(starNames)
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })

	systems := []*System{{ID: HomeSystem, Name: "Sol", Empire: "solarian", Security: "high"}}
	for _, n := range names {
		var x, y float64
		for range 200 {
			r := 80 + rng.Float64()*620
			a := rng.Float64() * 2 * math.Pi
			x, y = math.Round(r*math.Cos(a)), math.Round(r*math.Sin(a))
			if minDistance(systems, x, y) >= 55 {
				break
			}
		}
		systems = append(systems, &System{ID: n, Name: displayName(n), X: x, Y: y})
	}

	capitals := pickCapitals(systems)
	assignEmpires(systems, capitals)
	connect(systems)

	w := &World{systemBy: map[string]*System{}, poiBy: map[string]*POI{}}
	for _, s := range systems {
		w.systemBy[s.ID] = s
		if s.ID == HomeSystem {
			s.POIs = solPOIs()
		} else {
			s.POIs = generatePOIs(rng, s, capitals[s.ID])
		}
		for _, p := range s.POIs {
			w.poiBy[p.ID] = p
		}
	}
	ensureRareOres(systems)
	for _, s := range systems {
		for _, p := range s.POIs {
			if p.Base != nil {
				p.Base.Market = newMarket(rng, s.ID == HomeSystem, capitals[s.ID] != "" || s.ID == HomeSystem)
			}
		}
	}
	w.systems = slices.SortedFunc(slices.Values(systems), func(a, b *System) int { return cmp.Compare(a.ID, b.ID) })
	return w
}

func minDistance(systems []*System, x, y float64) float64 {
	d := math.Inf(1)
	for _, s := range systems {
		d = min(d, math.Hypot(s.X-x, s.Y-y))
	}
	return d
}

func dist(a, b *System) int {
	return max(1, int(math.Round(math.Hypot(a.X-b.X, a.Y-b.Y))))
}

// pickCapitals places the four other empires at the outermost system of each
// quadrant; it returns system id → empire.
func pickCapitals(systems []*System) map[string]string {
	out := map[string]string{HomeSystem: "solarian"}
	for q, emp := range empires[1:] {
		var bestSys *System
		for _, s := range systems[1:] {
			if out[s.ID] != "" {
				continue
			}
			a := math.Atan2(s.Y, s.X)
			if a < 0 {
				a += 2 * math.Pi
			}
			if int(a/(math.Pi/2)) != q {
				continue
			}
			if bestSys == nil || math.Hypot(s.X, s.Y) > math.Hypot(bestSys.X, bestSys.Y) {
				bestSys = s
			}
		}
		if bestSys == nil { // empty quadrant: fall back to the first free system
			for _, s := range systems[1:] {
				if out[s.ID] == "" {
					bestSys = s
					break
				}
			}
		}
		out[bestSys.ID] = emp
	}
	return out
}

func assignEmpires(systems []*System, capitals map[string]string) {
	var caps []*System
	for _, s := range systems {
		if capitals[s.ID] != "" {
			caps = append(caps, s)
		}
	}
	for _, s := range systems {
		nearest, d := caps[0], dist(s, caps[0])
		for _, c := range caps[1:] {
			if dc := dist(s, c); dc < d {
				nearest, d = c, dc
			}
		}
		if s == nearest {
			d = 0
		}
		switch {
		case d == 0:
			s.Empire, s.Security = capitals[nearest.ID], "high"
		case d < 140:
			s.Empire, s.Security = capitals[nearest.ID], "medium"
		case d < 280:
			s.Empire, s.Security = capitals[nearest.ID], "low"
		default:
			s.Empire, s.Security = "", "lawless"
		}
	}
}

// connect builds a minimum spanning tree (so every system is reachable) and
// adds links to each system's two nearest neighbours for loops.
func connect(systems []*System) {
	linked := map[[2]int]bool{}
	link := func(i, j int) {
		if i > j {
			i, j = j, i
		}
		if i == j || linked[[2]int{i, j}] {
			return
		}
		linked[[2]int{i, j}] = true
		d := dist(systems[i], systems[j])
		systems[i].Connections = append(systems[i].Connections, Connection{SystemID: systems[j].ID, Distance: d})
		systems[j].Connections = append(systems[j].Connections, Connection{SystemID: systems[i].ID, Distance: d})
	}
	n := len(systems)
	in := make([]bool, n)
	in[0] = true
	for range n - 1 {
		bi, bj, bd := -1, -1, math.MaxInt
		for i := range n {
			if !in[i] {
				continue
			}
			for j := range n {
				if !in[j] {
					if d := dist(systems[i], systems[j]); d < bd {
						bi, bj, bd = i, j, d
					}
				}
			}
		}
		in[bj] = true
		link(bi, bj)
	}
	for i := range n {
		order := make([]int, 0, n-1)
		for j := range n {
			if j != i {
				order = append(order, j)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Compare(dist(systems[i], systems[a]), dist(systems[i], systems[b]))
		})
		for _, j := range order[:2] {
			if dist(systems[i], systems[j]) <= 200 {
				link(i, j)
			}
		}
	}
	for _, s := range systems {
		slices.SortFunc(s.Connections, func(a, b Connection) int { return cmp.Compare(a.SystemID, b.SystemID) })
	}
}

func solPOIs() []*POI {
	return []*POI{
		{
			ID: HomeStation, SystemID: HomeSystem, Name: "Sol Central", Type: POIStation, X: 1, Y: 0,
			Description: "The Confederacy's capital station: market, fuel and repairs.",
			Base:        &Base{ID: HomeBase, Name: "Confederacy Central Command", FuelPrice: 2},
		},
		{
			ID: HomeBelt, SystemID: HomeSystem, Name: "Main Belt", Type: POIBelt, X: 3, Y: 0,
			Description: "Sol's asteroid belt: iron, copper and nickel, with some titanium.",
			// The live starter belt's ores (recorded real play mined all four here).
			Deposits: []*Deposit{
				{ResourceID: "iron_ore", Richness: 50, Remaining: 6000, Max: 6000, RegenPerTick: 12},
				{ResourceID: "copper_ore", Richness: 25, Remaining: 3000, Max: 3000, RegenPerTick: 6},
				{ResourceID: "nickel_ore", Richness: 17, Remaining: 2500, Max: 2500, RegenPerTick: 5},
				{ResourceID: "titanium_ore", Richness: 8, Remaining: 900, Max: 900, RegenPerTick: 2},
			},
		},
		{
			ID: StrippedBelt, SystemID: HomeSystem, Name: "Kuiper Belt", Type: POIBelt, X: 1, Y: -4,
			Description: "Stripped bare by generations of miners; nothing here refills.",
			Deposits: []*Deposit{
				{ResourceID: "iron_ore", Richness: 50, Remaining: 0, Max: 500},
				{ResourceID: "silicon_ore", Richness: 50, Remaining: 0, Max: 300},
			},
		},
	}
}

func generatePOIs(rng *rand.Rand, s *System, capitalOf string) []*POI {
	at := func(rmin, rmax float64) (float64, float64) {
		r := rmin + rng.Float64()*(rmax-rmin)
		a := rng.Float64() * 2 * math.Pi
		return math.Round(r*math.Cos(a)*10) / 10, math.Round(r*math.Sin(a)*10) / 10
	}
	var pois []*POI
	if capitalOf != "" || rng.Float64() < 0.35 {
		x, y := at(0.5, 1.5)
		base := &Base{ID: s.ID + "_trade_post", Name: s.Name + " Trade Post", FuelPrice: 2 + rng.IntN(3)}
		if capitalOf != "" {
			base.ID, base.Name = capitalBases[capitalOf][0], capitalBases[capitalOf][1]
		}
		pois = append(pois, &POI{
			ID: s.ID + "_station", SystemID: s.ID, Name: s.Name + " Station", Type: POIStation, X: x, Y: y,
			Description: "A station with a market and fuel.", Base: base,
		})
	}
	belts := 1 + rng.IntN(2)
	for i := range belts {
		id, name := s.ID+"_belt", s.Name+" Belt"
		if i == 1 {
			id, name = s.ID+"_outer_belt", s.Name+" Outer Belt"
		}
		x, y := at(2, 6)
		pois = append(pois, &POI{
			ID: id, SystemID: s.ID, Name: name, Type: POIBelt, X: x, Y: y,
			Description: "An asteroid belt.", Deposits: beltDeposits(rng, math.Hypot(s.X, s.Y)),
		})
	}
	for i := range rng.IntN(3) {
		suffix := []string{"prime", "secundus"}[i]
		x, y := at(1, 8)
		pois = append(pois, &POI{
			ID: s.ID + "_" + suffix, SystemID: s.ID, Name: s.Name + " " + displayName(suffix), Type: POIPlanet,
			X: x, Y: y, Description: "A planet. Nothing to mine from orbit.",
		})
	}
	return pois
}

// beltDeposits picks ores by distance from Sol: common ores near home, rare
// ones at the frontier.
func beltDeposits(rng *rand.Rand, fromSol float64) []*Deposit {
	var pool []string
	switch {
	case fromSol < 250:
		pool = []string{"iron_ore", "copper_ore", "silicon_ore"}
	case fromSol < 450:
		pool = []string{"iron_ore", "silicon_ore", "titanium_ore"}
	default:
		pool = []string{"silicon_ore", "titanium_ore", "gold_ore"}
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	var out []*Deposit
	for _, res := range pool[:2] {
		out = append(out, newDeposit(rng, res))
	}
	slices.SortFunc(out, func(a, b *Deposit) int { return cmp.Compare(a.ResourceID, b.ResourceID) })
	return out
}

func newDeposit(rng *rand.Rand, res string) *Deposit {
	it, _ := itemByID(res)
	size := 1500 + rng.IntN(2500)
	if it.GuidePrice >= 25 {
		size /= 3
	}
	return &Deposit{ResourceID: res, Richness: 20 + rng.IntN(61), Remaining: size, Max: size, RegenPerTick: max(1, size/500)}
}

// ensureRareOres guarantees silicon, titanium and gold exist somewhere in the
// galaxy whatever the seed, adding them to the belts farthest from Sol.
func ensureRareOres(systems []*System) {
	var belts []*POI
	have := map[string]bool{}
	for _, s := range systems[1:] {
		for _, p := range s.POIs {
			if p.Type != POIBelt {
				continue
			}
			belts = append(belts, p)
			for _, d := range p.Deposits {
				have[d.ResourceID] = true
			}
		}
	}
	slices.SortStableFunc(belts, func(a, b *POI) int {
		sa, sb := systemOf(systems, a.SystemID), systemOf(systems, b.SystemID)
		return cmp.Compare(math.Hypot(sb.X, sb.Y), math.Hypot(sa.X, sa.Y))
	})
	i := 0
	for _, res := range []string{"gold_ore", "titanium_ore", "silicon_ore"} {
		if have[res] || len(belts) == 0 {
			continue
		}
		b := belts[i%len(belts)]
		b.Deposits = append(b.Deposits, &Deposit{ResourceID: res, Richness: 30, Remaining: 800, Max: 800, RegenPerTick: 2})
		i++
	}
}

func systemOf(systems []*System, id string) *System {
	for _, s := range systems {
		if s.ID == id {
			return s
		}
	}
	return nil
}

var bookDepth = map[string]int{"iron_ore": 80, "copper_ore": 60, "nickel_ore": 60, "silicon_ore": 50, "titanium_ore": 30, "gold_ore": 20}

func newMarket(rng *rand.Rand, home, capital bool) *Market {
	m := &Market{}
	for _, it := range itemCatalog {
		factor := 1.0
		if !home {
			factor = 0.85 + rng.Float64()*0.35
		}
		depth := bookDepth[it.ID]
		if capital {
			depth *= 2
		}
		bidTop := max(1, int(math.Round(float64(it.GuidePrice)*factor)))
		askTop := int(math.Round(float64(it.GuidePrice)*factor*1.5)) + 1
		m.books = append(m.books, &Book{
			ItemID: it.ID,
			Bids:   newLadder(bidTop, -0.1, depth),
			Asks:   newLadder(askTop, 0.1, max(5, depth/2)),
		})
	}
	slices.SortFunc(m.books, func(a, b *Book) int { return cmp.Compare(a.ItemID, b.ItemID) })
	return m
}
