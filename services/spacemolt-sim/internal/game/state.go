package game

import (
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// StateVersion is the layout of State; Restore refuses any other.
const StateVersion = 1

// State is everything a universe needs to continue after a restart: the accounts with their ships, cargo, credits
// and logs, the depletion of deposits and order books, the tick and the id generator. Sessions are not kept: every
// client logs in again, as after any server restart of the live game. The galaxy's layout is not kept either; it
// is regenerated from the seed.
type State struct {
	Version  int            `json:"version"`
	Seed     int64          `json:"seed"`
	Tick     int64          `json:"tick"`
	IDs      []byte         `json:"ids"` // the id generator (ChaCha8), so new ids never repeat restored ones
	Players  []PlayerState  `json:"players"`
	Deposits []DepositState `json:"deposits"`
	Books    []BookState    `json:"books"`
}

// PlayerState is one account. A player caught in transit is stored at its destination: the fuel was paid when it
// left, and the call that waited for the arrival ended with the process.
type PlayerState struct {
	ID            string          `json:"id"`
	Username      string          `json:"username"`
	Empire        string          `json:"empire"`
	PasswordHash  string          `json:"password_sha256"`
	Credits       int             `json:"credits"`
	SystemID      string          `json:"system_id"`
	POIID         string          `json:"poi_id"`
	DockedAt      string          `json:"docked_at,omitempty"`
	Ship          Ship            `json:"ship"`
	Cargo         map[string]int  `json:"cargo,omitempty"`
	Visited       []string        `json:"visited"`
	CreditsEarned int             `json:"credits_earned"`
	CreditsSpent  int             `json:"credits_spent,omitempty"`
	OreMined      int             `json:"ore_mined"`
	Trades        int             `json:"trades_completed,omitempty"`
	Distance      int             `json:"distance_traveled,omitempty"`
	CreatedAt     time.Time       `json:"created_at,omitzero"`
	LastLoginAt   time.Time       `json:"last_login_at,omitzero"`
	LogAt         []time.Time     `json:"log_at,omitempty"`
	Ticks         int             `json:"ticks"`
	MineRolls     uint64          `json:"mine_rolls"`
	Log           []string        `json:"log,omitempty"`
	Notes         []Notification  `json:"notifications,omitempty"`
	NoteSeq       int64           `json:"notification_seq"`
	Calls         int64           `json:"calls"`
	Errors        int64           `json:"errors"`
	Missions      []activeMission `json:"missions,omitempty"`
	MissionsDone  int             `json:"missions_completed,omitempty"`
	Orders        []playerOrder   `json:"orders,omitempty"`
}

// DepositState is how much of one resource a belt has left.
type DepositState struct {
	POIID      string `json:"poi_id"`
	ResourceID string `json:"resource_id"`
	Remaining  int    `json:"remaining"`
}

// BookState is the quantity left at each price level of one item's ladders at one station.
type BookState struct {
	POIID  string `json:"poi_id"`
	ItemID string `json:"item_id"`
	Bids   []int  `json:"bids"`
	Asks   []int  `json:"asks"`
}

// Snapshot copies the universe's lasting state. It may run while the engine ticks: the world lock keeps a tick from
// resolving halfway through the copy.
func (e *Engine) Snapshot() (State, error) {
	e.accMu.RLock()
	defer e.accMu.RUnlock()
	e.mu.RLock()
	defer e.mu.RUnlock()
	e.idMu.Lock()
	ids, err := e.ids.MarshalBinary()
	e.idMu.Unlock()
	if err != nil {
		return State{}, fmt.Errorf("snapshot id generator: %w", err)
	}
	st := State{Version: StateVersion, Seed: e.cfg.Seed, Tick: e.tick.Load(), IDs: ids}
	for _, p := range e.players {
		p.mu.Lock()
		ps := PlayerState{
			ID: p.ID, Username: p.Username, Empire: p.Empire, PasswordHash: hex.EncodeToString(p.passwordHash[:]),
			Credits: p.credits, SystemID: p.systemID, POIID: p.poiID, DockedAt: p.dockedAt, Ship: p.ship,
			Cargo: maps.Clone(p.cargo), Visited: slices.Sorted(maps.Keys(p.visited)),
			CreditsEarned: p.creditsEarned, OreMined: p.oreMined, Ticks: p.ticks, MineRolls: p.mineRolls,
			CreditsSpent: p.creditsSpent, Trades: p.trades, Distance: p.distance,
			CreatedAt: p.createdAt, LastLoginAt: p.lastLoginAt, LogAt: slices.Clone(p.logAt),
			Log: slices.Clone(p.log), Notes: slices.Clone(p.notes), NoteSeq: p.noteSeq,
			Calls: p.calls.Load(), Errors: p.errors.Load(), MissionsDone: p.missionsDone,
		}
		for _, m := range p.missions {
			ps.Missions = append(ps.Missions, *m)
		}
		for _, o := range p.orders {
			ps.Orders = append(ps.Orders, *o)
		}
		if p.transit != nil {
			ps.SystemID, ps.POIID, ps.DockedAt = p.transit.toSystem, p.transit.toPOI, ""
			if !slices.Contains(ps.Visited, ps.SystemID) {
				ps.Visited = append(ps.Visited, ps.SystemID)
				slices.Sort(ps.Visited)
			}
		}
		p.mu.Unlock()
		st.Players = append(st.Players, ps)
	}
	for _, sys := range e.w().systems {
		for _, poi := range sys.POIs {
			for _, d := range poi.Deposits {
				st.Deposits = append(st.Deposits, DepositState{POIID: poi.ID, ResourceID: d.ResourceID, Remaining: d.Remaining})
			}
			if poi.Base == nil || poi.Base.Market == nil {
				continue
			}
			for _, b := range poi.Base.Market.books {
				bs := BookState{POIID: poi.ID, ItemID: b.ItemID}
				for _, l := range b.Bids {
					bs.Bids = append(bs.Bids, l.Qty)
				}
				for _, l := range b.Asks {
					bs.Asks = append(bs.Asks, l.Qty)
				}
				st.Books = append(st.Books, bs)
			}
		}
	}
	return st, nil
}

// Restore creates an engine that continues st. The configuration's seed must be the one st was saved with, since
// the galaxy is regenerated from it; anything in st that does not fit that galaxy is an error, not a guess.
func Restore(cfg Config, st State) (*Engine, error) {
	if st.Version != StateVersion {
		return nil, fmt.Errorf("state version %d, this simulator reads version %d", st.Version, StateVersion)
	}
	e := New(cfg)
	if st.Seed != e.cfg.Seed {
		return nil, fmt.Errorf("state was saved with seed %d but the seed is %d (set ZOEA_SIM_SEED=%d, or start fresh)", st.Seed, e.cfg.Seed, st.Seed)
	}
	ids := rand.NewChaCha8([32]byte{})
	if err := ids.UnmarshalBinary(st.IDs); err != nil {
		return nil, fmt.Errorf("state id generator: %w", err)
	}
	e.ids = ids
	w := e.w()
	for i, ps := range st.Players {
		if err := checkPlayerState(w, ps); err != nil {
			return nil, fmt.Errorf("state player %d (%s): %w", i, ps.Username, err)
		}
		key := strings.ToLower(ps.Username)
		if e.byName[key] != nil || e.byID[ps.ID] != nil {
			return nil, fmt.Errorf("state player %d: duplicate account %s", i, ps.Username)
		}
		p := &Player{
			seq: i + 1, gen: e.gen, ID: ps.ID, Username: ps.Username, Empire: ps.Empire,
			credits: ps.Credits, systemID: ps.SystemID, poiID: ps.POIID, dockedAt: ps.DockedAt, ship: ps.Ship,
			cargo: map[string]int{}, visited: map[string]bool{}, creditsEarned: ps.CreditsEarned, oreMined: ps.OreMined,
			ticks: ps.Ticks, mineRolls: ps.MineRolls, log: ps.Log, notes: ps.Notes, noteSeq: ps.NoteSeq,
			creditsSpent: ps.CreditsSpent, trades: ps.Trades, distance: ps.Distance,
			createdAt: ps.CreatedAt, lastLoginAt: ps.LastLoginAt, logAt: ps.LogAt,
		}
		if p.createdAt.IsZero() { // saved before the simulator kept it
			p.createdAt = e.now()
		}
		if p.lastLoginAt.IsZero() {
			p.lastLoginAt = p.createdAt
		}
		p.lastActive.Store(p.lastLoginAt.UnixNano())
		h, _ := hex.DecodeString(ps.PasswordHash)
		copy(p.passwordHash[:], h)
		maps.Copy(p.cargo, ps.Cargo)
		for _, s := range ps.Visited {
			p.visited[s] = true
		}
		p.calls.Store(ps.Calls)
		p.errors.Store(ps.Errors)
		p.missionsDone = ps.MissionsDone
		for _, m := range ps.Missions {
			p.missions = append(p.missions, &m)
		}
		for _, o := range ps.Orders {
			p.orders = append(p.orders, &o)
		}
		e.players = append(e.players, p)
		e.byName[key] = p
		e.byID[p.ID] = p
	}
	for _, ds := range st.Deposits {
		d := findDeposit(w, ds.POIID, ds.ResourceID)
		if d == nil {
			return nil, fmt.Errorf("state deposit %s at %s: no such deposit in this galaxy", ds.ResourceID, ds.POIID)
		}
		d.Remaining = min(max(ds.Remaining, 0), d.Max)
	}
	for _, bs := range st.Books {
		poi := w.poi(bs.POIID)
		var b *Book
		if poi != nil && poi.Base != nil && poi.Base.Market != nil {
			b = poi.Base.Market.book(bs.ItemID)
		}
		if b == nil || len(b.Bids) != len(bs.Bids) || len(b.Asks) != len(bs.Asks) {
			return nil, fmt.Errorf("state order book %s at %s does not fit this galaxy", bs.ItemID, bs.POIID)
		}
		for i, q := range bs.Bids {
			b.Bids[i].Qty = min(max(q, 0), b.Bids[i].Max)
		}
		for i, q := range bs.Asks {
			b.Asks[i].Qty = min(max(q, 0), b.Asks[i].Max)
		}
	}
	e.tick.Store(st.Tick)
	return e, nil
}

func checkPlayerState(w *World, ps PlayerState) error {
	switch {
	case !validUsername(ps.Username):
		return fmt.Errorf("invalid username")
	case ps.ID == "":
		return fmt.Errorf("no player id")
	case w.system(ps.SystemID) == nil:
		return fmt.Errorf("unknown system %q", ps.SystemID)
	case w.poi(ps.POIID) == nil || w.poi(ps.POIID).SystemID != ps.SystemID:
		return fmt.Errorf("unknown poi %q in %s", ps.POIID, ps.SystemID)
	case ps.DockedAt != "" && (w.poi(ps.POIID).Base == nil || w.poi(ps.POIID).Base.ID != ps.DockedAt):
		return fmt.Errorf("docked at %q, which is not at %s", ps.DockedAt, ps.POIID)
	}
	if h, err := hex.DecodeString(ps.PasswordHash); err != nil || len(h) != 32 {
		return fmt.Errorf("password hash is not 32 bytes of hex")
	}
	for id := range ps.Cargo {
		if _, ok := itemByID(id); !ok {
			return fmt.Errorf("unknown cargo item %q", id)
		}
	}
	for _, o := range ps.Orders {
		if _, ok := itemByID(o.ItemID); !ok || w.baseLocation(o.BaseID) == nil || (o.Side != "buy" && o.Side != "sell") {
			return fmt.Errorf("order %s does not fit this galaxy", o.ID)
		}
	}
	return nil
}

func findDeposit(w *World, poiID, resourceID string) *Deposit {
	poi := w.poi(poiID)
	if poi == nil {
		return nil
	}
	for _, d := range poi.Deposits {
		if d.ResourceID == resourceID {
			return d
		}
	}
	return nil
}
