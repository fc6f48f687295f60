// Package tools is the runner's tool router: each mysis gets one session that speaks SpaceMolt over MCP
// (modelcontextprotocol/go-sdk, Streamable HTTP) and serves Zoea's own search tools from the memory service.
//
// What it hides from the model, on purpose:
//   - credentials: the mysis's SpaceMolt account is claimed (or registered) and stored by the runner, and the
//     password never appears in a prompt, a tool result, a memory or a log (LESSONS 7);
//   - sessions: the MCP transport session and the game session are re-established and the mysis logged in again
//     whenever they expire, and the failed call is retried, without the model noticing (LESSONS 8);
//   - the mysis id: search tools are scoped to the calling mysis by the runner, never by an argument (LESSONS 6).
package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Account is a SpaceMolt login from the memory service's pool.
type Account struct {
	Username string
	Password string
	Empire   string
	MysisID  string
}

// Accounts is the account pool (memory service). Errors are libs/errs kinds; NotFound means "none".
type Accounts interface {
	// AccountForMysis returns the account bound to the mysis.
	AccountForMysis(ctx context.Context, mysisID string) (Account, error)
	// ClaimAccount binds a free account to the mysis.
	ClaimAccount(ctx context.Context, mysisID string) (Account, error)
	// CreateAccount stores a new account, bound to a.MysisID.
	CreateAccount(ctx context.Context, a Account) error
	// ReleaseAccount unbinds the mysis's account (releasing nothing is not an error).
	ReleaseAccount(ctx context.Context, mysisID string) error
}

// Hit is one search result from a mysis's own memories.
type Hit struct {
	MemoryID  int64     `json:"memory_id"`
	Seq       int64     `json:"seq"`
	Turn      int64     `json:"turn"`
	Role      string    `json:"role"`
	Tool      string    `json:"tool,omitempty"`
	Snippet   string    `json:"snippet"`
	CreatedAt time.Time `json:"created_at"`
}

// BroadcastHit is one search result from the swarm's broadcasts.
type BroadcastHit struct {
	BroadcastID string    `json:"broadcast_id"`
	FromMysis   string    `json:"from_mysis,omitempty"`
	Snippet     string    `json:"snippet"`
	CreatedAt   time.Time `json:"created_at"`
}

// SearchOrder is how zoea_search_messages chooses and orders its results.
type SearchOrder string

const (
	// OrderRelevance is best match first over the whole history (the default).
	OrderRelevance SearchOrder = "relevance"
	// OrderRecency is newest match first.
	OrderRecency SearchOrder = "recency"
)

// SearchInfo is what a search says besides its hits.
type SearchInfo struct {
	Matches   int64  // memories holding at least one of the query's words
	Estimated bool   // Matches is a lower bound
	Bounded   bool   // every word was common: only the newest memories holding all of them were ranked
	Note      string // explains an empty or partial answer
}

// Searcher is the memory service's search. The mysis id is always the calling mysis's, filled in by the session.
type Searcher interface {
	SearchMessages(ctx context.Context, mysisID, query string, limit int, order SearchOrder) ([]Hit, SearchInfo, error)
	SearchReasoning(ctx context.Context, mysisID, query string, limit int) ([]Hit, SearchInfo, error)
	SearchBroadcasts(ctx context.Context, query string, limit int) ([]BroadcastHit, error)
	// Recall returns one of the mysis's own memories by id (NotFound for another mysis's or none).
	Recall(ctx context.Context, mysisID string, memoryID int64) (Recalled, error)
}

// Recalled is one memory as zoea_recall returns it: what it was and its full content (a tool result's, a reply's,
// a prompt's), before the cut that bounds a result.
type Recalled struct {
	MemoryID  int64     `json:"memory_id"`
	Seq       int64     `json:"seq"`
	Turn      int64     `json:"turn"`
	Role      string    `json:"role"`
	Tool      string    `json:"tool,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Content   string    `json:"content"`
}

// Config configures the router.
type Config struct {
	// Endpoint is the swarm's SpaceMolt MCP URL, e.g. http://127.0.0.1:7100/mcp. A mysis whose SpaceMoltEndpoint
	// is set plays the same server's other endpoint (EndpointURL).
	Endpoint string
	// HTTPClient defaults to a client with a connection pool sized for a swarm and no overall timeout (travel
	// blocks for many ticks; the caller's context bounds a call).
	HTTPClient *http.Client
	// Empire for registrations (default solarian).
	Empire string
	// RegistrationCode is sent with register when set.
	RegistrationCode string
	// ConnectTimeout bounds one MCP initialize (default 15s).
	ConnectTimeout time.Duration
	// ResultView is what the model reads of a v2 result that carries both: "text" (the rendered text) or
	// "structured" (structuredContent as JSON). Empty selects DefaultResultView. Legacy /mcp results are text only.
	ResultView string
	// MaxWait is the longest wait for action_pending, in_transit or rate_limited the runner spends inside a tool
	// call before calling again, so the model pays no iteration for it (default 30s). Longer waits go back to the
	// model with a note.
	MaxWait time.Duration
	// TickWait is how long action_pending is waited out when the server does not say (default 10s, the live tick).
	TickWait time.Duration
	// UnreachableFor is how long a transport failure is retried, with backoff, before the model is told the game
	// server is unreachable (default 30s).
	UnreachableFor time.Duration
	// AuthPerMinute paces this replica's session creations, logins and registers, which the game limits per client
	// address (30 a minute on the live server, shared by the three, with escalating lock-outs past it): they are
	// spread evenly at this rate, so a swarm started at once logs in over minutes instead of being locked out.
	// 0 or negative: not paced (a simulator without the limit; the runner's default is DefaultAuthPerMinute).
	// Replicas behind one address share the limit: give each its share.
	AuthPerMinute int
	// Sleep waits d or until ctx ends (default a timer); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock (default time.Now).
	Now     func() time.Time
	Logger  *slog.Logger
	Version string
	// Redactor learns every account password a session holds, so that wherever an error or a log quotes one
	// (a game's refusal echoing the login arguments) it is redacted (libs/redact). Nil: not taught.
	Redactor *redact.Redactor
}

// Router opens per-mysis tool sessions.
type Router struct {
	cfg      Config
	accounts Accounts
	search   Searcher
	client   *mcp.Client
	log      *slog.Logger

	mu    sync.Mutex
	tools map[string][]llm.Tool // per endpoint URL, the definitions the last session there listed (Tools)

	authMu   sync.Mutex
	nextAuth time.Time // the earliest time the next session creation, login or register may go out
}

// DefaultAuthPerMinute is the replica's pace of session creations, logins and registers: under the live server's
// 30 a minute per address, with room for a person's client beside the swarm.
const DefaultAuthPerMinute = 24

// paceAuth waits for this replica's next slot for a session creation, login or register (AuthPerMinute), or until
// ctx ends.
func (r *Router) paceAuth(ctx context.Context) error {
	if r.cfg.AuthPerMinute <= 0 {
		return nil
	}
	every := time.Minute / time.Duration(r.cfg.AuthPerMinute)
	r.authMu.Lock()
	now := r.cfg.Now()
	at := r.nextAuth
	if at.Before(now) {
		at = now
	}
	r.nextAuth = at.Add(every)
	r.authMu.Unlock()
	if wait := at.Sub(now); wait > 0 {
		return r.cfg.Sleep(ctx, wait)
	}
	return nil
}

// The SpaceMolt endpoints a mysis can play (mysis.Mysis.SpaceMoltEndpoint); "" is the swarm's (Config.Endpoint).
const (
	EndpointV1 = "v1" // the legacy flat tools at /mcp
	EndpointV2 = "v2" // MCP v2's action-dispatched tools at /mcp/v2
)

// EndpointURL applies an endpoint choice to a SpaceMolt MCP URL: v1 ends the path in /mcp, v2 in /mcp/v2, ""
// keeps the URL.
func EndpointURL(raw, endpoint string) (string, error) {
	if endpoint == "" {
		return raw, nil
	}
	if endpoint != EndpointV1 && endpoint != EndpointV2 {
		return "", fmt.Errorf("endpoint must be v1 or v2, got %q", endpoint)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is not a URL", raw)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v2"), "/mcp")
	u.Path = base + "/mcp"
	if endpoint == EndpointV2 {
		u.Path += "/v2"
	}
	return u.String(), nil
}

// endpointURL is the URL a mysis with this endpoint choice plays. The memory service admits only v1, v2 and "";
// anything else (a record from a newer version) plays the swarm's endpoint rather than none.
func (r *Router) endpointURL(endpoint string) string {
	u, err := EndpointURL(r.cfg.Endpoint, endpoint)
	if err != nil {
		r.log.Warn("unknown SpaceMolt endpoint; playing the swarm's", "endpoint", endpoint, "err", err)
		return r.cfg.Endpoint
	}
	return u
}

// NewRouter builds a router.
func NewRouter(cfg Config, accounts Accounts, search Searcher) *Router {
	if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 4096
		tr.MaxIdleConnsPerHost = 4096
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Empire == "" {
		cfg.Empire = "solarian"
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.ResultView == "" {
		cfg.ResultView = DefaultResultView
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 30 * time.Second
	}
	if cfg.TickWait <= 0 {
		cfg.TickWait = 10 * time.Second
	}
	if cfg.UnreachableFor <= 0 {
		cfg.UnreachableFor = 30 * time.Second
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Router{
		cfg: cfg, accounts: accounts, search: search, log: cfg.Logger,
		client: mcp.NewClient(&mcp.Implementation{Name: "zoea-runner", Version: cfg.Version}, nil),
	}
}

// Open returns a session for m on its SpaceMolt endpoint (m.SpaceMoltEndpoint, "" for the swarm's); nothing happens
// on the network before Prepare.
func (r *Router) Open(m mysis.Mysis) mysis.ToolSession {
	return &Session{r: r, mysisID: m.ID, name: m.Name, endpoint: r.endpointURL(m.SpaceMoltEndpoint), log: r.log.With("mysis_id", m.ID)}
}

// Tools returns the tool definitions a mysis's requests carry on an endpoint ("v1", "v2", "" for the swarm's): the
// game's tools and the search tools, as the last session there listed them, or listed now on a session of their
// own when none has yet (a preview before any mysis ran on this replica). Shared by every mysis on that endpoint.
func (r *Router) Tools(ctx context.Context, endpoint string) ([]llm.Tool, error) {
	u := r.endpointURL(endpoint)
	r.mu.Lock()
	tools := r.tools[u]
	r.mu.Unlock()
	if tools != nil {
		return slices.Clone(tools), nil
	}
	cs, err := r.connect(ctx, u)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	_, tools, err = r.listTools(ctx, cs, u)
	return slices.Clone(tools), err
}

// connect opens a fresh MCP session on the endpoint URL u.
func (r *Router) connect(ctx context.Context, u string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	defer cancel()
	t := &mcp.StreamableClientTransport{
		Endpoint:   u,
		HTTPClient: r.cfg.HTTPClient,
		// Only request/response is needed; a standalone SSE stream per mysis would hold a connection each.
		DisableStandaloneSSE: true,
		MaxRetries:           2,
	}
	cs, err := r.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp connect %s: %w", u, err)
	}
	return cs, nil
}

// Result views (Config.ResultView).
const (
	ViewText       = "text"
	ViewStructured = "structured"
	// DefaultResultView is chosen by the token counts in docs/benchmarks/2026-11-26-mcp-v2-result-tokens.md.
	DefaultResultView = ViewStructured
)

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// usernameFor derives a SpaceMolt username (3–24 of letters, digits, _ and -) from a mysis name.
func usernameFor(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ' || r == '.':
			b.WriteByte('_')
		}
		if b.Len() >= 24 {
			break
		}
	}
	u := b.String()
	for len(u) < 3 {
		u += "_"
	}
	if len(u) > 24 {
		u = u[:24]
	}
	return u
}

// withSuffix makes a retry username after username_taken: the base cut to leave room for "-" and 5 hex chars.
func withSuffix(base string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])[:5]
	if len(base) > 18 {
		base = base[:18]
	}
	return base + "-" + suffix
}

// errorResult is a tool result the model can read.
func errorResult(code, format string, args ...any) mysis.ToolResult {
	return mysis.ToolResult{Content: "Error: " + code + ": " + fmt.Sprintf(format, args...), IsError: true}
}

// gameErrorCode extracts the code of an "Error: <code>: <message>" game result.
func gameErrorCode(text string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "Error: ")
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(rest, ":")
	return strings.TrimSpace(code)
}

// textOf concatenates the text content of a tool result.
func textOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// sessionExpired reports whether err means the MCP transport session is gone. The SDK reports a server's 404 for
// a known session id (SpaceMolt's "Session not initialized") as mcp.ErrSessionMissing, and a call on a connection
// it already closed because of that as mcp.ErrConnectionClosed.
func sessionExpired(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed)
}
