// Package mcpserver is the MCP adapter of the simulator: SpaceMolt's legacy
// flat tools over Streamable HTTP (modelcontextprotocol/go-sdk), with the game
// login bound to the MCP session and answered the way the live server answers.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// Options configure the MCP endpoint.
type Options struct {
	// SessionTimeout closes MCP transport sessions idle this long; later
	// requests with that Mcp-Session-Id get HTTP 404 "Session not initialized".
	// Zero keeps sessions forever.
	SessionTimeout time.Duration
	Logger         *slog.Logger
	Version        string
	// OnUnbind, when set, is called (from its own goroutine) after an MCP
	// session that carried a game login closed and its binding was forgotten.
	// The SDK drops the transport session itself a moment later, so a request
	// with that Mcp-Session-Id may still reach the closed session until then.
	OnUnbind func(mcpSessionID string)
}

// Server serves the game over MCP.
type Server struct {
	engine   *game.Engine
	log      *slog.Logger
	mcp      *mcp.Server
	handler  http.Handler
	onUnbind func(mcpSessionID string)

	// pool is the game-session pool of this endpoint: v1 (/mcp) or v2 (/mcp/v2) ids are not valid on the other.
	pool game.Pool
	// guard, when set (NewGuard), applies the auth limit to login/register and adds restart warnings.
	guard *Guard
	// render turns a game answer into the endpoint's tool result.
	render func(res any, err error) (*mcp.CallToolResult, error)
	// version is the build version get_version reports (v2).
	version string

	mu    sync.Mutex
	bound map[string]string // MCP session id → game session id
}

// New builds the MCP server for engine.
func New(engine *game.Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{engine: engine, log: opts.Logger, bound: map[string]string{}, onUnbind: opts.OnUnbind, pool: game.PoolV1, render: toResult}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "spacemolt-sim", Title: "SpaceMolt (offline simulator)", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "SpaceMolt, an MMO for AI agents. Call register or login first; help explains the rules.",
		Logger:       opts.Logger,
	})
	for _, t := range s.tools() {
		ro := t.readOnly
		s.mcp.AddTool(&mcp.Tool{
			Name: t.name, Description: t.desc, InputSchema: inputSchema(t.params),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, OpenWorldHint: new(false)},
		}, s.handle(t))
	}
	s.mount(opts)
	return s
}

// mount builds the HTTP handler over s.mcp.
func (s *Server) mount(opts Options) {
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: opts.SessionTimeout,
		Logger:         opts.Logger,
	})
	s.handler = sessionNotInitialized(streamable)
}

// Handler is the HTTP handler to mount at /mcp.
func (s *Server) Handler() http.Handler { return s.handler }

// BoundSessions reports how many MCP sessions carry a game login.
func (s *Server) BoundSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bound)
}

func (s *Server) handle(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.invoke(ctx, req, t, req.Params.Arguments)
	}
}

// invoke runs t with raw arguments on behalf of req's MCP session.
func (s *Server) invoke(ctx context.Context, req *mcp.CallToolRequest, t tool, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var mcpID string
	if req.Session != nil {
		mcpID = req.Session.ID()
	}
	a, err := parseArgs(raw, t.params, t.strict)
	c := call{sid: a.str(sessionParam.name), args: a}
	if c.sid == "" && mcpID != "" {
		s.mu.Lock()
		c.sid = s.bound[mcpID]
		s.mu.Unlock()
	}
	if err != nil {
		s.engine.CountRejected(c.sid)
		return s.render(nil, err)
	}
	if c.sid != "" && !t.binds {
		if pool, ok := s.engine.SessionPool(c.sid); ok && pool != s.pool {
			s.engine.CountRejected("")
			return s.render(nil, &game.Error{Code: game.CodeSessionInvalid, Message: "This session belongs to the " +
				string(pool) + " endpoint; v1 (/mcp) and v2 (/mcp/v2) sessions are separate. Call login() again here."})
		}
	}
	var res any
	if t.binds {
		err = s.guard.authCheck(req)
	}
	if err == nil {
		res, err = t.run(ctx, c)
	}
	if err == nil && t.binds && mcpID != "" {
		s.bind(req.Session, sessionIDOf(res))
	}
	out, err := s.render(res, err)
	if w := s.guard.warning(); w != nil && out != nil {
		// Over MCP the live server queues the warning as a notification; the simulator also puts it on every result
		// so a client that only calls tools sees it in time (docs/SPACEMOLT.md).
		out.Meta = mcp.Meta{"server_restart_warning": w}
	}
	return out, err
}

// forgetBindings drops every MCP → game session binding (a restart).
func (s *Server) forgetBindings() {
	s.mu.Lock()
	clear(s.bound)
	s.mu.Unlock()
}

func sessionIDOf(res any) string {
	switch r := res.(type) {
	case *game.RegisterResult:
		return r.SessionID
	case *game.LoginResult:
		return r.SessionID
	case map[string]any: // a v2 answer patched into its v2 form (v2patch.go)
		sid, _ := r["session_id"].(string)
		return sid
	}
	return ""
}

// bind ties a game session to the MCP session, and forgets it when the MCP
// session closes so the map stays bounded.
func (s *Server) bind(ss *mcp.ServerSession, sid string) {
	id := ss.ID()
	s.mu.Lock()
	_, watched := s.bound[id]
	s.bound[id] = sid
	s.mu.Unlock()
	if watched {
		return
	}
	go func() {
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.bound, id)
		s.mu.Unlock()
		if s.onUnbind != nil {
			s.onUnbind(id)
		}
	}()
}

// toResult renders a game answer: JSON text on success, "Error: code: message"
// with isError for rule violations. Anything else (a caller that went away)
// becomes a JSON-RPC error.
func toResult(res any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		var ge *game.Error
		if !errors.As(err, &ge) {
			return nil, err
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: " + ge.Code + ": " + ge.Message}}}, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}

// Close ends every MCP session, which also ends their long-lived SSE streams
// so an HTTP server shutdown does not wait on them.
func (s *Server) Close() {
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}
