package game

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestGalaxyInvariantsAcrossSeeds(t *testing.T) {
	for seed := int64(1); seed <= 25; seed++ {
		w := newWorld(seed)
		if len(w.systems) < 12 {
			t.Fatalf("seed %d: %d systems, want >= 12", seed, len(w.systems))
		}
		sol := w.system(HomeSystem)
		if sol == nil || sol.arrivalPOI().ID != HomeStation {
			t.Fatalf("seed %d: sol must exist with sol_central as arrival POI", seed)
		}
		central := w.poi(HomeStation)
		if central.Base == nil || central.Base.ID != HomeBase || central.Base.Market == nil || central.Base.FuelPrice <= 0 {
			t.Fatalf("seed %d: sol_central must be a station with base %s, market and fuel", seed, HomeBase)
		}
		belt := w.poi(HomeBelt)
		if belt == nil {
			t.Fatalf("seed %d: no main_belt", seed)
		}
		var belted []string
		for _, d := range belt.Deposits {
			belted = append(belted, d.ResourceID)
		}
		if belt.SystemID != HomeSystem || !slices.Equal(belted, []string{"iron_ore", "copper_ore", "nickel_ore", "titanium_ore"}) {
			t.Fatalf("seed %d: main_belt holds %v, want the live starter belt's iron, copper, nickel and titanium", seed, belted)
		}
		ores := map[string]bool{}
		for _, s := range w.systems {
			if len(s.POIs) == 0 {
				t.Fatalf("seed %d: system %s has no POIs", seed, s.ID)
			}
			if w.route(HomeSystem, s.ID) == nil {
				t.Fatalf("seed %d: %s unreachable from sol", seed, s.ID)
			}
			for _, c := range s.Connections {
				back, ok := w.system(c.SystemID).connection(s.ID)
				if !ok || back.Distance != c.Distance {
					t.Fatalf("seed %d: link %s-%s not symmetric", seed, s.ID, c.SystemID)
				}
			}
			for _, p := range s.POIs {
				if w.poi(p.ID) != p || p.SystemID != s.ID {
					t.Fatalf("seed %d: POI index broken for %s", seed, p.ID)
				}
				if s.ID == HomeSystem {
					continue
				}
				for _, d := range p.Deposits {
					ores[d.ResourceID] = true
				}
			}
		}
		for _, ore := range []string{"silicon_ore", "titanium_ore", "gold_ore"} {
			if !ores[ore] {
				t.Fatalf("seed %d: no belt outside sol has %s", seed, ore)
			}
		}
	}
}

// snapshot renders the generated galaxy so two worlds can be compared.
func snapshot(t *testing.T, w *World) string {
	t.Helper()
	type poi struct {
		P        POI
		Base     *Base
		Deposits []Deposit
		Books    []Book
	}
	var out []any
	for _, s := range w.systems {
		out = append(out, s.ID, s.Empire, s.Security, s.X, s.Y, s.Connections)
		for _, p := range s.POIs {
			v := poi{P: *p, Base: p.Base}
			for _, d := range p.Deposits {
				v.Deposits = append(v.Deposits, *d)
			}
			if p.Base != nil {
				for _, b := range p.Base.Market.books {
					v.Books = append(v.Books, *b)
				}
			}
			v.P.Deposits, v.P.Base = nil, nil
			out = append(out, v)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGalaxyIsDeterministicPerSeed(t *testing.T) {
	a, b, c := snapshot(t, newWorld(7)), snapshot(t, newWorld(7)), snapshot(t, newWorld(8))
	if a != b {
		t.Fatal("same seed produced different galaxies")
	}
	if a == c {
		t.Fatal("different seeds produced the same galaxy")
	}
}

func TestTravelFormulas(t *testing.T) {
	cases := []struct{ speed, dist, fuel, ticks int }{
		{1, 1, 1, 1}, {1, 2, 1, 2}, {1, 14, 1, 14}, {1, 15, 2, 15}, {2, 15, 3, 8}, {1, 100, 7, 100}, {3, 10, 3, 4},
	}
	for _, c := range cases {
		if got := travelFuel(c.speed, c.dist); got != c.fuel {
			t.Errorf("travelFuel(%d,%d) = %d, want %d", c.speed, c.dist, got, c.fuel)
		}
		if got := travelTicks(c.speed, c.dist); got != c.ticks {
			t.Errorf("travelTicks(%d,%d) = %d, want %d", c.speed, c.dist, got, c.ticks)
		}
	}
	for speed, want := range map[int]int{1: 6, 3: 4, 6: 1, 9: 1} {
		if got := jumpTicks(speed); got != want {
			t.Errorf("jumpTicks(%d) = %d, want %d", speed, got, want)
		}
	}
}

func TestSellWalksBidsAndPricesRecover(t *testing.T) {
	b := &Book{ItemID: "iron_ore", Bids: newLadder(10, -0.1, 20)}
	fills, sold, earned := b.sellInto(50)
	want := []Fill{{20, 10, 200}, {20, 9, 180}, {10, 8, 80}}
	if sold != 50 || earned != 20*10+20*9+10*8 || len(fills) != 3 {
		t.Fatalf("sellInto(50) = %v sold %d earned %d", fills, sold, earned)
	}
	for i := range want {
		if fills[i] != want[i] {
			t.Fatalf("fill %d = %v, want %v", i, fills[i], want[i])
		}
	}
	if p, _ := best(b.Bids); p != 8 {
		t.Fatalf("best bid after selling = %d, want 8 (prices drop as orders fill)", p)
	}
	m := &Market{books: []*Book{b}}
	m.recover()
	if p, _ := best(b.Bids); p != 10 {
		t.Fatalf("best bid after one tick of recovery = %d, want 10", p)
	}
	for range 30 {
		m.recover()
	}
	if _, vol := best(b.Bids); vol != ladderLevels*20 {
		t.Fatalf("book volume after recovery = %d, want full %d", vol, ladderLevels*20)
	}
}
