package game

import "time"

// TickStats measures how well the tick clock keeps up.
type TickStats struct {
	Ticks         int64
	OnTime        int64 // resolved before the next tick was due
	Late          int64
	Missed        int64 // ticks the clock skipped because a resolution ran over
	Mutations     int64
	LastMutations int
	MaxMutations  int
	TotalResolve  time.Duration
	MaxResolve    time.Duration
	MaxLag        time.Duration // worst delay between a tick being due and starting
	TotalHold     time.Duration // time under the world write lock (reads wait meanwhile)
	MaxHold       time.Duration
	MaxLockWait   time.Duration // waiting for in-flight reads to release the world lock
}

// PlayerStats is one account's score.
type PlayerStats struct {
	Username      string `json:"username"`
	PlayerID      string `json:"player_id"`
	Empire        string `json:"empire"`
	Credits       int    `json:"credits"`
	CreditsEarned int    `json:"credits_earned"`
	OreMined      int    `json:"ore_mined"`
	Calls         int64  `json:"calls"`
	Errors        int64  `json:"errors"`
	Ticks         int    `json:"ticks"`
	SystemID      string `json:"current_system"`
	POIID         string `json:"current_poi"`
}

// Totals sums PlayerStats; calls and errors include those no account could be
// charged for (no or bad session).
type Totals struct {
	Players       int   `json:"players"`
	Credits       int   `json:"credits"`
	CreditsEarned int   `json:"credits_earned"`
	OreMined      int   `json:"ore_mined"`
	Calls         int64 `json:"calls"`
	Errors        int64 `json:"errors"`
	Ticks         int   `json:"ticks"`
}

// TickStatsView is TickStats for JSON.
type TickStatsView struct {
	Resolved        int64   `json:"resolved"`
	OnTime          int64   `json:"on_time"`
	Late            int64   `json:"late"`
	Missed          int64   `json:"missed"`
	Mutations       int64   `json:"mutations"`
	LastMutations   int     `json:"last_mutations"`
	MaxMutations    int     `json:"max_mutations"`
	AvgResolveMs    float64 `json:"avg_resolve_ms"`
	MaxResolveMs    float64 `json:"max_resolve_ms"`
	MaxLagMs        float64 `json:"max_lag_ms"`
	AvgHoldMs       float64 `json:"avg_world_lock_hold_ms"`
	MaxHoldMs       float64 `json:"max_world_lock_hold_ms"`
	MaxLockWaitMs   float64 `json:"max_world_lock_wait_ms"`
	AvgMutationsPer float64 `json:"avg_mutations_per_tick"`
}

// Stats is the admin scoreboard.
type Stats struct {
	CurrentTick  int64         `json:"current_tick"`
	TickInterval string        `json:"tick_interval"`
	Seed         int64         `json:"seed"`
	Players      []PlayerStats `json:"players"`
	Totals       Totals        `json:"totals"`
	Ticks        TickStatsView `json:"tick_stats"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Stats returns per-player scores, totals and tick timing.
func (e *Engine) Stats() Stats {
	out := Stats{TickInterval: e.cfg.Tick.String(), Seed: e.cfg.Seed, Players: []PlayerStats{}}
	e.accMu.RLock()
	out.CurrentTick = e.tick.Load()
	for _, p := range e.players {
		p.mu.Lock()
		ps := PlayerStats{
			Username: p.Username, PlayerID: p.ID, Empire: p.Empire, Credits: p.credits,
			CreditsEarned: p.creditsEarned, OreMined: p.oreMined, Calls: p.calls.Load(), Errors: p.errors.Load(),
			Ticks: p.ticks, SystemID: p.systemID, POIID: p.poiID,
		}
		p.mu.Unlock()
		out.Players = append(out.Players, ps)
		t := &out.Totals
		t.Players++
		t.Credits += ps.Credits
		t.CreditsEarned += ps.CreditsEarned
		t.OreMined += ps.OreMined
		t.Calls += ps.Calls
		t.Errors += ps.Errors
		t.Ticks += ps.Ticks
	}
	e.accMu.RUnlock()
	out.Totals.Calls += e.anonCalls.Load()
	out.Totals.Errors += e.anonErrors.Load()

	e.statsMu.Lock()
	s := e.tickStats
	e.statsMu.Unlock()
	out.Ticks = TickStatsView{
		Resolved: s.Ticks, OnTime: s.OnTime, Late: s.Late, Missed: s.Missed, Mutations: s.Mutations,
		LastMutations: s.LastMutations, MaxMutations: s.MaxMutations,
		MaxResolveMs: ms(s.MaxResolve), MaxLagMs: ms(s.MaxLag), MaxHoldMs: ms(s.MaxHold), MaxLockWaitMs: ms(s.MaxLockWait),
	}
	if s.Ticks > 0 {
		out.Ticks.AvgResolveMs = ms(s.TotalResolve) / float64(s.Ticks)
		out.Ticks.AvgHoldMs = ms(s.TotalHold) / float64(s.Ticks)
		out.Ticks.AvgMutationsPer = float64(s.Mutations) / float64(s.Ticks)
	}
	return out
}
