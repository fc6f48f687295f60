package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// GuardOptions bound what clients can hold and how fast they may log in. Zero values select the defaults.
type GuardOptions struct {
	// MaxSessions caps live MCP sessions over both endpoints (default 2000); an initialize beyond it is HTTP 503.
	MaxSessions int
	// MaxSessionsPerClient caps live MCP sessions per client address (default 200); beyond it, HTTP 429.
	MaxSessionsPerClient int
	// UninitializedTTL closes a session that made no request after its initialize within this long (default 30s).
	UninitializedTTL time.Duration
	// AuthPerMinute is the live server's shared limit on session creation, login and register per client address
	// (default 30; negative disables it). Going over locks the address out for 2 minutes, doubling with each
	// repeat, up to 30 minutes.
	AuthPerMinute int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Guard protects the MCP endpoints of one simulator: session caps, the auth rate limit, and server restarts
// (a warning in every result for the last minute, then every session dropped and a short downtime).
type Guard struct {
	opts    GuardOptions
	engine  *game.Engine
	servers []*Server

	mu       sync.Mutex
	sessions map[string]*trackedSession // MCP session id →
	perIP    map[string]int
	auth     map[string]*authState
	// restartAt is when a scheduled restart happens (zero: none); downUntil ends the downtime after it.
	restartAt, downUntil time.Time
	downtime             time.Duration
	restartMsg           string
	restarts             int
}

type trackedSession struct {
	ip      string
	created time.Time
	used    bool
}

type authState struct {
	window     time.Time // start of the current minute window
	count      int
	violations int
	lockedTill time.Time
}

// clientHeader carries the client address from the HTTP layer to tool handlers (RequestExtra.Header). The guard
// sets it on every request, overwriting whatever the client sent.
const clientHeader = "X-Spacemolt-Sim-Client"

// NewGuard builds the guard for the endpoints of servers (each is also told about the guard).
func NewGuard(engine *game.Engine, opts GuardOptions, servers ...*Server) *Guard {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 2000
	}
	if opts.MaxSessionsPerClient <= 0 {
		opts.MaxSessionsPerClient = 200
	}
	if opts.UninitializedTTL <= 0 {
		opts.UninitializedTTL = 30 * time.Second
	}
	if opts.AuthPerMinute == 0 {
		opts.AuthPerMinute = 30
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	g := &Guard{opts: opts, engine: engine, servers: servers, sessions: map[string]*trackedSession{},
		perIP: map[string]int{}, auth: map[string]*authState{}}
	for _, s := range servers {
		s.guard = g
	}
	return g
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := clientIP(r)
		r.Header.Set(clientHeader, ip)
		now := g.opts.Now()
		if wait := g.down(now); wait > 0 {
			refuse(w, http.StatusServiceUnavailable, wait, "The server is restarting; retry shortly.")
			return
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			g.mu.Lock()
			if t := g.sessions[id]; t != nil {
				t.used = true
			}
			g.mu.Unlock()
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxHandshakeBytes))
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !isInitialize(body) {
			next.ServeHTTP(w, r)
			return
		}
		if wait, ok := g.authAttempt(ip, now); !ok {
			refuse(w, http.StatusTooManyRequests, wait, "rate_limited: too many session, login and register attempts from your address.")
			return
		}
		if status, wait, msg := g.admit(ip, now); status != 0 {
			refuse(w, status, wait, msg)
			return
		}
		// The session is tracked when its initialize response is written, not when the handler returns: the client
		// can use the session as soon as it has read the response, and a request the guard saw before tracking
		// began would not have marked it used.
		rec := &sessionRecorder{ResponseWriter: w, track: func(id string) {
			g.mu.Lock()
			if g.sessions[id] == nil {
				g.sessions[id] = &trackedSession{ip: ip, created: now}
				g.perIP[ip]++
			}
			g.mu.Unlock()
		}}
		next.ServeHTTP(rec, r)
		rec.tracked() // a handler that wrote nothing
	})
}

// admit checks the session caps for a new session from ip, first forgetting sessions that have ended.
func (g *Guard) admit(ip string, now time.Time) (status, wait int, msg string) {
	g.mu.Lock()
	full := len(g.sessions) >= g.opts.MaxSessions || g.perIP[ip] >= g.opts.MaxSessionsPerClient
	g.mu.Unlock()
	if full {
		g.prune()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	retry := int(math.Ceil(g.opts.UninitializedTTL.Seconds()))
	switch {
	case g.perIP[ip] >= g.opts.MaxSessionsPerClient:
		return http.StatusTooManyRequests, retry, "Too many open MCP sessions from your address (limit " + strconv.Itoa(g.opts.MaxSessionsPerClient) + "); close or reuse one."
	case len(g.sessions) >= g.opts.MaxSessions:
		return http.StatusServiceUnavailable, retry, "The server holds its maximum of MCP sessions; retry later."
	}
	return 0, 0, ""
}

// prune forgets tracked sessions the SDK no longer has (closed by the client, by the idle timeout or by Sweep).
func (g *Guard) prune() {
	live := map[string]bool{}
	for _, s := range g.servers {
		for ss := range s.mcp.Sessions() {
			live[ss.ID()] = true
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, t := range g.sessions {
		if !live[id] {
			g.forgetLocked(id, t)
		}
	}
}

func (g *Guard) forgetLocked(id string, t *trackedSession) {
	delete(g.sessions, id)
	if g.perIP[t.ip]--; g.perIP[t.ip] <= 0 {
		delete(g.perIP, t.ip)
	}
}

// Sweep closes sessions that made no request within UninitializedTTL of their initialize, forgets ended ones and
// performs a due restart. Run calls it periodically; tests call it with their clock.
func (g *Guard) Sweep(now time.Time) {
	g.prune()
	var stale []string
	g.mu.Lock()
	for id, t := range g.sessions {
		if !t.used && now.Sub(t.created) >= g.opts.UninitializedTTL {
			stale = append(stale, id)
			g.forgetLocked(id, t)
		}
	}
	due := !g.restartAt.IsZero() && !now.Before(g.restartAt)
	g.mu.Unlock()
	if len(stale) > 0 {
		g.closeSessions(func(id string) bool { return contains(stale, id) })
	}
	if due {
		g.restart(now)
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (g *Guard) closeSessions(match func(id string) bool) {
	for _, s := range g.servers {
		var victims []*mcp.ServerSession
		for ss := range s.mcp.Sessions() {
			if match(ss.ID()) {
				victims = append(victims, ss)
			}
		}
		for _, ss := range victims {
			_ = ss.Close()
		}
	}
}

// Sessions reports the MCP sessions the guard tracks (live, over both endpoints).
func (g *Guard) Sessions() int {
	g.prune()
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

// Run sweeps every UninitializedTTL/4 (at least every second) until ctx ends.
func (g *Guard) Run(ctx context.Context) error {
	every := max(g.opts.UninitializedTTL/4, 10*time.Millisecond)
	every = min(every, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			g.Sweep(g.opts.Now())
		}
	}
}

// authAttempt counts one session creation, login or register from ip. While ip is locked out, or when the attempt
// is one too many for the minute (which starts a lock-out), it returns the seconds to wait and false.
func (g *Guard) authAttempt(ip string, now time.Time) (int, bool) {
	if g.opts.AuthPerMinute < 0 {
		return 0, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.auth[ip]
	if a == nil {
		a = &authState{window: now}
		g.auth[ip] = a
	}
	if now.Before(a.lockedTill) {
		return secondsCeil(a.lockedTill.Sub(now)), false
	}
	if now.Sub(a.window) >= time.Minute {
		a.window, a.count = now, 0
	}
	a.count++
	if a.count <= g.opts.AuthPerMinute {
		return 0, true
	}
	a.violations++
	lock := min(2*time.Minute<<(a.violations-1), 30*time.Minute)
	a.lockedTill = now.Add(lock)
	a.window, a.count = a.lockedTill, 0
	return secondsCeil(lock), false
}

func secondsCeil(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// authCheck applies the auth limit to a login or register call.
func (g *Guard) authCheck(req *mcp.CallToolRequest) error {
	if g == nil {
		return nil
	}
	ip := ""
	if req.Extra != nil && req.Extra.Header != nil {
		ip = req.Extra.Header.Get(clientHeader)
	}
	if wait, ok := g.authAttempt(ip, g.opts.Now()); !ok {
		return authLimited(g.opts.AuthPerMinute, wait)
	}
	return nil
}

func authLimited(perMinute, wait int) error {
	return &game.Error{Code: game.CodeRateLimited, RetryAfter: wait,
		Message: "Too many session, login and register attempts from your address (limit " + strconv.Itoa(perMinute) + "/min, escalating lock-outs). retry_after: " + strconv.Itoa(wait) + "s"}
}

// Down reports the seconds a simulated restart still keeps the server down (0 when it is up).
func (g *Guard) Down() int {
	if g == nil {
		return 0
	}
	return g.down(g.opts.Now())
}

// RestartWarning is the pending restart announcement, or nil.
func (g *Guard) RestartWarning() map[string]any { return g.warning() }

// ScheduleRestart announces a restart in `in` (about 60 s on the live server) that keeps the server down for
// downtime. Until then every tool result carries _meta.server_restart_warning.
func (g *Guard) ScheduleRestart(in, downtime time.Duration) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.restartAt = g.opts.Now().Add(in)
	g.downtime = downtime
	g.restartMsg = "The server restarts for a deploy in about " + strconv.Itoa(secondsCeil(in)) + " seconds. Pause, then log in again after the brief disconnect."
	return g.restartAt
}

// restart drops every MCP and game session and starts the downtime.
func (g *Guard) restart(now time.Time) {
	g.mu.Lock()
	g.restartAt = time.Time{}
	g.downUntil = now.Add(g.downtime)
	g.restarts++
	for id, t := range g.sessions {
		g.forgetLocked(id, t)
	}
	g.mu.Unlock()
	g.closeSessions(func(string) bool { return true })
	for _, s := range g.servers {
		s.forgetBindings()
	}
	g.engine.DropSessions()
}

// Restarts counts the restarts performed.
func (g *Guard) Restarts() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.restarts
}

// down returns the seconds left of a restart's downtime (0: up).
func (g *Guard) down(now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.downUntil) {
		return secondsCeil(g.downUntil.Sub(now))
	}
	return 0
}

// warning returns the restart warning to attach to results, if a restart is scheduled.
func (g *Guard) warning() map[string]any {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.restartAt.IsZero() {
		return nil
	}
	return map[string]any{
		"type":                  "server_restart_warning",
		"message":               g.restartMsg,
		"seconds_until_restart": secondsCeil(g.restartAt.Sub(g.opts.Now())),
	}
}

func refuse(w http.ResponseWriter, status, retryAfter int, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": -32000, "message": msg, "data": map[string]any{"retry_after": retryAfter}}})
	_, _ = w.Write(b)
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func isInitialize(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		var ms []struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(t, &ms) != nil {
			return false
		}
		for _, x := range ms {
			if x.Method == "initialize" {
				return true
			}
		}
		return false
	}
	return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

// sessionRecorder hands track the Mcp-Session-Id the SDK assigned, once, before the response's header goes out.
type sessionRecorder struct {
	http.ResponseWriter
	track func(id string)
	done  bool
}

func (w *sessionRecorder) tracked() {
	if w.done {
		return
	}
	w.done = true
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		w.track(id)
	}
}

func (w *sessionRecorder) WriteHeader(code int) {
	w.tracked()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionRecorder) Write(b []byte) (int, error) {
	w.tracked()
	return w.ResponseWriter.Write(b)
}

func (w *sessionRecorder) Flush() {
	w.tracked()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
