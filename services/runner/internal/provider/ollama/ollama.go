// Package ollama is the runner's adapter to an Ollama server through its official Go client (ollama/api). It sends
// one non-streaming /api/chat call per llm request, with tools and thinking, and maps the reply and HTTP failures
// (including Retry-After, which the client itself drops) back to the llm port.
package ollama

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/httpx"
)

// Think settings for Config.Think. Any other value must be a reasoning level ("low", "medium", "high") that
// models such as gpt-oss accept in place of a boolean.
const (
	// ThinkAuto (the default) asks /api/show once per model and thinks when it lists the "thinking" capability:
	// asking a model that cannot think to think is an HTTP 400, and not asking one that can loses its reasoning
	// on servers older than the ones that default to thinking.
	ThinkAuto = "auto"
	ThinkOn   = "on"
	ThinkOff  = "off"
)

// DefaultName is the registry name used when Config.Name is empty.
const DefaultName = "ollama"

// DefaultHost is the server Ollama's clients talk to when OLLAMA_HOST is unset.
const DefaultHost = "http://127.0.0.1:11434"

// HostURL is the server URL an OLLAMA_HOST value names, by the forms Ollama itself accepts: empty is DefaultHost;
// "host", "host:port" and "[v6]:port" without a scheme are http, a missing port 11434; "http://host" and
// "https://host" keep their scheme and get its port (80, 443); a path after the host is kept; "ollama.com" is
// https://ollama.com:443. A port that is not a number from 0 to 65535 is an error (Ollama would fall back to its
// default port without saying so).
func HostURL(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultHost, nil
	}
	port := "11434"
	scheme, rest, ok := strings.Cut(v, "://")
	switch {
	case !ok && v == "ollama.com":
		scheme, rest, port = "https", "ollama.com", "443"
	case !ok:
		scheme, rest = "http", v
	case scheme == "http":
		port = "80"
	case scheme == "https":
		port = "443"
	}
	hostport, path, _ := strings.Cut(rest, "/")
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		host, p = strings.Trim(hostport, "[]"), port
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("OLLAMA_HOST %q: port %q is not a number from 0 to 65535", v, p)
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(cmp.Or(host, "127.0.0.1"), p)}
	if path != "" {
		u.Path = "/" + path
	}
	return u.String(), nil
}

// Config configures one Ollama server.
type Config struct {
	// Name is the registry name (default "ollama"); two servers need two names.
	Name string
	// BaseURL is the server, e.g. "http://127.0.0.1:11434" (HostURL turns an OLLAMA_HOST value into one). Empty
	// means Ollama's default, DefaultHost. The adapter reads no environment: the runner's configuration owns OLLAMA_HOST.
	BaseURL string
	// HTTPClient is copied, never modified (nil: no client timeout; every call is bounded by its context, and
	// a cold model load can legitimately take minutes).
	HTTPClient *http.Client
	// Think is ThinkAuto (default when empty), ThinkOn, ThinkOff or a level ("low", "medium", "high").
	Think string
	// NumCtx sets options.num_ctx when positive. Ollama's default context is small and it silently truncates
	// prompts beyond it, so deployments should set it to what the composer's token budget assumes.
	NumCtx int
	// KeepAlive sets keep_alive when positive (how long the model stays loaded after a call).
	KeepAlive time.Duration
	// Now is the clock for HTTP-date Retry-After values (default time.Now).
	Now func() time.Time
	// MaxReplyBytes bounds what is read of a reply, all its lines together (httpx.DefaultMaxReplyBytes when zero):
	// a server that streams anyway, and one that never stops, are cut there and the call fails with
	// *llm.ReplyTooLargeError.
	MaxReplyBytes int64
	// Redactor scrubs the errors the adapter returns (a proxy in front of Ollama may echo its credentials).
	// Nil: the shape rules only.
	Redactor *redact.Redactor
}

// Provider is an llm.Provider backed by an Ollama server. It is safe for concurrent use.
type Provider struct {
	name      string
	client    *api.Client
	think     string
	numCtx    int
	keepAlive time.Duration
	now       func() time.Time
	red       *redact.Redactor

	mu sync.Mutex
	// canThink caches /api/show's answer per model for ThinkAuto.
	canThink map[string]bool
}

// New checks cfg and returns a Provider. It does not contact the server: Ollama may start after the runner.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cmp.Or(cfg.BaseURL, DefaultHost))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("ollama: base URL %q is not an absolute URL", cfg.BaseURL)
	}
	base := u
	think := cmp.Or(cfg.Think, ThinkAuto)
	if !slices.Contains([]string{ThinkAuto, ThinkOn, ThinkOff, "low", "medium", "high"}, think) {
		return nil, fmt.Errorf("ollama: think %q is not auto, on, off, low, medium or high", cfg.Think)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{
		name:      cmp.Or(cfg.Name, DefaultName),
		client:    api.NewClient(base, httpx.Client(cfg.HTTPClient, httpx.Options{Redactor: cfg.Redactor, MaxReplyBytes: cfg.MaxReplyBytes})),
		think:     think,
		numCtx:    cfg.NumCtx,
		keepAlive: cfg.KeepAlive,
		now:       now,
		red:       cfg.Redactor,
		canThink:  map[string]bool{},
	}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.name }

// Chat implements llm.Provider.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	msgs, err := toOllamaMessages(req.Messages)
	if err != nil {
		return llm.Response{}, err
	}
	tools, err := toOllamaTools(req.Tools)
	if err != nil {
		return llm.Response{}, err
	}
	stream := false
	creq := &api.ChatRequest{
		Model:    req.Model,
		Messages: msgs,
		Stream:   &stream,
		Tools:    tools,
		Options:  p.options(req),
		Think:    p.thinkValue(ctx, req.Model),
	}
	if p.keepAlive > 0 {
		creq.KeepAlive = &api.Duration{Duration: p.keepAlive}
	}

	cctx, capture := httpx.WithCapture(ctx)
	var acc accumulator
	err = p.client.Chat(cctx, creq, acc.add)
	if limit, over := capture.TooLarge(); over {
		// The client stops at the read error and reports success with the lines it had (it never checks its
		// scanner's error): the capture is what says the reply was cut.
		return llm.Response{}, &llm.ReplyTooLargeError{Provider: p.name, Limit: limit}
	}
	if err != nil {
		return llm.Response{}, p.fromOllamaError(ctx, err, capture.Failure())
	}
	if f := capture.Failure(); f != nil {
		// An error status with an empty body: the client finds no line to decode and reports success.
		return llm.Response{}, p.statusError(f.StatusCode, f.Message(), f)
	}
	if !acc.done && capture.Abandoned() {
		// The client stopped reading without an error: a line longer than its own buffer (8 MB), which the
		// same request would send again.
		return llm.Response{}, &llm.ReplyTooLargeError{Provider: p.name, Limit: clientMaxLine}
	}
	if !acc.done {
		// The connection ended before the final object; retrying is the right reaction.
		return llm.Response{}, fmt.Errorf("ollama: reply ended before done: %w", io.ErrUnexpectedEOF)
	}
	return fromOllamaResponse(req.Messages, acc), nil
}

// clientMaxLine is the longest line Ollama's client reads (its scanner's buffer, api.maxBufferSize): it stops at a
// longer one as if the reply had ended.
const clientMaxLine = 8_000_000

func (p *Provider) options(req llm.Request) map[string]any {
	opts := map[string]any{"temperature": req.Temperature}
	if p.numCtx > 0 {
		opts["num_ctx"] = p.numCtx
	}
	return opts
}

// thinkValue is the request's think field. With ThinkAuto and a failed /api/show it is nil: the server then
// applies its own default, and the chat call reports whatever made /api/show fail.
func (p *Provider) thinkValue(ctx context.Context, model string) *api.ThinkValue {
	switch p.think {
	case ThinkOn:
		return &api.ThinkValue{Value: true}
	case ThinkOff:
		return &api.ThinkValue{Value: false}
	case ThinkAuto:
	default:
		return &api.ThinkValue{Value: p.think}
	}
	p.mu.Lock()
	can, known := p.canThink[model]
	p.mu.Unlock()
	if !known {
		show, err := p.client.Show(ctx, &api.ShowRequest{Model: model})
		if err != nil {
			return nil
		}
		can = slices.Contains(show.Capabilities, "thinking")
		p.mu.Lock()
		p.canThink[model] = can
		p.mu.Unlock()
	}
	if !can {
		return nil
	}
	return &api.ThinkValue{Value: true}
}

// fromOllamaError maps the client's errors to the llm port: HTTP failures become *llm.StatusError with the
// Retry-After the client would have dropped; network errors stay wrapped so llm.IsTransient can see them. Every
// error leaves redacted.
func (p *Provider) fromOllamaError(ctx context.Context, err error, f *httpx.Failure) error {
	if ctx.Err() != nil {
		return p.red.Error(fmt.Errorf("ollama: %w", err))
	}
	var se api.StatusError
	if errors.As(err, &se) {
		return p.statusError(se.StatusCode, cmp.Or(se.ErrorMessage, se.Status), f)
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		msg := "unauthorized"
		if ae.SigninURL != "" {
			msg += " (sign in at " + ae.SigninURL + ")"
		}
		return p.statusError(ae.StatusCode, msg, f)
	}
	if f != nil {
		// An error status whose body the client turned into a plain error.
		return p.statusError(f.StatusCode, err.Error(), f)
	}
	return p.red.Error(fmt.Errorf("ollama: %w", err))
}

func (p *Provider) statusError(code int, msg string, f *httpx.Failure) *llm.StatusError {
	se := &llm.StatusError{Provider: p.name, StatusCode: code, Message: p.red.String(msg)}
	if f != nil {
		se.RetryAfter = httpx.ParseRetryAfter(f.Header, p.now())
	}
	return se
}

// accumulator folds the client's callbacks into one reply. With stream=false there is one callback, but folding
// keeps the adapter correct if a server streams anyway.
type accumulator struct {
	content, thinking []byte
	toolCalls         []api.ToolCall
	done              bool
	promptTokens      int
	outputTokens      int
}

func (a *accumulator) add(r api.ChatResponse) error {
	a.content = append(a.content, r.Message.Content...)
	a.thinking = append(a.thinking, r.Message.Thinking...)
	a.toolCalls = append(a.toolCalls, r.Message.ToolCalls...)
	if r.Done {
		a.done = true
		a.promptTokens = r.PromptEvalCount
		a.outputTokens = r.EvalCount
	}
	return nil
}
