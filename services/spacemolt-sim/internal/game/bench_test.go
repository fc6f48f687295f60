package game

import (
	"fmt"
	"testing"
)

// BenchmarkTick1000Mutations resolves one tick in which 1,000 players each
// have a mutation queued (mine at main_belt; every 10th player sells at
// sol_central instead), the load of a 1,000-player swarm acting every tick.
func BenchmarkTick1000Mutations(b *testing.B) {
	e := New(Config{Seed: 1, MutationsPerMinute: -1})
	var players []*Player
	for i := range 1000 {
		r, err := e.Register(fmt.Sprintf("bench%04d", i), "solarian", "")
		if err != nil {
			b.Fatal(err)
		}
		p := e.byID[r.PlayerID]
		if i%10 != 0 {
			p.poiID, p.dockedAt = HomeBelt, ""
		}
		players = append(players, p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		e.mu.Lock()
		for _, d := range e.w().poi(HomeBelt).Deposits {
			d.Remaining = d.Max
		}
		e.mu.Unlock()
		acts := make([]*action, 0, len(players))
		for i, p := range players {
			cmd := command{name: "mine"}
			if i%10 == 0 {
				p.cargo["iron_ore"] = 5
				cmd = command{name: "sell", item: "iron_ore", qty: 5}
			} else {
				clear(p.cargo)
			}
			a := &action{p: p, gen: p.gen, cmd: cmd, done: make(chan outcome, 1)}
			p.pending = a
			acts = append(acts, a)
		}
		e.qMu.Lock()
		e.queue = acts
		e.qMu.Unlock()
		b.StartTimer()
		rep := e.Tick()
		if rep.Mutations != 1000 {
			b.Fatalf("resolved %d mutations", rep.Mutations)
		}
	}
	b.StopTimer()
	for _, p := range players {
		if p.oreMined == 0 && p.creditsEarned == 0 {
			b.Fatalf("player %s neither mined nor sold", p.Username)
		}
	}
}
