// Package httpx holds the HTTP details the ollama and openai adapters share: reading a Retry-After header,
// capturing the status and headers of a failed response that the SDKs do not hand back, and scrubbing the secrets a
// provider echoes in its error bodies before anything keeps them.
package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/libs/redact"
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

// Truncate shortens an error body to maxBody bytes.
func Truncate(b []byte) string {
	if len(b) > maxBody {
		return string(b[:maxBody]) + "…"
	}
	return string(b)
}

// Capture collects the last failed response of one provider call. Adapters put one in the request context with
// WithCapture and read it after the SDK returns.
type Capture struct {
	failure *Failure
}

// Failure is the last response with status >= 400 seen during the call, or nil.
func (c *Capture) Failure() *Failure { return c.failure }

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
	if err != nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	c, ok := req.Context().Value(captureKey{}).(*Capture)
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
	c.failure = &Failure{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: Truncate([]byte(t.Redactor.String(string(body))))}
	return resp, nil
}

// maxErrorBody bounds what is buffered of an error response; error bodies are small, a proxy's HTML page at most.
const maxErrorBody = 1 << 20

// Options configure the transport Client installs.
type Options struct {
	// Redactor scrubs captured error bodies (Transport.Redactor); nil applies the shape rules only.
	Redactor *redact.Redactor
}

// Client returns a copy of base (http.DefaultClient's settings when nil) whose transport records failures.
// The caller's client is not modified: it may be shared.
func Client(base *http.Client, o Options) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	c.Transport = Transport{Next: c.Transport, Redactor: o.Redactor}
	return &c
}
