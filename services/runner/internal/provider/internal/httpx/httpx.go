// Package httpx holds the HTTP details the ollama and openai adapters share: reading a Retry-After header,
// capturing the status and headers of a failed response that the SDKs do not hand back, scrubbing the secrets a
// provider echoes in its error bodies before anything keeps them, and bounding what is read of a reply.
package httpx

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/text"
)

// ParseRetryAfter reads how long the server asked us to wait: the non-standard retry-after-ms (OpenAI sends it
// next to Retry-After with finer resolution), then Retry-After as delay-seconds or an HTTP-date relative to now.
// It returns zero when the headers say nothing usable or the date has passed.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return clamp(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	// RFC 9110 allows only whole seconds, but some servers send fractions; accepting them costs nothing.
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			return 0
		}
		return clamp(s * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return 0
}

// clamp converts a float nanosecond count without overflowing: absurd values become "very long", which the
// retry wrapper then refuses to wait for.
func clamp(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

// Failure is what an adapter saw of a failed HTTP response. The SDKs reduce such a response to an error value that
// drops the headers (ollama) or fails to parse bodies that are not OpenAI-shaped (openai), so the adapters capture
// it on the way through.
type Failure struct {
	StatusCode int
	Header     http.Header
	// Body is the start of the response body, for the error message.
	Body string
}

// maxBody bounds how much of an error body is kept: enough for any real error message, small enough for logs.
const maxBody = 4 << 10

// Message is the best human-readable text for the failure: the message inside the usual JSON error shapes
// (Ollama's {"error":"…"}, OpenAI's {"error":{"message":"…"}}, vLLM's {"message":"…"}), else the body, else the
// status text.
func (f *Failure) Message() string {
	b := strings.TrimSpace(f.Body)
	if b == "" {
		return http.StatusText(f.StatusCode)
	}
	var shapes struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal([]byte(b), &shapes) != nil {
		return b
	}
	var s string
	if json.Unmarshal(shapes.Error, &s) == nil && s != "" {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(shapes.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	if shapes.Message != "" {
		return shapes.Message
	}
	return b
}

// Truncate shortens an error body to maxBody bytes on a rune boundary, marking the cut.
func Truncate(body string) string {
	return text.Clip(body, maxBody, "…")
}

// Capture collects the last failed response of one provider call. Adapters put one in the request context with
// WithCapture and read it after the SDK returns.
type Capture struct {
	failure  *Failure
	tooLarge atomic.Int64 // the limit a reply passed; 0: none did
	// reply is how the last reply body's reading ended: replyOpen while nothing ended it, replyEOF at its end,
	// replyFailed at a read error (none of them before a reply arrived).
	reply atomic.Int32
}

// How a reply body's reading ended (Capture.reply).
const (
	replyNone int32 = iota
	replyOpen
	replyEOF
	replyFailed
)

// Abandoned reports whether the client stopped reading the last reply before its end without a read error: what
// Ollama's client does with a line longer than its buffer (it stops scanning and reports success). The adapter
// then knows the reply was not cut by the network, which would be worth a retry, but too long to read.
func (c *Capture) Abandoned() bool { return c.reply.Load() == replyOpen }

// Failure is the last response with status >= 400 seen during the call, or nil.
func (c *Capture) Failure() *Failure { return c.failure }

// TooLarge reports whether a reply of the call passed the transport's byte limit, and that limit. The adapters
// look here rather than at the SDK's error: Ollama's client stops reading at a read error and reports success with
// what it had, the OpenAI SDK wraps it in a decoding error.
func (c *Capture) TooLarge() (limit int64, ok bool) {
	l := c.tooLarge.Load()
	return l, l > 0
}

// DefaultMaxReplyBytes bounds a reply body when Options.MaxReplyBytes is zero: 8 MiB is some two million tokens of
// text, far above any model's output limit, and small enough that a swarm's concurrent calls cannot exhaust the
// runner's memory. A reply is decoded whole (a non-streaming call, or Ollama's lines folded together), so without a
// bound a provider that sends 2 GB takes 2 GB and more (issue 41).
const DefaultMaxReplyBytes = 8 << 20

// ErrReplyTooLarge is the read error of a reply body that passed the limit.
var ErrReplyTooLarge = errors.New("reply larger than the limit")

// limitedBody fails a read once more than limit bytes of the body have arrived, and notes it in the call's Capture.
type limitedBody struct {
	r       io.ReadCloser
	left    int64
	limit   int64
	capture *Capture
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrReplyTooLarge
	}
	// Ask for one byte more than is left: the byte that passes the limit is what tells a body of exactly limit
	// bytes from a longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if b.capture != nil && err != nil {
		end := replyFailed
		if errors.Is(err, io.EOF) {
			end = replyEOF
		}
		b.capture.reply.Store(end)
	}
	b.left -= int64(n)
	if b.left < 0 {
		if b.capture != nil {
			b.capture.tooLarge.Store(b.limit)
			b.capture.reply.Store(replyFailed)
		}
		return n + int(b.left), ErrReplyTooLarge // hand on exactly limit bytes, never the one past it
	}
	return n, err
}

// Close closes the body. The rest of an overlong body is not read: the transport closes the connection instead of
// draining it, so the server's 2 GB stop arriving.
func (b *limitedBody) Close() error { return b.r.Close() }

type captureKey struct{}

// WithCapture returns a context whose requests, sent through Transport, record their failures in the Capture.
func WithCapture(ctx context.Context) (context.Context, *Capture) {
	c := &Capture{}
	return context.WithValue(ctx, captureKey{}, c), c
}

// Transport records failed responses into the Capture of the request's context and hands them on unchanged
// (the body is buffered and replaced so the SDK still reads all of it).
type Transport struct {
	Next http.RoundTripper
	// MaxReplyBytes bounds what is read of a successful response's body (DefaultMaxReplyBytes when zero): past
	// it a read fails with ErrReplyTooLarge and the call's Capture says so.
	MaxReplyBytes int64
	// Redactor scrubs a failed response's body before it is cut to its message: cut first, a key that straddles
	// the cut would survive in part, where no rule recognises it.
	Redactor *redact.Redactor
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	c, ok := req.Context().Value(captureKey{}).(*Capture)
	if resp.StatusCode < http.StatusBadRequest {
		limit := cmp.Or(t.MaxReplyBytes, DefaultMaxReplyBytes)
		resp.Body = &limitedBody{r: resp.Body, left: limit, limit: limit, capture: c}
		if c != nil {
			c.reply.Store(replyOpen)
		}
		return resp, nil
	}
	if !ok {
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		// Keep what arrived; the status code is what matters for retry decisions.
		body = append(body, []byte(" (body read failed: "+rerr.Error()+")")...)
	}
	c.failure = &Failure{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: Truncate(t.Redactor.String(string(body)))}
	return resp, nil
}

// maxErrorBody bounds what is buffered of an error response; error bodies are small, a proxy's HTML page at most.
const maxErrorBody = 1 << 20

// Options configure the transport Client installs.
type Options struct {
	// Redactor scrubs captured error bodies (Transport.Redactor); nil applies the shape rules only.
	Redactor *redact.Redactor
	// MaxReplyBytes bounds a reply body (Transport.MaxReplyBytes; DefaultMaxReplyBytes when zero).
	MaxReplyBytes int64
}

// Client returns a copy of base (http.DefaultClient's settings when nil) whose transport records failures.
// The caller's client is not modified: it may be shared.
func Client(base *http.Client, o Options) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	c.Transport = Transport{Next: c.Transport, Redactor: o.Redactor, MaxReplyBytes: o.MaxReplyBytes}
	return &c
}
