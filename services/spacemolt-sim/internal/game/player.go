package game

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Ship is a player's vessel.
type Ship struct {
	ID          string
	Class       string
	Name        string
	Hull        int
	HullMax     int
	Shield      int
	ShieldMax   int
	Fuel        int
	FuelMax     int
	CargoMax    int
	Speed       int
	MiningPower int
}

// shipClass is what a ship's class fixes: the figures the v1 ship object reports that nothing in the simulator
// changes.
type shipClass struct {
	shieldRecharge, armor                   int
	cpuCapacity, powerCapacity              int
	weaponSlots, defenseSlots, utilitySlots int
}

// shipClasses holds the one class the simulator flies.
var shipClasses = map[string]shipClass{
	"theoria": {shieldRecharge: 1, armor: 0, cpuCapacity: 12, powerCapacity: 20, weaponSlots: 1, defenseSlots: 1, utilitySlots: 3},
}

// starterModule is a module every theoria carries; the instance id is the ship id plus the suffix.
type starterModule struct {
	suffix, typeID, name, typ string
	cpu, power                int
}

var starterModules = []starterModule{
	{"-m1", "mining_laser_i", "Mining Laser I", "mining", 2, 3},
	{"-m2", "cargo_hold_s", "Small Cargo Hold", "cargo", 1, 1},
	{"-m3", "fuel_tank_s", "Small Fuel Tank", "fuel", 1, 1},
}

// newStarterShip is the theoria every new player gets.
func newStarterShip(id string) Ship {
	return Ship{
		ID: id, Class: "theoria", Name: "Theoria",
		Hull: 100, HullMax: 100, Shield: 55, ShieldMax: 55,
		Fuel: 100, FuelMax: 100, CargoMax: 70, Speed: 1, MiningPower: 5,
	}
}

// StartingCredits is what a new account owns.
const StartingCredits = 100

// transit describes a multi-tick move in progress.
type transit struct {
	kind       string // "travel" or "jump"
	fromSystem string
	fromPOI    string
	toSystem   string
	toPOI      string
	departTick int64
	arriveTick int64
}

// Player is an account and its ship. The identity fields are immutable after
// registration; everything else is guarded by mu. Only the tick goroutine
// changes the game state (location, ship, cargo, credits); reads and
// bookkeeping (rate limits, notifications, the log) take mu briefly.
type Player struct {
	seq          int // registration order; ticks resolve players in this order
	gen          uint64
	ID           string
	Username     string
	Empire       string
	passwordHash [32]byte

	mu sync.Mutex

	credits       int
	systemID      string
	poiID         string // "" while in transit
	dockedAt      string // base id, "" when undocked
	ship          Ship
	cargo         map[string]int
	visited       map[string]bool
	transit       *transit
	creditsEarned int
	creditsSpent  int
	oreMined      int
	trades        int // sells and buys that filled
	distance      int // AU travelled plus light years jumped
	createdAt     time.Time
	lastLoginAt   time.Time
	lastChatCheck time.Time
	lastActive    atomic.Int64 // unix nanos of the game clock at the newest authenticated call
	ticks         int          // mutations resolved
	mineRolls     uint64
	missions      []*activeMission // accepted, oldest first
	missionsDone  int
	orders        []*playerOrder // resting exchange orders, oldest first

	pending      *action
	arriveTick   int64  // copy of transit.arriveTick for in_transit checks without the world lock
	transitTo    string // destination POI while arriveTick is set
	mutations    bucket
	reads        bucket
	chats        bucket
	notes        []Notification
	noteSeq      int64
	lastNoteTick int64
	log          []string    // newest first
	logAt        []time.Time // when each log entry was written, parallel to log

	calls  atomic.Int64
	errors atomic.Int64
}

func (p *Player) cargoUsed() int {
	n := 0
	for _, q := range p.cargo {
		n += q
	}
	return n
}

// playerState is a copy of a player's game state. It is taken under p.mu
// without allocating, so views are built, and allocate, after the lock is
// released and the tick is never kept waiting on a reader.
type playerState struct {
	ID, Username, Empire string
	credits              int
	systemID             string
	poiID                string
	dockedAt             string
	ship                 Ship
	cargo                [len(itemCatalog)]int // by catalog index
	transit              transit
	moving               bool

	creditsEarned, creditsSpent, oreMined, trades, distance, explored int
	createdAt, lastLoginAt, lastChatCheck, lastActive                 time.Time
}

// snapshot needs p.mu held.
func (p *Player) snapshot() playerState {
	st := playerState{
		ID: p.ID, Username: p.Username, Empire: p.Empire, credits: p.credits,
		systemID: p.systemID, poiID: p.poiID, dockedAt: p.dockedAt, ship: p.ship,
		creditsEarned: p.creditsEarned, creditsSpent: p.creditsSpent, oreMined: p.oreMined, trades: p.trades,
		distance: p.distance, explored: len(p.visited),
		createdAt: p.createdAt, lastLoginAt: p.lastLoginAt, lastChatCheck: p.lastChatCheck,
		lastActive: time.Unix(0, p.lastActive.Load()),
	}
	if st.lastChatCheck.IsZero() {
		st.lastChatCheck = p.createdAt
	}
	for i, it := range itemCatalog {
		st.cargo[i] = p.cargo[it.ID]
	}
	if p.transit != nil {
		st.transit, st.moving = *p.transit, true
	}
	return st
}

func (st *playerState) cargoUsed() int {
	n := 0
	for _, q := range st.cargo {
		n += q
	}
	return n
}

// session is a game login. player is nil after logout.
type session struct {
	id       string
	pool     Pool
	player   *Player
	lastSeen atomic.Int64 // unix nanos of the game clock
}

// bucket is a token bucket (golang.org/x/time/rate) refilled continuously at perMinute tokens a minute, so a burst
// of perMinute is allowed and then one call every 60/perMinute s. It runs on the game clock, not the wall clock.
type bucket struct {
	lim *rate.Limiter
}

// take spends a token or reports how many whole seconds until one is available.
func (b *bucket) take(now time.Time, perMinute int) (retryAfter int, ok bool) {
	if perMinute < 0 { // unlimited; 0 never reaches here (Config defaults it)
		return 0, true
	}
	perSecond := float64(perMinute) / 60
	if b.lim == nil {
		b.lim = rate.NewLimiter(rate.Limit(perSecond), perMinute) // starts full
	}
	if b.lim.AllowN(now, 1) {
		return 0, true
	}
	return max(1, int(math.Ceil((1-b.lim.TokensAt(now))/perSecond))), false
}

// Notification is an event queued for a player.
type Notification struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	MsgType   string         `json:"msg_type"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
}
