package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/text"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// sessionArg is the game's explicit session parameter; the runner fills it in, the model never sees it.
const sessionArg = "session_id"

// gameTool is one SpaceMolt tool as listed by the server.
type gameTool struct {
	name       string
	hasSession bool
}

// Session is one mysis's tool router. Its methods are called from the mysis's actor, one at a time; the mutex
// only guards against misuse.
type Session struct {
	r       *Router
	mysisID string
	name    string
	// endpoint is the MCP URL this session plays (the swarm's, or the mysis's own choice of v1 or v2).
	endpoint string
	log      *slog.Logger

	mu        sync.Mutex
	cs        *mcp.ClientSession
	game      map[string]gameTool
	llmTools  []llm.Tool
	reads     map[string]bool // the calls that change nothing (llm.ReadOnlyCalls of llmTools)
	account   *Account
	sessionID string // the game session id from the last login
	// v2 is set when the server speaks MCP v2 (action-dispatched tools; login is spacemolt_auth action=login).
	v2 bool
	// pauseUntil holds the next game call back until an announced server restart has passed.
	pauseUntil time.Time

	// Recoveries, for tests and logs: MCP sessions re-initialised and game re-logins after a session error; waits
	// spent inside a call on action_pending, in_transit or rate_limited; transport retries; restart pauses.
	reconnects, relogins, waits, retries, pauses int
}

// Prepare connects, loads the tool list and logs the mysis in with its account (claimed or registered on first use).
func (s *Session) Prepare(ctx context.Context) ([]llm.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.connectLocked(ctx); err != nil {
		return nil, err
	}
	if _, err := s.loginLocked(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(s.llmTools), nil
}

// connectLocked opens a fresh MCP session and (re)loads the tool list.
func (s *Session) connectLocked(ctx context.Context) error {
	if s.cs != nil {
		_ = s.cs.Close()
		s.cs = nil
	}
	if err := s.r.paceAuth(ctx); err != nil { // a session creation counts against the game's login limit
		return err
	}
	cs, err := s.r.connect(ctx, s.endpoint)
	if err != nil {
		return &transportError{err}
	}
	game, defs, err := s.r.listTools(ctx, cs, s.endpoint)
	if err != nil {
		_ = cs.Close()
		return err
	}
	_, s.v2 = game[v2AuthTool]
	s.cs, s.game, s.llmTools, s.reads = cs, game, defs, llm.ReadOnlyCalls(defs)
	return nil
}

// v2AuthTool is MCP v2's auth tool; its presence marks a v2 server.
const v2AuthTool = "spacemolt_auth"

// actionArg selects a v2 tool's command.
const actionArg = "action"

// authCall runs login or register the endpoint's way.
func (s *Session) authCall(ctx context.Context, action string, args map[string]any) (*mcp.CallToolResult, error) {
	if err := s.r.paceAuth(ctx); err != nil {
		return nil, err
	}
	if s.v2 {
		args[actionArg] = action
		return s.rawCallLocked(ctx, v2AuthTool, args)
	}
	return s.rawCallLocked(ctx, action, args)
}

// listTools lists the game's tools on cs and returns them by name and as the definitions a mysis's requests carry
// (the game's, then the search tools), which the router also keeps for Router.Tools.
func (r *Router) listTools(ctx context.Context, cs *mcp.ClientSession, endpoint string) (map[string]gameTool, []llm.Tool, error) {
	game := map[string]gameTool{}
	var listed []*mcp.Tool
	v2 := false
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("list tools: %w", err)
		}
		listed = append(listed, t)
		v2 = v2 || t.Name == v2AuthTool
	}
	var defs []llm.Tool
	for _, t := range listed {
		schema, hasSession, err := llmSchema(t.InputSchema)
		if err != nil {
			return nil, nil, fmt.Errorf("tool %s schema: %w", t.Name, err)
		}
		game[t.Name] = gameTool{name: t.Name, hasSession: hasSession}
		def := llm.Tool{Name: t.Name, Description: t.Description, Parameters: schema, ReadOnly: readOnly(t)}
		if !def.ReadOnly {
			def.ReadOnlyActions = readActions(t.Name, schema, v2)
		}
		defs = append(defs, def)
	}
	if len(game) == 0 {
		return nil, nil, errors.New("list tools: the game server offers no tools")
	}
	defs = append(defs, searchTools()...)
	r.mu.Lock()
	if r.tools == nil {
		r.tools = map[string][]llm.Tool{}
	}
	r.tools[endpoint] = defs
	r.mu.Unlock()
	return game, defs, nil
}

// knownReads are SpaceMolt's documented reads (docs/SPACEMOLT.md) that change nothing in the game, for a server that
// does not annotate its tools. Not here on purpose: chat and captains_log_add (rate-limited as reads, but they
// write) and get_notifications (it clears the queue).
var knownReads = map[string]bool{
	"get_status": true, "get_ship": true, "get_cargo": true, "get_system": true, "get_poi": true, "get_nearby": true,
	"get_map": true, "find_route": true, "view_market": true, "captains_log_list": true, "help": true,
	"get_missions": true, "get_active_missions": true, "decline_mission": true, "view_orders": true,
	"estimate_purchase": true, "analyze_market": true, "list_ships": true, "catalog": true, "get_version": true,
	"spacemolt_catalog": true, // MCP v2's one tool without an action: catalog lookups
}

// knownV2Reads are the documented reads among MCP v2's actions (docs/SPACEMOLT.md, "MCP v2"), as "tool.action". A v2
// tool mixes reads and mutations (spacemolt: get_status and travel), so its tool-level ReadOnlyHint is false and
// cannot tell them apart; the action can. Every tool's help is a read too. An action not known here is treated as
// one that may change the game: a call of it cut by a crash is answered "result unknown", never run twice.
var knownV2Reads = map[string]bool{
	"spacemolt.get_status": true, "spacemolt.get_ship": true, "spacemolt.get_cargo": true, "spacemolt.get_system": true,
	"spacemolt.get_poi": true, "spacemolt.get_nearby": true, "spacemolt.get_map": true, "spacemolt.find_route": true,
	"spacemolt.get_commands": true, "spacemolt_market.view_market": true, "spacemolt_social.captains_log_list": true,
	"spacemolt.get_missions": true, "spacemolt.get_active_missions": true, "spacemolt.decline_mission": true,
	"spacemolt.get_version": true, "spacemolt_market.view_orders": true, "spacemolt_market.estimate_purchase": true,
	"spacemolt_market.analyze_market": true, "spacemolt_ship.list_ships": true, "spacemolt_facility.list": true,
}

// readActions returns the read actions of an action-dispatched tool: of the actions its input schema enumerates for
// the action argument, the documented reads; when the schema enumerates none but the tool takes an action (or the
// server is v2, whose every tool does), all of the tool's documented reads. Nil for a legacy /mcp tool.
func readActions(tool string, schema json.RawMessage, v2 bool) []string {
	var s struct {
		Properties map[string]*struct {
			Enum []any `json:"enum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	action, hasAction := s.Properties[actionArg]
	if !hasAction && !v2 {
		return nil
	}
	read := func(a string) bool { return a == "help" || knownV2Reads[tool+"."+a] }
	var out []string
	if action != nil && len(action.Enum) > 0 {
		for _, v := range action.Enum {
			if a, ok := v.(string); ok && read(a) {
				out = append(out, a)
			}
		}
		return out
	}
	out = append(out, "help")
	for k := range knownV2Reads {
		if t, a, _ := strings.Cut(k, "."); t == tool {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// readOnly reports whether a call of t whose result was lost may be run again: the server says it is read-only or
// idempotent, or it is a documented SpaceMolt read.
func readOnly(t *mcp.Tool) bool {
	if a := t.Annotations; a != nil && (a.ReadOnlyHint || a.IdempotentHint) {
		return true
	}
	return knownReads[t.Name]
}

// llmSchema removes the session parameter from a tool's input schema: the model must not see or invent it. The
// schema is read as a jsonschema.Schema, which keeps keywords it does not model (Extra) and renders deterministically.
func llmSchema(in any) (json.RawMessage, bool, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, false, err
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil || string(raw) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`), false, nil
	}
	_, has := schema.Properties[sessionArg]
	delete(schema.Properties, sessionArg)
	schema.Required = slices.DeleteFunc(schema.Required, func(r string) bool { return r == sessionArg })
	out, err := json.Marshal(schema)
	return out, has, err
}

// Close ends the MCP session.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		_ = s.cs.Close()
		s.cs = nil
	}
}

// Call executes one tool call of the model.
func (s *Session) Call(ctx context.Context, c chat.ToolCall) (mysis.ToolResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	args, err := parseArgs(c.Arguments)
	if err != nil {
		return errorResult("invalid_arguments", "arguments must be a JSON object: %v", err), nil
	}
	switch c.Name {
	case toolSearchMessages, toolSearchReasoning, toolSearchBroadcasts:
		return s.searchLocked(ctx, c.Name, args), nil
	case toolRecall:
		return s.recallLocked(ctx, args), nil
	case v2AuthTool:
		if a, _ := args[actionArg].(string); a == "login" || a == "register" {
			text, err := s.loginLocked(ctx)
			if err != nil {
				return mysis.ToolResult{}, err
			}
			return s.result(text, text, false), nil
		}
	case "register", "login":
		if s.v2 {
			break // no such tool on v2: unknown_tool below
		}
		// The runner owns the account: whatever the model passed, log in with the stored one and give back the
		// game's answer with the password removed.
		text, err := s.loginLocked(ctx)
		if err != nil {
			return mysis.ToolResult{}, err
		}
		return s.result(text, text, false), nil
	}
	if _, ok := s.game[c.Name]; !ok {
		return errorResult("unknown_tool", "there is no tool named %q", c.Name), nil
	}
	return s.callGameLocked(ctx, c.Name, args)
}

func parseArgs(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(text), &args); err != nil {
		return nil, err
	}
	if args == nil {
		return nil, errors.New("null is not an object")
	}
	return args, nil
}

// callGameLocked calls a game tool and spends no model iteration on what the runner can handle itself:
//   - an expired MCP session is re-initialised and a lost game session logged in again (callOnceLocked);
//   - action_pending, in_transit and rate_limited are waited out and the call made again, as long as the waits of
//     this call stay within MaxWait; a longer wait goes back to the model with a note;
//   - a transport failure (the request never reached the server) is retried with backoff for UnreachableFor, then
//     answered "the game server is unreachable";
//   - after a server_restart_warning the next call waits until the restart has passed.
func (s *Session) callGameLocked(ctx context.Context, name string, args map[string]any) (mysis.ToolResult, error) {
	if err := s.pauseLocked(ctx); err != nil {
		return mysis.ToolResult{}, err
	}
	cfg := s.r.cfg
	giveUp := cfg.Now().Add(cfg.UnreachableFor)
	backoff := 250 * time.Millisecond
	var waited time.Duration
	attempts := 0
	for {
		attempts++
		res, err := s.callOnceLocked(ctx, name, args)
		if err != nil {
			refusedFor, refused := serverRefusal(err)
			if ctx.Err() == nil && transportFailure(err) && !refused && !(connectFailure(err) || dialFailure(err) || s.isRead(name, args)) {
				// The request may have reached the server before the connection broke: sending it again could run
				// the action twice.
				s.log.Warn("connection broke during a game action; its outcome is unknown", "tool", name, "err", err)
				return errorResult("server_unreachable", "the connection to the game server broke during this call, so whether it ran is unknown. Check with a read (get_status) before repeating it."), nil
			}
			if ctx.Err() != nil || !(transportFailure(err) || refused) {
				var we *jsonrpc.Error
				if errors.As(err, &we) && !sessionExpired(err) {
					// The server rejected the call itself (bad params and the like): the model can read and fix that.
					return errorResult("invalid_request", "%s", we.Message), nil
				}
				return mysis.ToolResult{}, fmt.Errorf("call %s: %w", name, err)
			}
			if !cfg.Now().Before(giveUp) {
				s.log.Warn("game server unreachable; telling the model", "tool", name, "attempts", attempts, "err", err)
				return errorResult("server_unreachable", "the game server is unreachable (%d attempts over %s); nothing was done. Try again in a while.",
					attempts, cfg.UnreachableFor.Round(time.Second)), nil
			}
			s.retries++
			wait := max(backoff, refusedFor)
			s.log.Info("game server unreachable; retrying", "tool", name, "in", wait, "err", err)
			if err := cfg.Sleep(ctx, wait); err != nil {
				return mysis.ToolResult{}, err
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		s.noteWarning(res)
		text, data := s.view(res), dataOf(res)
		if res.IsError {
			if d, code, ok := s.waitFor(res, text); ok {
				if waited+d > cfg.MaxWait {
					text += fmt.Sprintf("\n(The runner did not wait: %s is longer than the %s it waits inside a call. Do something else, or call again later.)",
						d, cfg.MaxWait)
					return s.result(text, data, true), nil
				}
				s.waits++
				s.log.Info("waiting inside the call", "tool", name, "code", code, "wait", d)
				if err := cfg.Sleep(ctx, d); err != nil {
					return mysis.ToolResult{}, err
				}
				waited += d
				continue
			}
		}
		return s.result(text, data, res.IsError), nil
	}
}

// callOnceLocked makes one call, hiding expired sessions: an expired MCP session is re-initialised and the mysis
// logged in again; a game session error triggers one re-login. Either way the call is made again once.
func (s *Session) callOnceLocked(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := s.rawCallLocked(ctx, name, maps.Clone(args))
	if err != nil && sessionExpired(err) && ctx.Err() == nil {
		s.log.Info("mcp session expired; re-initialising", "tool", name, "err", err)
		s.reconnects++
		if err := s.connectLocked(ctx); err != nil {
			return nil, err
		}
		if _, err := s.loginLocked(ctx); err != nil {
			return nil, err
		}
		res, err = s.rawCallLocked(ctx, name, maps.Clone(args))
	}
	if err != nil {
		return nil, err
	}
	if res.IsError {
		switch code := gameErrorCode(textOf(res)); code {
		case "session_invalid", "session_required", "not_authenticated":
			s.log.Info("game session lost; logging in again", "tool", name, "code", code)
			s.relogins++
			if _, err := s.loginLocked(ctx); err != nil {
				return nil, err
			}
			return s.rawCallLocked(ctx, name, maps.Clone(args))
		}
	}
	return res, nil
}

// transportError marks a failure to reach the server at all (connect or initialize failed).
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// codeRejected is the SDK's "rejected by transport" (jsonrpc2.ErrRejected): the request never reached the server.
const codeRejected = -32005

// callLevel are JSON-RPC codes by which a server refuses the call itself; the model can fix those.
var callLevel = map[int64]bool{-32600: true, -32601: true, -32602: true, -32021: true}

// transportFailure reports whether err means the request did not reach the game server, so making it again
// cannot run an action twice: a failed connect, or the SDK's ErrRejected without a call-level refusal in the chain.
func transportFailure(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	rejected, refused := false, false
	walkErrors(err, func(e error) {
		if je, ok := e.(*jsonrpc.Error); ok {
			if je.Code == codeRejected {
				rejected = true
			} else if callLevel[je.Code] {
				refused = true
			}
		}
	})
	return rejected && !refused
}

// connectFailure reports whether err came from opening the MCP session, before the call was sent.
func connectFailure(err error) bool {
	var te *transportError
	return errors.As(err, &te)
}

// serverRefusal reports an HTTP refusal with Retry-After (503 while the server restarts, 429 over a session cap),
// which the simulator and the SDK carry as a JSON-RPC error with data.retry_after: the call was not run, so it may be
// sent again after the wait.
func serverRefusal(err error) (time.Duration, bool) {
	var wait time.Duration
	found := false
	walkErrors(err, func(e error) {
		je, ok := e.(*jsonrpc.Error)
		if !ok || len(je.Data) == 0 {
			return
		}
		var d struct {
			RetryAfter *int `json:"retry_after"`
		}
		if json.Unmarshal(je.Data, &d) == nil && d.RetryAfter != nil {
			wait, found = time.Duration(*d.RetryAfter)*time.Second, true
		}
	})
	if !found {
		// go-sdk v1.8 reports a 503 or 429 to a request in a session by the status text alone ("sending
		// \"tools/call\": Service Unavailable"), without the body or Retry-After: back off as for a transport error.
		msg := err.Error()
		found = strings.HasSuffix(msg, http.StatusText(http.StatusServiceUnavailable)) || strings.HasSuffix(msg, http.StatusText(http.StatusTooManyRequests))
	}
	return min(wait, 30*time.Second), found
}

// dialFailure reports whether err is a failed connection attempt: the request cannot have reached the server, so even
// a mutation may be sent again. Other transport errors (a connection cut mid-call) are retried only for reads.
func dialFailure(err error) bool {
	dial := false
	walkErrors(err, func(e error) {
		if oe, ok := e.(*net.OpError); ok && oe.Op == "dial" {
			dial = true
		}
	})
	return dial
}

// isRead reports whether a call changes nothing in the game, judged as a resumed call is (llm.ReadOnlyCall): by the
// tool, and for an action-dispatched tool (v2) by its action.
func (s *Session) isRead(name string, args map[string]any) bool {
	if s.reads[name] {
		return true
	}
	a, _ := args[actionArg].(string)
	return a != "" && s.reads[name+"."+a]
}

func walkErrors(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, f)
		}
	}
}

// waitFor reads how long to wait before making a refused call again: action_pending (the next tick), in_transit
// (seconds until arrival) and rate_limited (retry_after), from structuredContent.error when the server sends it,
// else from the message.
func (s *Session) waitFor(res *mcp.CallToolResult, text string) (time.Duration, string, bool) {
	code := gameErrorCode(textOf(res))
	switch code {
	case "action_pending", "in_transit", "rate_limited":
	default:
		return 0, "", false
	}
	secs := 0
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			var sc struct {
				Error struct {
					WaitSeconds int `json:"wait_seconds"`
					RetryAfter  int `json:"retry_after"`
					Remaining   int `json:"seconds_remaining"`
				} `json:"error"`
			}
			if json.Unmarshal(raw, &sc) == nil {
				secs = max(sc.Error.WaitSeconds, sc.Error.RetryAfter, sc.Error.Remaining)
			}
		}
	}
	if secs == 0 {
		if m := waitPattern.FindStringSubmatch(text); m != nil {
			secs, _ = strconv.Atoi(m[1])
		}
	}
	if secs > 0 {
		return time.Duration(secs) * time.Second, code, true
	}
	if code == "action_pending" {
		return s.r.cfg.TickWait, code, true
	}
	return 0, "", false
}

// waitPattern finds the seconds in the legacy messages ("arrives in 40 seconds", "retry_after: 12s").
var waitPattern = regexp.MustCompile(`(?:arrives in|retry_after:?|wait_seconds:?) ?(\d+) ?s`)

// noteWarning remembers a server_restart_warning (in a result's _meta) so the next call waits the restart out.
func (s *Session) noteWarning(res *mcp.CallToolResult) {
	w, ok := res.Meta["server_restart_warning"].(map[string]any)
	if !ok {
		return
	}
	secs, _ := w["seconds_until_restart"].(float64)
	if secs <= 0 {
		return
	}
	until := s.r.cfg.Now().Add(time.Duration(secs)*time.Second + time.Second)
	if until.After(s.pauseUntil) {
		s.log.Info("the game server announced a restart; pausing game calls until it has passed", "seconds", secs)
		s.pauseUntil = until
	}
}

// pauseLocked waits until an announced restart has passed.
func (s *Session) pauseLocked(ctx context.Context) error {
	if s.pauseUntil.IsZero() {
		return nil
	}
	d := s.pauseUntil.Sub(s.r.cfg.Now())
	s.pauseUntil = time.Time{}
	if d <= 0 {
		return nil
	}
	s.pauses++
	return s.r.cfg.Sleep(ctx, d)
}

// view is what the model reads of a result: the text, or for a successful v2 result with ResultView structured its
// structuredContent as JSON. An error is always its text, "Error: <code>: <message>", which names the code.
func (s *Session) view(res *mcp.CallToolResult) string {
	if s.v2 && s.r.cfg.ResultView == ViewStructured && !res.IsError && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return textOf(res)
}

// dataOf is a result as JSON for the runner's own reading (session id, password, credits): structuredContent
// when present, else the text (the legacy endpoint's text is JSON).
func dataOf(res *mcp.CallToolResult) string {
	if res != nil && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return textOf(res)
}

func (s *Session) rawCallLocked(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	if s.cs == nil {
		if err := s.connectLocked(ctx); err != nil {
			return nil, err
		}
	}
	if t := s.game[name]; t.hasSession {
		if s.sessionID != "" {
			args[sessionArg] = s.sessionID
		} else {
			delete(args, sessionArg)
		}
	}
	return s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// loginLocked makes sure the mysis has an account and logs it in; it returns the game's login (or register)
// result with the password removed.
func (s *Session) loginLocked(ctx context.Context) (string, error) {
	if s.cs == nil {
		if err := s.connectLocked(ctx); err != nil {
			return "", err
		}
	}
	if s.account == nil {
		text, err := s.ensureAccountLocked(ctx)
		if err != nil {
			return "", err
		}
		if text != "" {
			return s.redact(text), nil // registered: already logged in
		}
	}
	res, err := s.authCall(ctx, "login", map[string]any{"username": s.account.Username, "password": s.account.Password})
	if err != nil && sessionExpired(err) && ctx.Err() == nil {
		if err := s.connectLocked(ctx); err != nil {
			return "", err
		}
		res, err = s.authCall(ctx, "login", map[string]any{"username": s.account.Username, "password": s.account.Password})
	}
	// The live server limits logins per address (30 a minute with all session creations, escalating lock-outs): a
	// short refusal is waited out here, as for game actions.
	var waited time.Duration
	for err == nil && res.IsError && gameErrorCode(textOf(res)) == "rate_limited" {
		d, _, ok := s.waitFor(res, textOf(res))
		if !ok || waited+d > s.r.cfg.MaxWait {
			break
		}
		s.waits++
		if err := s.r.cfg.Sleep(ctx, d); err != nil {
			return "", err
		}
		waited += d
		res, err = s.authCall(ctx, "login", map[string]any{"username": s.account.Username, "password": s.account.Password})
	}
	if err != nil {
		return "", fmt.Errorf("login %s: %w", s.account.Username, err)
	}
	text := textOf(res)
	if res.IsError && gameErrorCode(text) == "auth_failed" {
		// The game no longer knows this login (a fresh simulator, a wiped account). Retrying it forever would
		// leave the mysis errored; registering the same username again gets it playing and renews the stored
		// password in place. Releasing the dead account to the pool instead would hand it to the next mysis, which
		// would fail the same way, and the re-registration would collide with the released row.
		s.log.Warn("stored account rejected by the game; registering it again", "username", s.account.Username)
		stale := s.account.Username
		s.account = nil
		text, err := s.registerLocked(ctx, stale)
		if err != nil {
			return "", err
		}
		return s.redact(text), nil
	}
	if res.IsError {
		return "", fmt.Errorf("login %s: %s", s.account.Username, s.redact(text))
	}
	s.sessionID = sessionIDOf(dataOf(res))
	return s.redact(s.view(res)), nil
}

// ensureAccountLocked finds the mysis's account: the one bound to it, else a free one from the pool, else a new
// registration (whose result it returns, as register also logs in).
func (s *Session) ensureAccountLocked(ctx context.Context) (string, error) {
	a, err := s.r.accounts.AccountForMysis(ctx, s.mysisID)
	if err == nil {
		s.useAccount(&a)
		return "", nil
	}
	if !errs.Is(err, errs.NotFound) {
		return "", fmt.Errorf("account for mysis: %w", err)
	}
	a, err = s.r.accounts.ClaimAccount(ctx, s.mysisID)
	if err == nil {
		s.useAccount(&a)
		return "", nil
	}
	if !errs.Is(err, errs.NotFound) {
		return "", fmt.Errorf("claim account: %w", err)
	}
	return s.registerLocked(ctx, "")
}

// registerLocked registers a new game account for the mysis, stores it bound to the mysis and returns the register
// result (register also logs in). stale is the username of an account the mysis still holds but the game rejected
// ("" when it holds none): it is tried first, and released only if the game gave that name to someone else.
func (s *Session) registerLocked(ctx context.Context, stale string) (string, error) {
	username := usernameFor(s.name)
	if stale != "" {
		username = stale
	}
	for attempt := range 5 {
		if attempt > 0 {
			username = withSuffix(usernameFor(s.name))
		}
		args := map[string]any{"username": username, "empire": s.r.cfg.Empire}
		if s.r.cfg.RegistrationCode != "" {
			args["registration_code"] = s.r.cfg.RegistrationCode
		}
		res, err := s.authCall(ctx, "register", args)
		if err != nil {
			return "", fmt.Errorf("register: %w", err)
		}
		text := textOf(res)
		if res.IsError {
			if gameErrorCode(text) == "username_taken" {
				continue
			}
			return "", fmt.Errorf("register %s: %s", username, text)
		}
		var reg struct {
			Password  string `json:"password"`
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal([]byte(dataOf(res)), &reg); err != nil || reg.Password == "" {
			return "", fmt.Errorf("register %s: no password in the result", username)
		}
		if stale != "" && username != stale {
			// The mysis may hold one account: let go of the dead one before storing its replacement.
			if err := s.r.accounts.ReleaseAccount(ctx, s.mysisID); err != nil {
				return "", fmt.Errorf("release rejected account %s: %w", stale, err)
			}
			stale = ""
		}
		acct := Account{Username: username, Password: reg.Password, Empire: s.r.cfg.Empire, MysisID: s.mysisID}
		s.r.cfg.Redactor.Add(acct.Password) // known before anything can fail and quote it
		if err := s.r.accounts.CreateAccount(ctx, acct); err != nil {
			return "", fmt.Errorf("store account %s: %w", username, err)
		}
		s.account, s.sessionID = &acct, reg.SessionID
		s.log.Info("registered a SpaceMolt account", "username", username)
		return s.view(res), nil
	}
	return "", fmt.Errorf("register: no free username for %q after 5 attempts", s.name)
}

// useAccount makes a the session's account and teaches the runner's redactor its password.
func (s *Session) useAccount(a *Account) {
	s.r.cfg.Redactor.Add(a.Password)
	s.account = a
}

func sessionIDOf(text string) string {
	var r struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal([]byte(text), &r)
	return r.SessionID
}

// result builds what the model reads: the game's text with credentials removed, plus the credits when the data
// (the result as JSON) reports them.
func (s *Session) result(text, data string, isError bool) mysis.ToolResult {
	text = s.redact(text)
	res := mysis.ToolResult{Content: text, IsError: isError}
	if !isError {
		res.Credits, res.Ship = stateOf(data, time.Now())
	}
	return res
}

// redact removes credentials from a result: password and session_id fields, and any occurrence of the account's
// password or of the tracked game session id. A session id is a bearer credential too — whoever holds it drives the
// player from another MCP session — so it is neither stored (where search would find it) nor shown to the model;
// the runner injects it into the calls that want it (rawCallLocked).
func (s *Session) redact(text string) string {
	if strings.Contains(text, "password") || strings.Contains(text, sessionArg) {
		var v any
		if json.Unmarshal([]byte(text), &v) == nil {
			dropped := dropKey(v, "password")
			dropped = dropKey(v, sessionArg) || dropped
			if dropped {
				if b, err := json.Marshal(v); err == nil {
					text = string(b)
				}
			}
		}
	}
	if s.account != nil && s.account.Password != "" && strings.Contains(text, s.account.Password) {
		text = strings.ReplaceAll(text, s.account.Password, "[redacted]")
	}
	if len(s.sessionID) >= 8 && strings.Contains(text, s.sessionID) {
		text = strings.ReplaceAll(text, s.sessionID, "[redacted]")
	}
	return text
}

func dropKey(v any, key string) bool {
	found := false
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t[key]; ok {
			delete(t, key)
			found = true
		}
		for _, c := range t {
			found = dropKey(c, key) || found
		}
	case []any:
		for _, c := range t {
			found = dropKey(c, key) || found
		}
	}
	return found
}

// statusResult is the part of a get_status result (the published v1 description's names) a commander's view shows.
type statusResult struct {
	Player *struct {
		Credits       *int64 `json:"credits"`
		CurrentSystem string `json:"current_system"`
		CurrentPOI    string `json:"current_poi"`
		DockedAtBase  string `json:"docked_at_base"`
		Stats         *struct {
			CreditsEarned *int64 `json:"credits_earned"`
		} `json:"stats"`
	} `json:"player"`
	Ship *struct {
		ClassID       string            `json:"class_id"`
		Hull          int64             `json:"hull"`
		MaxHull       int64             `json:"max_hull"`
		Shield        int64             `json:"shield"`
		MaxShield     int64             `json:"max_shield"`
		Fuel          int64             `json:"fuel"`
		MaxFuel       int64             `json:"max_fuel"`
		CargoUsed     int64             `json:"cargo_used"`
		CargoCapacity int64             `json:"cargo_capacity"`
		Cargo         []mysis.CargoItem `json:"cargo"`
	} `json:"ship"`
	// Details holds the same under a v2 result's state delta (the action's own result).
	Details *statusResult `json:"details"`
	// Location and Cargo are where SpaceMolt's v2 state blob (get_status and get_state on /mcp/v2 and /api/v2)
	// keeps the position and the hold: its player carries neither (docs/SPACEMOLT.md, "API v2 results").
	Location *struct {
		SystemID string  `json:"system_id"`
		POIID    string  `json:"poi_id"`
		DockedAt *string `json:"docked_at"`
	} `json:"location"`
	Cargo []mysis.CargoItem `json:"cargo"`
}

// stateOf reads, in one pass over a result, the player's credits (player.credits: get_status, login) and the ship
// (shipOf); nil for what the result does not report.
func stateOf(text string, at time.Time) (credits *int64, ship *mysis.Ship) {
	hasCredits := strings.Contains(text, `"credits"`)
	hasShip := strings.Contains(text, `"max_hull"`) && (strings.Contains(text, `"current_system"`) || strings.Contains(text, `"system_id"`))
	if !hasCredits && !hasShip {
		return nil, nil
	}
	var r statusResult
	if json.Unmarshal([]byte(text), &r) != nil {
		return nil, nil
	}
	if r.Player != nil {
		credits = r.Player.Credits
	}
	if hasShip {
		ship = r.ship(at)
	}
	return credits, ship
}

// ship is where the player is and what its ship holds when the result reports both a player with a location and a
// ship with its limits (get_status; on v2 also under details or in the state blob), else nil: a partial report (a
// travel's arrival, a sale's credits) would show a ship with zero hull, so it is not taken.
func (r statusResult) ship(at time.Time) *mysis.Ship {
	if (r.Player == nil || r.Ship == nil) && r.Details != nil {
		r = *r.Details
	}
	if r.Player != nil && r.Player.CurrentSystem == "" && r.Location != nil {
		// The v2 state blob: the position from location, the hold from the top-level cargo.
		r.Player.CurrentSystem, r.Player.CurrentPOI = r.Location.SystemID, r.Location.POIID
		if r.Location.DockedAt != nil {
			r.Player.DockedAtBase = *r.Location.DockedAt
		}
		if r.Ship != nil && r.Ship.Cargo == nil {
			r.Ship.Cargo = r.Cargo
		}
	}
	if r.Player == nil || r.Ship == nil || r.Player.CurrentSystem == "" || r.Ship.MaxHull <= 0 {
		return nil
	}
	p, sh := r.Player, r.Ship
	out := &mysis.Ship{
		System: p.CurrentSystem, POI: p.CurrentPOI, DockedAt: p.DockedAtBase, Class: sh.ClassID,
		Hull: sh.Hull, MaxHull: sh.MaxHull, Shield: sh.Shield, MaxShield: sh.MaxShield, Fuel: sh.Fuel, MaxFuel: sh.MaxFuel,
		CargoUsed: sh.CargoUsed, CargoCapacity: sh.CargoCapacity, Cargo: sh.Cargo, CreditsEarned: -1, At: at,
	}
	if p.Stats != nil && p.Stats.CreditsEarned != nil {
		out.CreditsEarned = *p.Stats.CreditsEarned
	}
	return out
}

// Search tools.
const (
	toolSearchMessages   = "zoea_search_messages"
	toolSearchReasoning  = "zoea_search_reasoning"
	toolSearchBroadcasts = "zoea_search_broadcasts"
	toolRecall           = "zoea_recall"
)

// recallMaxBytes bounds what one zoea_recall returns: a result the composer dropped or cut comes back whole up to
// this, with a note of what the cut left out (the composer still fits it to the budget like any result).
const recallMaxBytes = 32 << 10

// recallSchema is zoea_recall's input: one memory id.
func recallSchema() json.RawMessage {
	schema := jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"id": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Description: "The memory id, the number after # in a note like \"memory #123\" or \"get_poi #123\"."},
		},
		Required:             []string{"id"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	raw, _ := json.Marshal(schema)
	return raw
}

// recallLocked answers zoea_recall: the mysis's own memory by id, its content cut at recallMaxBytes.
func (s *Session) recallLocked(ctx context.Context, args map[string]any) mysis.ToolResult {
	for k := range args {
		if k != "id" {
			return errorResult("invalid_arguments", "unknown parameter %q: zoea_recall takes only id (a memory id, the number after #)", k)
		}
	}
	f, ok := args["id"].(float64)
	if !ok || f != float64(int64(f)) || f < 1 {
		return errorResult("invalid_arguments", "id must be a positive integer: the memory id after # in a note such as \"memory #123\"")
	}
	m, err := s.r.search.Recall(ctx, s.mysisID, int64(f))
	switch {
	case errs.Is(err, errs.NotFound):
		return errorResult("not_found", "you have no memory #%d: use an id from a note or a search result", int64(f))
	case err != nil:
		s.log.Warn("recall failed", "memory_id", int64(f), "err", err)
		return errorResult("recall_unavailable", "recall failed, try again later")
	}
	if len(m.Content) > recallMaxBytes {
		m.Content = text.Clip(m.Content, recallMaxBytes, fmt.Sprintf("…[cut: %d more bytes; zoea_search_messages finds what you need in it]", len(m.Content)-recallMaxBytes))
	}
	b, _ := json.Marshal(m)
	return mysis.ToolResult{Content: s.redact(string(b))}
}

// searchSchema is the input schema of the zoea_search_* tools; withOrder adds the message search's order.
func searchSchema(withOrder bool) json.RawMessage {
	schema := jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"query": {Type: "string", Description: `What you are looking for, in plain words or as a question ("where did I sell copper ore?"). Every word counts, none is required: rare words (names, places, ids like iron_ore, numbers) weigh most, so include them; other word forms match (went/go, ores/ore). "exact phrase" requires the phrase, -word excludes.`},
			"limit": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(50.0), Description: "Maximum results (default 10)."},
		},
		PropertyOrder:        []string{"query", "limit"},
		Required:             []string{"query"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}, // false: only the listed properties
	}
	if withOrder {
		// The message search also finds tool calls by name and arguments, and can list the newest matches first.
		schema.Properties["order"] = &jsonschema.Schema{Type: "string", Enum: []any{"relevance", "recency"},
			Description: "relevance (default): best matches first, over your whole history however old. recency: newest matches first, for what happened most recently (e.g. your last sell of titanium_ore)."}
		schema.PropertyOrder = append(schema.PropertyOrder, "order")
	}
	// A static schema always marshals; TestSearchSchema pins the bytes.
	raw, _ := json.Marshal(schema)
	return raw
}

func searchTools() []llm.Tool {
	plain := searchSchema(false)
	return []llm.Tool{
		{Name: toolSearchMessages, Parameters: searchSchema(true), ReadOnly: true,
			Description: "Search everything you have seen and said before, however long ago (your own messages, orders, tool calls with their arguments, and tool results), best match first or, with order recency, newest first. Use it to recall facts that are no longer in view: prices, routes, ids, past results, what you did last. Ask in your own words and name the specifics you remember (a station, a player, an item like titanium_ore, a tool like sell); the answer says how many memories matched. Few or poor results: try other words for the same thing."},
		{Name: toolSearchReasoning, Parameters: plain, ReadOnly: true,
			Description: "Search your own past reasoning, best match first, however old: why you decided something earlier. Ask in plain words, with the specifics you remember."},
		{Name: toolSearchBroadcasts, Parameters: plain, ReadOnly: true,
			Description: "Search the commander's broadcasts to the whole swarm, best match first: missions and standing orders. Ask in plain words."},
		{Name: toolRecall, Parameters: recallSchema(), ReadOnly: true,
			Description: "Get back one of your own earlier memories in full by its id: a tool result or reply that a note in your history names as dropped, compacted, superseded or cut (\"memory #123\", \"travel #123\"), or a search result's memory_id."},
	}
}

func (s *Session) searchLocked(ctx context.Context, name string, args map[string]any) mysis.ToolResult {
	var extra []string
	for k := range args {
		if k != "query" && k != "limit" && (k != "order" || name != toolSearchMessages) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		accepted := "query and limit"
		if name == toolSearchMessages {
			accepted = "query, limit and order"
		}
		return errorResult("invalid_arguments", "unknown parameter(s) %v: only %s are accepted; search always covers your own memories", extra, accepted)
	}
	query, _ := args["query"].(string)
	if strings.TrimSpace(query) == "" {
		return errorResult("invalid_arguments", "query must be a non-empty string")
	}
	limit := 10
	if v, ok := args["limit"]; ok {
		f, isNum := v.(float64)
		if !isNum || f != float64(int(f)) || f < 1 || f > 50 {
			return errorResult("invalid_arguments", "limit must be an integer from 1 to 50")
		}
		limit = int(f)
	}
	order := OrderRelevance
	if v, ok := args["order"]; ok {
		o, _ := v.(string)
		if order = SearchOrder(o); order != OrderRelevance && order != OrderRecency {
			return errorResult("invalid_arguments", `order must be "relevance" or "recency"`)
		}
	}
	var (
		out  any
		n    int
		info SearchInfo
		err  error
	)
	switch name {
	case toolSearchMessages:
		var hits []Hit
		hits, info, err = s.r.search.SearchMessages(ctx, s.mysisID, query, limit, order)
		out, n = hits, len(hits)
	case toolSearchReasoning:
		var hits []Hit
		hits, info, err = s.r.search.SearchReasoning(ctx, s.mysisID, query, limit)
		out, n = hits, len(hits)
	default:
		var hits []BroadcastHit
		hits, err = s.r.search.SearchBroadcasts(ctx, query, limit)
		out, n = hits, len(hits)
	}
	if err != nil {
		if errs.Is(err, errs.Invalid) {
			return errorResult("invalid_arguments", "%s", err.Error())
		}
		s.log.Warn("search failed", "tool", name, "err", err)
		return errorResult("search_unavailable", "search failed, try again later")
	}
	res := map[string]any{"results": out, "count": n}
	if name != toolSearchBroadcasts {
		// How many memories matched, so the model knows whether to narrow or reword.
		if info.Estimated {
			res["matched"] = fmt.Sprintf("at least %d", info.Matches)
		} else {
			res["matched"] = info.Matches
		}
		if info.Note != "" {
			res["note"] = info.Note
		}
	}
	if name == toolSearchMessages {
		res["order"] = order
	}
	b, _ := json.Marshal(res)
	return mysis.ToolResult{Content: s.redact(string(b))}
}
