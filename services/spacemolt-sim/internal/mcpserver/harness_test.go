package mcpserver_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/mcpserver"
)

// liveProtocol is what game.spacemolt.com speaks.
const liveProtocol = "2025-03-26"

type simOptions struct {
	cfg game.Config
	// manual leaves ticking to the test (engine.Tick / tickOnDemand) instead of Run.
	manual     bool
	mcpTimeout time.Duration
	// onUnbind is mcpserver.Options.OnUnbind.
	onUnbind func(mcpSessionID string)
	// inMemory serves over an in-memory network instead of a loopback listener, so the whole stack (HTTP server,
	// SDK, clients) can run inside a testing/synctest bubble; clients must use sim.client.
	inMemory bool
}

// sim is a simulator behind a real HTTP listener.
type sim struct {
	t      testing.TB
	url    string
	urlV2  string // the /mcp/v2 endpoint over the same engine
	engine *game.Engine
	srv    *mcpserver.Server
	srvV2  *mcpserver.Server
	clock  *clock
	// client reaches the simulator (nil: http.DefaultClient over loopback).
	client *http.Client
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newSim(t testing.TB, o simOptions) *sim {
	t.Helper()
	if o.cfg.Tick == 0 {
		o.cfg.Tick = 2 * time.Millisecond
	}
	if o.cfg.Seed == 0 {
		o.cfg.Seed = 1
	}
	s := &sim{t: t}
	if o.manual {
		s.clock = &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
		o.cfg.Now = s.clock.Now
	}
	s.engine = game.New(o.cfg)
	if !o.manual {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = s.engine.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	s.srv = mcpserver.New(s.engine, mcpserver.Options{SessionTimeout: o.mcpTimeout, OnUnbind: o.onUnbind})
	s.srvV2 = mcpserver.NewV2(s.engine, mcpserver.Options{SessionTimeout: o.mcpTimeout, OnUnbind: o.onUnbind})
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.srv.Handler())
	mux.Handle("/mcp/v2", s.srvV2.Handler())
	if o.inMemory {
		lis := newMemListener()
		hs := &http.Server{Handler: mux}
		served := make(chan struct{})
		go func() { defer close(served); _ = hs.Serve(lis) }()
		transport := &http.Transport{DialContext: lis.dial}
		s.client = &http.Client{Transport: transport}
		s.url = "http://sim.test/mcp"
		s.urlV2 = s.url + "/v2"
		t.Cleanup(func() {
			_ = hs.Close()
			<-served
			transport.CloseIdleConnections()
		})
		t.Cleanup(s.srv.Close) // runs first: ends the clients' SSE streams
		t.Cleanup(s.srvV2.Close)
		return s
	}
	ts := httptest.NewServer(mux)
	s.url = ts.URL + "/mcp"
	s.urlV2 = s.url + "/v2"
	t.Cleanup(ts.Close)
	t.Cleanup(s.srv.Close) // runs before ts.Close: ends the clients' SSE streams
	t.Cleanup(s.srvV2.Close)
	return s
}

// memListener is an in-memory network: each dial is a net.Pipe whose server end Accept returns. Unlike sockets,
// pipes block on channels, which testing/synctest sees as durably blocked.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "sim.test:80" }

// tickOnDemand ticks whenever something waits for a tick, until the test ends.
// Tick counts then depend only on the calls made, never on timing.
func (s *sim) tickOnDemand() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			queued := s.engine.Queued()
			if s.engine.Pending() > 0 {
				// The clock moves first: a tick releases the calls that waited for it, and a call made right after
				// one (a chat, stamped with the clock) must read the same time whatever this goroutine does next.
				s.clock.Advance(time.Second)
				s.engine.Tick()
				continue
			}
			select {
			case <-queued:
			case <-ctx.Done():
				return
			}
		}
	}()
	s.t.Cleanup(func() { cancel(); <-done })
}

// player is one MCP client session.
type player struct {
	t        testing.TB
	cs       *mcp.ClientSession
	name     string
	sid      string
	password string
}

func (s *sim) connect(t testing.TB) *player {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sim-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.client}, &mcp.ClientSessionOptions{ProtocolVersion: liveProtocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &player{t: t, cs: cs}
}

// register connects a new client and registers name on it.
func (s *sim) register(t testing.TB, name string) *player {
	t.Helper()
	p := s.connect(t)
	r := p.ok("register", map[string]any{"username": name, "empire": "solarian"})
	p.name, p.sid, p.password = name, r["session_id"].(string), r["password"].(string)
	return p
}

// raw calls a tool and returns its text and error flag; transport errors are returned.
func (p *player) raw(name string, args map[string]any) (string, bool, error) {
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	if len(res.Content) != 1 {
		p.t.Fatalf("%s: %d content items, want exactly 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		p.t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	return tc.Text, res.IsError, nil
}

func (p *player) call(name string, args map[string]any) (string, bool) {
	p.t.Helper()
	text, isErr, err := p.raw(name, args)
	if err != nil {
		p.t.Fatalf("%s: transport error: %v", name, err)
	}
	return text, isErr
}

// ok calls a tool that must succeed and decodes its JSON result.
func (p *player) ok(name string, args map[string]any) map[string]any {
	p.t.Helper()
	text, isErr := p.call(name, args)
	if isErr {
		p.t.Fatalf("%s(%v) failed: %s", name, args, text)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		p.t.Fatalf("%s: result is not JSON: %v: %s", name, err, text)
	}
	return out
}

// fail calls a tool that must fail with code and returns the error text.
func (p *player) fail(name string, args map[string]any, code string) string {
	p.t.Helper()
	text, isErr := p.call(name, args)
	if !isErr || !strings.HasPrefix(text, "Error: "+code+": ") {
		p.t.Fatalf("%s(%v) = %q (isError %v), want \"Error: %s: …\"", name, args, text, isErr, code)
	}
	return text
}

func num(t *testing.T, m map[string]any, path ...string) int {
	t.Helper()
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("path %v: %v is not an object", path, v)
		}
		v = mm[k]
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("path %v: %v (%T) is not a number", path, v, v)
	}
	return int(f)
}

func str(t *testing.T, m map[string]any, path ...string) string {
	t.Helper()
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("path %v: %v is not an object", path, v)
		}
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}
