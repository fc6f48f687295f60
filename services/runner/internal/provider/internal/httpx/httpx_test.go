package httpx

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"absent", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"http-date", map[string]string{"Retry-After": now.Add(42 * time.Second).Format(http.TimeFormat)}, 42 * time.Second},
		{"http-date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1250"}, 1250 * time.Millisecond},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"huge", map[string]string{"Retry-After": "1e300"}, time.Duration(1<<63 - 1)},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := ParseRetryAfter(h, now); got != tc.want {
			t.Errorf("%s: ParseRetryAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTransportCapturesFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "fine")
			return
		}
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":"slow down"}`)
	}))
	defer srv.Close()
	base := &http.Client{Timeout: 5 * time.Second}
	c := Client(base, Options{})
	if base.Transport != nil {
		t.Fatal("Client modified the caller's http.Client")
	}

	ctx, capt := WithCapture(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ok", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if capt.Failure() != nil {
		t.Fatalf("a 200 was captured: %+v", capt.Failure())
	}

	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/busy", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != `{"error":"slow down"}` {
		t.Fatalf("the SDK would read %q; the body must be handed on intact", body)
	}
	f := capt.Failure()
	if f == nil || f.StatusCode != 429 || f.Header.Get("Retry-After") != "3" || f.Message() != "slow down" {
		t.Fatalf("captured %+v", f)
	}
}

func TestFailureMessage(t *testing.T) {
	for body, want := range map[string]string{
		"":                             "Too Many Requests",
		`{"error":"model is loading"}`: "model is loading",
		`{"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}}`:          "Rate limit",
		`{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`: "The model does not exist.",
		`{"detail":"nope"}`: `{"detail":"nope"}`,
		"<html>busy</html>": "<html>busy</html>",
	} {
		if got := (&Failure{StatusCode: 429, Body: body}).Message(); got != want {
			t.Errorf("Message(%q) = %q, want %q", body, got, want)
		}
	}
}

// A reply body is handed on up to the limit and fails past it, however it arrives; the call's Capture says so, and
// a reply of exactly the limit is whole.
func TestReplyBodyIsBounded(t *testing.T) {
	const limit = 64 << 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 4096)
		switch r.URL.Path {
		case "/exact":
			_, _ = w.Write(bytes.Repeat([]byte("x"), limit))
		case "/over":
			_, _ = w.Write(bytes.Repeat([]byte("x"), limit+1))
		case "/endless":
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	defer srv.Close()
	c := Client(nil, Options{MaxReplyBytes: limit})
	for path, wantErr := range map[string]bool{"/exact": false, "/over": true, "/endless": true} {
		ctx, capt := WithCapture(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		_, over := capt.TooLarge()
		if len(body) != limit || (err != nil) != wantErr || over != wantErr || wantErr && !errors.Is(err, ErrReplyTooLarge) {
			t.Errorf("%s: read %d bytes, err %v, too large %v", path, len(body), err, over)
		}
	}
}

// An error body over the bound is cut on a rune boundary. It used to be cut at exactly maxBody bytes, which split a
// multi-byte character at the end of the kept text and left invalid UTF-8 in the error (and in the log line).
func TestTruncateKeepsRunesWhole(t *testing.T) {
	body := strings.Repeat("a", maxBody-1) + "é and more"
	got := Truncate(body)
	if want := strings.Repeat("a", maxBody-1) + "…"; got != want {
		t.Errorf("Truncate cut to %d bytes ending %q, want the é left out whole", len(got), got[len(got)-8:])
	}
	if !utf8.ValidString(got) {
		t.Errorf("Truncate made invalid UTF-8 of a valid body")
	}
	if short := "short body"; Truncate(short) != short {
		t.Errorf("Truncate changed a body within the bound")
	}
}
