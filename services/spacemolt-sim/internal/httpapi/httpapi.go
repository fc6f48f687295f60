// Package httpapi is SpaceMolt's HTTP API v2 (/api/v2) over the simulator's engine: POST /api/v2/session opens an
// API session named by the X-Session-Id header on every later call; POST /api/v2/{tool}/{action} runs a command
// with a JSON body; every answer is the envelope {result, structuredContent, notifications, session, error}. The
// commands, their arguments and their results are /mcp/v2's (mcpserver.CallV2): one action table, one shaping.
// docs/SPACEMOLT.md, "HTTP API v2", states the facts and where the simulator differs.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

// Prefix is where the API is mounted.
const Prefix = "/api/v2"

// SessionHeader names the API session on every call after POST /api/v2/session.
const SessionHeader = "X-Session-Id"

// MaxBody is the largest request body accepted (payload_too_large beyond).
const MaxBody = 1 << 20

// Error codes of the envelope beyond the game's own (the published v2 description lists them).
const (
	CodeSessionRequired  = "session_required"  // no X-Session-Id header
	CodeSessionInvalid   = "session_invalid"   // the API session is unknown or expired, or its login was replaced
	CodeNotAuthenticated = "not_authenticated" // the API session exists but has not logged in
	CodeInvalidParams    = "invalid_params"    // a missing, mistyped or (on movement) unknown parameter
	CodeInvalidJSON      = "invalid_json"
	CodePayloadTooLarge  = "payload_too_large"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeMissingAction    = "missing_action"
	CodeUnknownCommand   = "unknown_command"
	CodeRateLimited      = game.CodeRateLimited
	CodeServerRestarting = "server_restarting"
)

// Options configure the API.
type Options struct {
	// SessionTTL expires an API session this long after its last request (the game session's TTL by default).
	SessionTTL time.Duration
	// MaxSessions bounds the API sessions held at once (10,000 by default); beyond, session creation is 503.
	MaxSessions int
	// Guard applies the per-address limit on session creation, login and register shared with the MCP endpoints,
	// and the simulated restarts. Nil: neither.
	Guard *mcpserver.Guard
	// Version is the simulator's build version (the OpenAPI document's info.version).
	Version string
	// Logger receives the API's warnings; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock (time.Now by default).
	Now func() time.Time
}

// API serves /api/v2.
type API struct {
	v2     *mcpserver.Server
	engine *game.Engine
	opts   Options

	mu       sync.Mutex
	sessions map[string]*session
	sweptAt  time.Time
}

// session is one API session: created by POST /api/v2/session, logged in by spacemolt_auth login or register.
type session struct {
	id       string
	created  time.Time
	lastSeen time.Time
	gameSID  string // the game session its login started; empty before a login
}

// New builds the API over v2 (an /mcp/v2 server of the same engine).
func New(engine *game.Engine, v2 *mcpserver.Server, opts Options) *API {
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = engine.Config().SessionTTL
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 30 * time.Minute
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &API{v2: v2, engine: engine, opts: opts, sessions: map[string]*session{}}
}

// Envelope is every answer of the API.
type Envelope struct {
	Result            any             `json:"result,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	Notifications     []any           `json:"notifications"`
	Session           *SessionInfo    `json:"session,omitempty"`
	Error             *ErrorInfo      `json:"error,omitempty"`
}

// SessionInfo is the envelope's session.
type SessionInfo struct {
	ID        string `json:"id"`
	PlayerID  string `json:"player_id,omitempty"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
}

// ErrorInfo is the envelope's error.
type ErrorInfo struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"retry_after,omitempty"`
	Details    any    `json:"details,omitempty"`
}

// Handler is the HTTP handler to mount at Prefix and Prefix+"/".
func (a *API) Handler() http.Handler { return http.HandlerFunc(a.serve) }

// Sessions reports the API sessions held.
func (a *API) Sessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// DropSessions forgets every API session (a simulated restart drops the game sessions too).
func (a *API) DropSessions() {
	a.mu.Lock()
	clear(a.sessions)
	a.mu.Unlock()
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	if wait := a.opts.Guard.Down(); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		a.write(w, http.StatusServiceUnavailable, &Envelope{Error: &ErrorInfo{Code: CodeServerRestarting,
			Message: "The server is restarting. retry_after: " + strconv.Itoa(wait) + "s", RetryAfter: wait}})
		return
	}
	switch rest {
	case "openapi.json":
		if r.Method != http.MethodGet {
			a.methodNotAllowed(w, "GET")
			return
		}
		a.serveOpenAPI(w)
		return
	case "session":
		if r.Method != http.MethodPost {
			a.methodNotAllowed(w, "POST")
			return
		}
		a.createSession(w, r)
		return
	case "":
		a.write(w, http.StatusNotFound, &Envelope{Error: &ErrorInfo{Code: CodeUnknownCommand,
			Message: "Use POST /api/v2/{tool}/{action}; POST /api/v2/session first. GET /api/v2/openapi.json lists the commands."}})
		return
	}
	sess, env, status := a.session(r)
	if env != nil {
		a.write(w, status, env)
		return
	}
	if rest == "notifications" {
		if r.Method != http.MethodGet {
			a.methodNotAllowed(w, "GET")
			return
		}
		a.pollNotifications(w, r, sess)
		return
	}
	toolName, action, _ := strings.Cut(rest, "/")
	var body json.RawMessage
	switch r.Method {
	case http.MethodPost:
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				a.fail(w, sess, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "The body is larger than "+strconv.Itoa(MaxBody)+" bytes.")
				return
			}
			a.fail(w, sess, http.StatusBadRequest, CodeInvalidJSON, "The body could not be read: "+err.Error())
			return
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(b, &obj); err != nil {
				a.fail(w, sess, http.StatusBadRequest, CodeInvalidJSON, "The body must be a JSON object: "+err.Error())
				return
			}
			body = b
		}
	case http.MethodGet:
		if action != "help" {
			a.methodNotAllowed(w, "POST")
			return
		}
		if topic := r.URL.Query().Get("topic"); topic != "" {
			body, _ = json.Marshal(map[string]string{"topic": topic})
		}
	default:
		a.methodNotAllowed(w, "POST")
		return
	}
	a.command(w, r, sess, toolName, action, body)
}

// command runs one tool/action for sess.
func (a *API) command(w http.ResponseWriter, r *http.Request, sess *session, toolName, action string, body json.RawMessage) {
	known, noAction := a.lookup(toolName, action)
	switch {
	case !known && action == "" && a.toolExists(toolName):
		a.fail(w, sess, http.StatusBadRequest, CodeMissingAction, "Missing action: use POST /api/v2/"+toolName+"/{action}; "+toolName+"/help lists them.")
		return
	case !known:
		a.fail(w, sess, http.StatusNotFound, CodeUnknownCommand, "Unknown command '"+strings.Trim(toolName+"/"+action, "/")+"'. GET /api/v2/openapi.json or POST /api/v2/spacemolt/get_commands lists them.")
		return
	}
	if noAction {
		action = ""
	}
	a.mu.Lock()
	gameSID := sess.gameSID
	a.mu.Unlock()
	ip := clientIP(r)
	res, _, err := a.v2.CallV2(r.Context(), toolName, action, body, gameSID, func() error { return a.opts.Guard.AuthAttempt(ip) })
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			a.opts.Logger.Warn("api v2 command failed", "command", toolName+"/"+action, "err", err)
		}
		a.fail(w, sess, http.StatusInternalServerError, "internal_error", err.Error())
		return
	}
	if res.SessionID != "" {
		a.mu.Lock()
		sess.gameSID = res.SessionID
		a.mu.Unlock()
	}
	env := &Envelope{}
	status := http.StatusOK
	if res.Err != nil {
		env.Error, status = a.gameError(res.Err, gameSID)
	} else {
		env.Result = res.Text
		env.StructuredContent = res.Structured
	}
	a.finish(w, status, env, sess)
}

// gameError is the envelope's form of a game refusal, and its HTTP status.
func (a *API) gameError(ge *game.Error, gameSID string) (*ErrorInfo, int) {
	e := &ErrorInfo{Code: ge.Code, Message: ge.Message, RetryAfter: ge.RetryAfter}
	status := http.StatusBadRequest
	switch ge.Code {
	case game.CodeSessionRequired:
		e.Code, status = CodeNotAuthenticated, http.StatusUnauthorized
		e.Message = "Not logged in: call spacemolt_auth/login (or register) with this session first."
	case game.CodeNotAuthenticated:
		status = http.StatusUnauthorized
	case game.CodeSessionInvalid:
		status = http.StatusUnauthorized
		e.Message = "This session's login expired or was replaced by a newer login of the account: create a new session with POST /api/v2/session, then log in."
	case game.CodeInvalidPayload:
		e.Code = CodeInvalidParams
	case game.CodeRateLimited:
		status = http.StatusTooManyRequests
	}
	if ge.SecondsRemaining > 0 {
		e.Details = map[string]int{"seconds_remaining": ge.SecondsRemaining}
		if e.RetryAfter == 0 {
			e.RetryAfter = ge.SecondsRemaining
		}
	}
	return e, status
}

func (a *API) lookup(toolName, action string) (known, noAction bool) {
	for _, va := range a.v2.V2Actions() {
		if va.Tool != toolName {
			continue
		}
		if va.Action == "" {
			return action == "", true
		}
		if va.Action == action {
			return true, false
		}
	}
	return false, false
}

func (a *API) toolExists(toolName string) bool {
	for _, va := range a.v2.V2Actions() {
		if va.Tool == toolName {
			return true
		}
	}
	return false
}

func (a *API) pollNotifications(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			a.fail(w, sess, http.StatusBadRequest, CodeInvalidParams, "limit must be an integer between 1 and 100.")
			return
		}
		limit = n
	}
	clearQueue := q.Get("clear") != "false"
	types := map[string]bool{}
	for _, t := range q["types"] {
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				types[s] = true
			}
		}
	}
	a.mu.Lock()
	gameSID := sess.gameSID
	a.mu.Unlock()
	if gameSID == "" {
		a.fail(w, sess, http.StatusUnauthorized, CodeNotAuthenticated, "Not logged in: call spacemolt_auth/login (or register) with this session first.")
		return
	}
	notes := a.engine.PeekNotifications(gameSID, limit, types, clearQueue)
	list := make([]any, len(notes))
	for i, n := range notes {
		list[i] = n
	}
	sc, _ := json.Marshal(map[string]any{"notifications": list, "count": len(list)})
	env := &Envelope{Result: strconv.Itoa(len(list)) + " notification(s).", StructuredContent: sc, Notifications: list}
	a.finishNoDrain(w, http.StatusOK, env, sess)
}

// finish completes env with the session and the notifications queued for its login, and writes it.
func (a *API) finish(w http.ResponseWriter, status int, env *Envelope, sess *session) {
	a.mu.Lock()
	gameSID := sess.gameSID
	a.mu.Unlock()
	if gameSID != "" {
		for _, n := range a.engine.DrainNotifications(gameSID) {
			env.Notifications = append(env.Notifications, n)
		}
	}
	a.finishNoDrain(w, status, env, sess)
}

func (a *API) finishNoDrain(w http.ResponseWriter, status int, env *Envelope, sess *session) {
	env.Session = a.info(sess)
	if status == http.StatusTooManyRequests && env.Error != nil && env.Error.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(env.Error.RetryAfter))
	}
	a.write(w, status, env)
}

func (a *API) fail(w http.ResponseWriter, sess *session, status int, code, msg string) {
	a.finish(w, status, &Envelope{Error: &ErrorInfo{Code: code, Message: msg}}, sess)
}

func (a *API) methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	a.write(w, http.StatusMethodNotAllowed, &Envelope{Error: &ErrorInfo{Code: CodeMethodNotAllowed, Message: "Use " + allow + "."}})
}

func (a *API) write(w http.ResponseWriter, status int, env *Envelope) {
	if env.Notifications == nil {
		env.Notifications = []any{}
	}
	b, err := json.Marshal(env)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"notifications":[],"error":{"code":"internal_error","message":"encoding the answer failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// createSession opens an API session (counted against the per-address auth limit).
func (a *API) createSession(w http.ResponseWriter, r *http.Request) {
	if err := a.opts.Guard.AuthAttempt(clientIP(r)); err != nil {
		var ge *game.Error
		errors.As(err, &ge)
		w.Header().Set("Retry-After", strconv.Itoa(ge.RetryAfter))
		a.write(w, http.StatusTooManyRequests, &Envelope{Error: &ErrorInfo{Code: CodeRateLimited, Message: ge.Message, RetryAfter: ge.RetryAfter}})
		return
	}
	now := a.opts.Now()
	a.mu.Lock()
	a.sweepLocked(now)
	if len(a.sessions) >= a.opts.MaxSessions {
		a.mu.Unlock()
		w.Header().Set("Retry-After", "60")
		a.write(w, http.StatusServiceUnavailable, &Envelope{Error: &ErrorInfo{Code: CodeRateLimited,
			Message: "Too many open API sessions on this server. retry_after: 60s", RetryAfter: 60}})
		return
	}
	s := &session{id: newID(), created: now, lastSeen: now}
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.write(w, http.StatusOK, &Envelope{
		Result:  "Session created. Send it as the " + SessionHeader + " header on every call; log in with POST /api/v2/spacemolt_auth/login (or register).",
		Session: a.info(s),
	})
}

// session finds the request's API session and renews it; otherwise the error envelope to answer and its status.
func (a *API) session(r *http.Request) (*session, *Envelope, int) {
	id := r.Header.Get(SessionHeader)
	if id == "" {
		return nil, &Envelope{Error: &ErrorInfo{Code: CodeSessionRequired,
			Message: "No " + SessionHeader + " header: create a session with POST /api/v2/session first."}}, http.StatusUnauthorized
	}
	now := a.opts.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s != nil && now.Sub(s.lastSeen) > a.opts.SessionTTL {
		delete(a.sessions, id)
		s = nil
	}
	if s == nil {
		return nil, &Envelope{Error: &ErrorInfo{Code: CodeSessionInvalid,
			Message: "Session not found or expired: create a new one with POST /api/v2/session, then log in."}}, http.StatusUnauthorized
	}
	s.lastSeen = now
	return s, nil, 0
}

func (a *API) info(s *session) *SessionInfo {
	if s == nil {
		return nil
	}
	a.mu.Lock()
	last, gameSID := s.lastSeen, s.gameSID
	a.mu.Unlock()
	info := &SessionInfo{ID: s.id, CreatedAt: s.created.UTC().Format(time.RFC3339), ExpiresAt: last.Add(a.opts.SessionTTL).UTC().Format(time.RFC3339)}
	if gameSID != "" {
		if gs, ok := a.engine.Session(gameSID); ok {
			info.PlayerID = gs.PlayerID
		}
	}
	return info
}

// sweepLocked forgets expired sessions, at most once a minute.
func (a *API) sweepLocked(now time.Time) {
	if now.Sub(a.sweptAt) < time.Minute {
		return
	}
	a.sweptAt = now
	for id, s := range a.sessions {
		if now.Sub(s.lastSeen) > a.opts.SessionTTL {
			delete(a.sessions, id)
		}
	}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
