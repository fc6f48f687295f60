// Package game is the SpaceMolt simulator's domain: a seeded galaxy, accounts
// and sessions, a tick clock that resolves one mutation per player per tick,
// markets, mining and the rules that produce SpaceMolt's error codes. It knows
// nothing about MCP or HTTP; the clock is injected.
//
// Concurrency: the galaxy's layout is immutable, so reads of it take no lock.
// A player's state is guarded by its own mutex, so the common reads
// (get_status, get_ship, get_cargo, get_system) touch no shared lock. Only the
// shared mutable state, deposits and order books, sits behind Engine.mu, a
// read-write lock the tick holds while it resolves the queued mutations in one
// batch, in registration order, which keeps a seeded run reproducible.
package game

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Engine runs one simulated SpaceMolt universe.
//
// Lock order: accMu → sessMu → mu → qMu → Player.mu → statsMu; never two
// Player.mu at once.
type Engine struct {
	cfg Config
	now func() time.Time

	idMu sync.Mutex
	ids  *rand.ChaCha8

	accMu   sync.RWMutex
	players []*Player // registration order
	byName  map[string]*Player
	byID    map[string]*Player

	sessMu    sync.RWMutex
	sessions  map[string]*session
	current   map[*Player]string // the live session of each logged-in player
	lastSweep time.Time

	world atomic.Pointer[World] // replaced whole on Reset

	// mu guards the mutable parts of the world (Deposit.Remaining, market
	// levels) and the fields below it.
	mu       sync.RWMutex
	gen      uint64
	inflight []*action // multi-tick moves, sorted by player seq
	later    []note    // notifications raised during a tick, queued after the world lock is released
	tick     atomic.Int64

	qMu   sync.Mutex
	queue []*action
	// queued is closed, and replaced, whenever an action is queued; see Queued.
	queued chan struct{}

	statsMu   sync.Mutex
	tickStats TickStats

	anonCalls  atomic.Int64
	anonErrors atomic.Int64
}

// New creates an engine with a fresh world for cfg.Seed.
func New(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{cfg: cfg, now: cfg.Now, queued: make(chan struct{})}
	e.resetLocked()
	return e
}

func (e *Engine) w() *World { return e.world.Load() }

// Config returns the effective configuration.
func (e *Engine) Config() Config { return e.cfg }

// CurrentTick is the number of ticks resolved since start or reset.
func (e *Engine) CurrentTick() int64 { return e.tick.Load() }

func (e *Engine) resetLocked() {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(e.cfg.Seed))
	copy(seed[8:], "spacemolt-sim ids")
	e.ids = rand.NewChaCha8(seed)
	e.players = nil
	e.byName = map[string]*Player{}
	e.byID = map[string]*Player{}
	e.sessions = map[string]*session{}
	e.current = map[*Player]string{}
	e.lastSweep = e.now()
	e.world.Store(newWorld(e.cfg.Seed))
	e.gen++
	e.inflight = nil
	e.later = nil
	e.tick.Store(0)
}

// Reset replaces the universe with a fresh one from the seed. Accounts and
// sessions are dropped; calls waiting on a tick fail with server_reset.
func (e *Engine) Reset() {
	e.accMu.Lock()
	e.sessMu.Lock()
	e.mu.Lock()
	inflight := e.inflight
	e.resetLocked()
	e.mu.Unlock()
	e.sessMu.Unlock()
	e.accMu.Unlock()

	e.qMu.Lock()
	queued := e.queue
	e.queue = nil
	e.qMu.Unlock()
	e.statsMu.Lock()
	e.tickStats = TickStats{}
	e.statsMu.Unlock()
	for _, a := range append(inflight, queued...) {
		a.done <- outcome{err: errorf(CodeServerReset, "The universe was reset; register again.")}
	}
}

func (e *Engine) hexID(nbytes int) string {
	b := make([]byte, nbytes)
	e.idMu.Lock()
	_, _ = e.ids.Read(b)
	e.idMu.Unlock()
	return hex.EncodeToString(b)
}

// Run resolves a tick every cfg.Tick until ctx ends.
func (e *Engine) Run(ctx context.Context) error {
	interval := e.cfg.Tick
	t := time.NewTicker(interval)
	defer t.Stop()
	base := time.Now()
	var n int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n++
		// time.Ticker drops ticks for a slow receiver; count them as missed.
		if due := int64(time.Since(base) / interval); due > n {
			e.statsMu.Lock()
			e.tickStats.Missed += due - n
			e.statsMu.Unlock()
			n = due
		}
		scheduled := base.Add(time.Duration(n) * interval)
		e.tickAt(scheduled, interval)
	}
}

// Tick resolves one tick now. Run calls it on the clock; tests call it directly.
func (e *Engine) Tick() TickReport { return e.tickAt(time.Time{}, 0) }

// TickReport summarises one resolved tick.
type TickReport struct {
	Tick      int64
	Mutations int
	Arrivals  int
	Resolve   time.Duration
}

type outcome struct {
	result any
	err    error
}

type action struct {
	p    *Player
	gen  uint64
	cmd  command
	done chan outcome // buffered: the tick never blocks on a caller that gave up

	// set while a travel/jump is under way
	arriveTick int64
	finish     func() any
}

func (e *Engine) tickAt(scheduled time.Time, interval time.Duration) TickReport {
	start := time.Now()
	e.qMu.Lock()
	queued := e.queue
	e.queue = nil
	e.qMu.Unlock()
	slices.SortFunc(queued, func(a, b *action) int { return cmp.Compare(a.p.seq, b.p.seq) })

	type delivery struct {
		a *action
		o outcome
	}
	var out []delivery

	e.mu.Lock()
	locked := time.Now()
	w := e.w()
	t := e.tick.Add(1)
	arrivals := 0
	keep := e.inflight[:0]
	for _, a := range e.inflight {
		if a.arriveTick > t {
			keep = append(keep, a)
			continue
		}
		arrivals++
		a.p.mu.Lock()
		res := a.finish()
		a.p.mu.Unlock()
		out = append(out, delivery{a, outcome{result: res}})
	}
	e.inflight = keep
	moved := false
	for _, a := range queued {
		if a.gen != e.gen {
			out = append(out, delivery{a, outcome{err: errorf(CodeServerReset, "The universe was reset; register again.")}})
			continue
		}
		a.p.mu.Lock()
		res, err := e.resolve(w, a, t)
		a.p.ticks++
		if err == nil && a.arriveTick > t {
			a.p.arriveTick, a.p.transitTo = a.arriveTick, a.p.transit.toPOI
			a.p.mu.Unlock()
			e.inflight = append(e.inflight, a)
			moved = true
			continue
		}
		a.p.mu.Unlock()
		out = append(out, delivery{a, outcome{result: res, err: err}})
	}
	if moved {
		slices.SortFunc(e.inflight, func(a, b *action) int { return cmp.Compare(a.p.seq, b.p.seq) })
	}
	w.upkeep()
	notes := e.later
	e.later = nil
	e.mu.Unlock()
	hold := time.Since(locked)
	lockWait := locked.Sub(start)
	for _, n := range notes {
		e.notify(n.p, n.typ, n.msgType, n.data)
	}

	for _, d := range out {
		d.a.p.mu.Lock()
		if d.a.p.pending == d.a {
			d.a.p.pending = nil
			d.a.p.arriveTick = 0
			d.a.p.transitTo = ""
		}
		d.a.p.mu.Unlock()
		d.a.done <- d.o
	}
	e.maybeSweepSessions()

	resolve := time.Since(start)
	e.statsMu.Lock()
	s := &e.tickStats
	s.Ticks++
	s.Mutations += int64(len(queued))
	s.LastMutations = len(queued)
	s.MaxMutations = max(s.MaxMutations, len(queued))
	s.TotalResolve += resolve
	s.MaxResolve = max(s.MaxResolve, resolve)
	s.TotalHold += hold
	s.MaxHold = max(s.MaxHold, hold)
	s.MaxLockWait = max(s.MaxLockWait, lockWait)
	if !scheduled.IsZero() {
		lag := start.Sub(scheduled)
		s.MaxLag = max(s.MaxLag, lag)
		if start.Add(resolve).Before(scheduled.Add(interval)) {
			s.OnTime++
		} else {
			s.Late++
		}
	}
	e.statsMu.Unlock()
	return TickReport{Tick: t, Mutations: len(queued), Arrivals: arrivals, Resolve: resolve}
}

// kind classifies a call for rate limiting.
type kind int

const (
	kindRead kind = iota
	kindMutation
	kindChat
)

// begin authenticates a call and applies the account's rate limit.
func (e *Engine) begin(sid string, k kind) (*Player, error) {
	if sid == "" {
		e.anonCalls.Add(1)
		e.anonErrors.Add(1)
		return nil, errorf(CodeSessionRequired, "No session. Call login() or register() first (or pass session_id).")
	}
	s, p := e.sessionPlayer(sid)
	now := e.now()
	if s == nil {
		e.anonCalls.Add(1)
		e.anonErrors.Add(1)
		return nil, errorf(CodeSessionInvalid, "Session not found, expired or replaced by a newer login. Call login() again.")
	}
	if now.Sub(time.Unix(0, s.lastSeen.Load())) > e.cfg.SessionTTL {
		e.dropSession(s)
		e.anonCalls.Add(1)
		e.anonErrors.Add(1)
		return nil, errorf(CodeSessionInvalid, "Session expired after %s without requests. Call login() again.", e.cfg.SessionTTL)
	}
	s.lastSeen.Store(now.UnixNano())
	if p != nil {
		p.lastActive.Store(now.UnixNano())
	}
	if p == nil {
		e.anonCalls.Add(1)
		e.anonErrors.Add(1)
		return nil, errorf(CodeNotAuthenticated, "Not logged in. Call login() first.")
	}
	p.calls.Add(1)
	limit, what := e.cfg.ReadsPerMinute, "queries"
	p.mu.Lock()
	b := &p.reads
	switch k {
	case kindMutation:
		b, limit, what = &p.mutations, e.cfg.MutationsPerMinute, "actions"
	case kindChat:
		b, limit, what = &p.chats, e.cfg.ChatPerMinute, "chat messages"
	}
	retry, ok := b.take(now, limit)
	p.mu.Unlock()
	if !ok {
		p.errors.Add(1)
		return nil, &Error{
			Code:       CodeRateLimited,
			Message:    "Too many " + what + " (limit " + itoa(limit) + "/min). retry_after: " + itoa(retry) + "s",
			RetryAfter: retry,
		}
	}
	return p, nil
}

// sessionPlayer is sid's session and its player (nil when there is no such session or no one is logged in on it),
// read under the sessions lock.
func (e *Engine) sessionPlayer(sid string) (*session, *Player) {
	e.sessMu.RLock()
	defer e.sessMu.RUnlock()
	s := e.sessions[sid]
	if s == nil {
		return nil, nil
	}
	return s, s.player
}

// CountRejected charges a call the adapter refused before it reached the game
// (a malformed payload) to the session's player, so scores reflect it. It
// neither renews the session nor spends rate limit.
func (e *Engine) CountRejected(sid string) {
	_, p := e.sessionPlayer(sid)
	if p == nil {
		e.anonCalls.Add(1)
		e.anonErrors.Add(1)
		return
	}
	p.calls.Add(1)
	p.errors.Add(1)
}

// count attributes a failed call to its player.
func (e *Engine) count(p *Player, err error) error {
	if err != nil && p != nil {
		p.errors.Add(1)
	}
	return err
}

func (e *Engine) dropSession(s *session) {
	e.sessMu.Lock()
	if e.sessions[s.id] == s {
		delete(e.sessions, s.id)
		if s.player != nil && e.current[s.player] == s.id {
			delete(e.current, s.player)
		}
	}
	e.sessMu.Unlock()
}

func (e *Engine) maybeSweepSessions() {
	now := e.now()
	e.sessMu.Lock()
	defer e.sessMu.Unlock()
	if now.Sub(e.lastSweep) < min(e.cfg.SessionTTL, time.Minute) {
		return
	}
	e.lastSweep = now
	for id, s := range e.sessions {
		if now.Sub(time.Unix(0, s.lastSeen.Load())) > e.cfg.SessionTTL {
			delete(e.sessions, id)
			if s.player != nil && e.current[s.player] == id {
				delete(e.current, s.player)
			}
		}
	}
}

// newSession logs p in on the pool's endpoint, displacing any earlier session of the account (on either pool:
// one connection per account).
func (e *Engine) newSession(p *Player, pool Pool) string {
	id := e.hexID(16)
	s := &session{id: id, pool: pool, player: p}
	s.lastSeen.Store(e.now().UnixNano())
	e.sessMu.Lock()
	if old, ok := e.current[p]; ok {
		delete(e.sessions, old)
	}
	e.sessions[id] = s
	e.current[p] = id
	e.sessMu.Unlock()
	return id
}

// Pool is the endpoint family a game session belongs to. SpaceMolt keeps v1 and v2 sessions apart: a session id
// from one is unknown to the other.
type Pool string

// The session pools.
const (
	PoolV1 Pool = "v1"
	PoolV2 Pool = "v2"
)

// SessionPool reports the pool of a live session id.
func (e *Engine) SessionPool(sid string) (Pool, bool) {
	e.sessMu.RLock()
	defer e.sessMu.RUnlock()
	s, ok := e.sessions[sid]
	if !ok {
		return "", false
	}
	return s.pool, true
}

// DropSessions forgets every game session, as a server restart does: the next call with an old id gets
// session_invalid and the player logs in again. Players, ships and the world stay.
func (e *Engine) DropSessions() int {
	e.sessMu.Lock()
	defer e.sessMu.Unlock()
	n := len(e.sessions)
	e.sessions = map[string]*session{}
	e.current = map[*Player]string{}
	return n
}

func hashPassword(pw string) [32]byte { return sha256.Sum256([]byte(pw)) }

func validUsername(u string) bool {
	if len(u) < 3 || len(u) > 24 {
		return false
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Register creates an account with a starter ship docked at Sol Central and
// logs it in.
func (e *Engine) Register(username, empire, code string) (res *RegisterResult, err error) {
	return e.RegisterIn(PoolV1, username, empire, code)
}

// RegisterIn is Register with the new session in pool.
func (e *Engine) RegisterIn(pool Pool, username, empire, code string) (res *RegisterResult, err error) {
	defer func() {
		if err != nil {
			e.anonCalls.Add(1)
			e.anonErrors.Add(1)
		}
	}()
	if !validUsername(username) {
		return nil, errorf(CodeInvalidUsername, "username must be 3-24 characters of letters, digits, '_' or '-'")
	}
	if !validEmpire(empire) {
		return nil, errorf(CodeInvalidEmpire, "empire must be one of %s", strings.Join(empires, ", "))
	}
	if e.cfg.RegistrationCode != "" && subtle.ConstantTimeCompare([]byte(code), []byte(e.cfg.RegistrationCode)) != 1 {
		return nil, errorf(CodeInvalidRegistration, "A valid registration_code is required to register.")
	}
	key := strings.ToLower(username)
	e.accMu.Lock()
	if _, taken := e.byName[key]; taken {
		e.accMu.Unlock()
		return nil, errorf(CodeUsernameTaken, "Username %q is already taken.", username)
	}
	password := e.hexID(32)
	p := &Player{
		seq: len(e.players) + 1, ID: e.hexID(16), Username: username, Empire: empire,
		passwordHash: hashPassword(password),
		credits:      StartingCredits, systemID: HomeSystem, poiID: HomeStation, dockedAt: HomeBase,
		cargo: map[string]int{}, visited: map[string]bool{HomeSystem: true},
	}
	p.createdAt = e.now()
	p.lastLoginAt = p.createdAt
	p.lastActive.Store(p.createdAt.UnixNano())
	p.ship = newStarterShip(e.hexID(8))
	p.gen = e.gen // Reset changes gen only while holding accMu
	e.players = append(e.players, p)
	e.byName[key] = p
	e.byID[p.ID] = p
	e.accMu.Unlock()

	p.calls.Add(1)
	e.notify(p, "system", "welcome", map[string]any{"message": "Welcome to SpaceMolt, " + username + ". Undock, mine at main_belt, sell at sol_central."})
	sid := e.newSession(p, pool)
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	w := e.w()
	return &RegisterResult{
		Password: password, PlayerID: p.ID, Player: e.loginPlayerView(w, &st), Ship: shipView(&st),
		System: e.systemView(w, w.system(st.systemID)), POI: poiBrief(w.poi(st.poiID)), SessionID: sid,
		Message: "Registered. Save your password: it is shown only once.",
	}, nil
}

// Login starts a session for an existing account, replacing its previous one.
func (e *Engine) Login(username, password string) (*LoginResult, error) {
	return e.LoginIn(PoolV1, username, password)
}

// LoginIn is Login with the new session in pool.
func (e *Engine) LoginIn(pool Pool, username, password string) (*LoginResult, error) {
	e.accMu.RLock()
	p := e.byName[strings.ToLower(username)]
	e.accMu.RUnlock()
	h := hashPassword(password)
	if p == nil || subtle.ConstantTimeCompare(h[:], p.passwordHash[:]) != 1 {
		e.anonCalls.Add(1)
		e.anonErrors.Add(1)
		return nil, errorf(CodeAuthFailed, "Invalid username or password.")
	}
	e.sessMu.RLock()
	_, displaced := e.current[p]
	e.sessMu.RUnlock()
	sid := e.newSession(p, pool)
	p.calls.Add(1)
	if displaced {
		e.notify(p, "system", "session_replaced", map[string]any{"message": "A new login replaced your previous session."})
	}
	p.mu.Lock()
	p.lastLoginAt = e.now()
	p.lastActive.Store(p.lastLoginAt.UnixNano())
	st := p.snapshot()
	logs := make([]LogEntryView, len(p.log))
	for i, entry := range p.log {
		logs[i] = LogEntryView{Index: i, Entry: entry, CreatedAt: timestamp(p.createdAt)}
		if i < len(p.logAt) {
			logs[i].CreatedAt = timestamp(p.logAt[i])
		}
	}
	p.mu.Unlock()
	w := e.w()
	sysID, poiID := st.systemID, st.poiID
	if st.moving {
		sysID, poiID = st.transit.toSystem, st.transit.toPOI
	}
	return &LoginResult{
		Player: e.loginPlayerView(w, &st), Ship: shipView(&st),
		System: e.systemView(w, w.system(sysID)), POI: poiBrief(w.poi(poiID)),
		CaptainsLog: logs, PendingTrades: []any{},
		SessionID: sid, Message: "Logged in as " + p.Username + ".",
	}, nil
}

// Logout ends the login behind sid; the session stays known but unauthenticated.
func (e *Engine) Logout(sid string) (*OKResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	e.sessMu.Lock()
	if s := e.sessions[sid]; s != nil {
		s.player = nil
	}
	if e.current[p] == sid {
		delete(e.current, p)
	}
	e.sessMu.Unlock()
	return &OKResult{Message: "Logged out."}, nil
}

// note is a notification raised while the world lock is held.
type note struct {
	p            *Player
	typ, msgType string
	data         map[string]any
}

// notifyLater queues a notification from tick resolution (world lock held);
// tickAt delivers it after unlocking so reads are not kept waiting.
func (e *Engine) notifyLater(p *Player, typ, msgType string, data map[string]any) {
	e.later = append(e.later, note{p, typ, msgType, data})
}

// notify queues an event for p, dropping the oldest beyond the cap.
func (e *Engine) notify(p *Player, typ, msgType string, data map[string]any) {
	ts := e.now().UTC().Format(time.RFC3339Nano)
	p.mu.Lock()
	p.noteSeq++
	p.notes = append(p.notes, Notification{
		ID: p.ID[:8] + "-" + itoa(int(p.noteSeq)), Type: typ, MsgType: msgType, Timestamp: ts, Data: data,
	})
	if over := len(p.notes) - e.cfg.NotificationCap; over > 0 {
		p.notes = slices.Delete(p.notes, 0, over)
	}
	p.mu.Unlock()
}

func itoa(n int) string { return strconv.Itoa(n) }

// Queued returns a channel that is closed when the next action is queued. A driver that ticks on demand, as tests
// with a fake clock do, takes it, checks Pending, and waits on it only then, so no action is missed and nothing
// polls.
func (e *Engine) Queued() <-chan struct{} {
	e.qMu.Lock()
	defer e.qMu.Unlock()
	return e.queued
}

// Pending counts mutations waiting for a tick plus moves under way. Drivers
// that tick on demand (deterministic replays, tests) tick while it is > 0.
func (e *Engine) Pending() int {
	e.mu.RLock()
	n := len(e.inflight)
	e.mu.RUnlock()
	e.qMu.Lock()
	n += len(e.queue)
	e.qMu.Unlock()
	return n
}
