// Package openai is the runner's adapter to the Chat Completions API through the official openai-go SDK. The base
// URL is configurable, so the same adapter serves OpenAI and the servers that copy its API (vLLM, llama.cpp,
// LM Studio, DeepSeek, OpenRouter); their extra reasoning fields are read from the raw reply.
package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/httpx"
)

// DefaultName is the registry name used when Config.Name is empty.
const DefaultName = "openai"

// DefaultBaseURL is OpenAI's own API, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures one OpenAI-compatible endpoint.
type Config struct {
	// Name is the registry name (default "openai"); a second endpoint needs a second name.
	Name string
	// BaseURL, e.g. "http://127.0.0.1:8000/v1". Empty means OpenAI's own API (DefaultBaseURL). The adapter never
	// reads OPENAI_BASE_URL itself: the runner's configuration owns it.
	BaseURL string
	// APIKey; empty means OPENAI_API_KEY (local servers usually need none).
	APIKey string
	// HTTPClient is copied, never modified (nil: no client timeout; calls are bounded by their context).
	HTTPClient *http.Client
	// Now is the clock for HTTP-date Retry-After values (default time.Now).
	Now func() time.Time
	// MaxReplyBytes bounds what is read of a reply (httpx.DefaultMaxReplyBytes when zero): a longer one fails the
	// call with *llm.ReplyTooLargeError, unread past the limit.
	MaxReplyBytes int64
	// Redactor scrubs the errors the adapter returns (a 401 body that quotes the key, a URL with its query);
	// the adapter teaches it its own key. Nil: a redactor of its own, knowing that key.
	Redactor *redact.Redactor
}

// Provider is an llm.Provider backed by a Chat Completions endpoint. It is safe for concurrent use.
type Provider struct {
	name   string
	client openai.Client
	now    func() time.Time
	red    *redact.Redactor
}

// New checks cfg and returns a Provider. It does not contact the server.
func New(cfg Config) (*Provider, error) {
	red := cfg.Redactor
	if red == nil {
		red = redact.New()
	}
	// The key the SDK will send, whichever way it comes (NewClient falls back to OPENAI_API_KEY).
	red.Add(cmp.Or(cfg.APIKey, os.Getenv("OPENAI_API_KEY")))
	opts := []option.RequestOption{
		// llm.WithRetry is the one place that retries: the SDK's own retries would multiply with it and hide
		// the Retry-After that the runner wants to honour and log.
		option.WithMaxRetries(0),
		option.WithHTTPClient(httpx.Client(cfg.HTTPClient, httpx.Options{Redactor: red, MaxReplyBytes: cfg.MaxReplyBytes})),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("openai: base URL %q is not an absolute URL", red.String(cfg.BaseURL))
		}
	}
	// Always set: NewClient would otherwise take OPENAI_BASE_URL from the environment (a second reader of it, and an
	// exported empty value would leave the client without a base).
	opts = append(opts, option.WithBaseURL(cmp.Or(cfg.BaseURL, DefaultBaseURL)))
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{
		name: cmp.Or(cfg.Name, DefaultName),
		// NewClient reads OPENAI_API_KEY (and OPENAI_BASE_URL) first; the options above override them.
		client: openai.NewClient(opts...),
		now:    now,
		red:    red,
	}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.name }

// Chat implements llm.Provider.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	msgs, err := toOpenAIMessages(req.Messages)
	if err != nil {
		return llm.Response{}, err
	}
	tools, err := toOpenAITools(req.Tools)
	if err != nil {
		return llm.Response{}, err
	}
	params := openai.ChatCompletionNewParams{
		Model:       req.Model,
		Messages:    msgs,
		Temperature: param.NewOpt(req.Temperature),
	}
	if len(tools) > 0 {
		// tool_choice without tools is a 400 on OpenAI, so it is only sent with them.
		params.Tools = tools
		params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt("auto")}
	}

	cctx, capture := httpx.WithCapture(ctx)
	cc, err := p.client.Chat.Completions.New(cctx, params)
	if limit, over := capture.TooLarge(); over {
		return llm.Response{}, &llm.ReplyTooLargeError{Provider: p.name, Limit: limit}
	}
	if err != nil {
		return llm.Response{}, p.fromOpenAIError(ctx, err, capture.Failure())
	}
	return fromOpenAIResponse(req.Messages, cc)
}

// fromOpenAIError maps SDK errors to the llm port. The SDK's *openai.Error carries the response, hence its
// Retry-After; an error body that is not OpenAI-shaped makes the SDK return a JSON error instead, so the
// captured failure is the fallback that still yields the status code. Every error leaves redacted: providers
// echo the key in their 401 bodies, and a transport error quotes the request URL.
func (p *Provider) fromOpenAIError(ctx context.Context, err error, f *httpx.Failure) error {
	if ctx.Err() != nil {
		return p.red.Error(fmt.Errorf("openai: %w", err))
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		se := &llm.StatusError{Provider: p.name, StatusCode: ae.StatusCode, Message: p.red.String(ae.Message)}
		if ae.Response != nil {
			se.RetryAfter = httpx.ParseRetryAfter(ae.Response.Header, p.now())
		}
		if f != nil {
			se.Message = cmp.Or(se.Message, f.Message())
		}
		se.Message = cmp.Or(se.Message, http.StatusText(ae.StatusCode))
		return se
	}
	if f != nil {
		return &llm.StatusError{
			Provider: p.name, StatusCode: f.StatusCode, Message: f.Message(),
			RetryAfter: httpx.ParseRetryAfter(f.Header, p.now()),
		}
	}
	return p.red.Error(fmt.Errorf("openai: %w", err))
}
