package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
)

// A key with no recognisable shape: only the known-value rule can find it.
const bareKey = "q7Zx2LmN9vBw4RtY8uKp3HsD"

// An OpenAI-style key the process does not know: only the shape rule can find it.
const shapedKey = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"

// Echoes is every way a provider, proxy or game server has been seen to send a credential back, with the secret
// each one carries. Other packages' tests feed the same table through their own exits.
func echoes() []struct{ name, text, secret string } {
	return []struct{ name, text, secret string }{
		{"bearer header echo", "Incorrect API key provided: Bearer " + shapedKey + ". You can find your API key at https://platform.openai.com", shapedKey},
		{"bearer with a bare key", "invalid credentials: Bearer " + bareKey, bareKey},
		{"authorization header", "request headers: Authorization: Bearer " + bareKey + "\nContent-Type: application/json", bareKey},
		{"json api_key", `{"error":{"message":"bad key","api_key":"` + bareKey + `"}}`, bareKey},
		{"json password", `{"username":"scout","password": "` + bareKey + `"}`, bareKey},
		{"json token escaped in a string", `upstream said "{\"token\":\"` + bareKey + `\"}"`, bareKey},
		{"url query key", "Get \"https://generativelanguage.googleapis.com/v1beta/models?key=" + bareKey + "&alt=json\": dial tcp: i/o timeout", bareKey},
		{"url query api_key", "POST https://proxy.example/v1/chat?api_key=" + bareKey, bareKey},
		{"url query token", "redirected to /login?next=%2F&token=" + bareKey, bareKey},
		{"environment assignment", "env: OPENAI_API_KEY=" + bareKey + " ZOEA_LOG_LEVEL=debug", bareKey},
		{"url user info", "nats: dial nats://runner:" + bareKey + "@nats.internal:4222 failed", bareKey},
		{"bare shaped key", "the key " + shapedKey + " was revoked", shapedKey},
		{"google key", "API key not valid: AIzaSyD3x8f7Q2m9LkP0vB6nR4tY1uW5zX7cJ8", "AIzaSyD3x8f7Q2m9LkP0vB6nR4tY1uW5zX7cJ8"},
	}
}

func TestStringRemovesEveryEcho(t *testing.T) {
	r := redact.New(bareKey)
	for _, e := range echoes() {
		t.Run(e.name, func(t *testing.T) {
			got := r.String(e.text)
			assertClean(t, got, e.secret)
			if !strings.Contains(got, redact.Marker) {
				t.Errorf("no marker in %q", got)
			}
			if again := r.String(got); again != got {
				t.Errorf("redacting twice changes the text: %q then %q", got, again)
			}
		})
	}
}

// assertClean fails when any 10 consecutive bytes of secret survive in text: a cut key is a leak too.
func assertClean(t *testing.T, text, secret string) {
	t.Helper()
	for i := 0; i+10 <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+10]) {
			t.Errorf("%q still holds %q of the secret", text, secret[i:i+10])
			return
		}
	}
}

func TestKnownValuesWithoutShape(t *testing.T) {
	password := "correct-horse-battery"
	r := redact.New("short", password) // "short" is below MinSecretLen and must not eat ordinary words
	got := r.String("login scout failed: password correct-horse-battery rejected; short answer")
	if strings.Contains(got, password) || !strings.Contains(got, "short answer") {
		t.Errorf("got %q", got)
	}
	// Values learnt later count from then on; the longer of two overlapping values goes whole.
	r.Add("correct-horse-battery-staple")
	if got := r.Values("pw=correct-horse-battery-staple!"); got != "pw=[redacted]!" {
		t.Errorf("got %q", got)
	}
	var nilR *redact.Redactor
	if got := nilR.String("Bearer " + bareKey); strings.Contains(got, bareKey) {
		t.Errorf("a nil redactor still applies the shapes: %q", got)
	}
}

// Ordinary text must come through unchanged: the rule runs on every log line and every error shown.
func TestOrdinaryTextUnchanged(t *testing.T) {
	for _, s := range []string{
		"",
		"llm openai: openai: HTTP 429: Rate limit reached for gpt-4o-mini",
		`{"prompt_tokens": 1200, "completion_tokens": 80, "cached_tokens": 0}`,
		"tokens=200000 cost/day=2.00",
		`{"next_page_token":"eyJvZmZzZXQiOjEwMH0"}`,
		"sell iron_ore at sol_station: ok",
		"http://127.0.0.1:7100/mcp",
		"postgres://postgres@127.0.0.1:5432/zoea?sslmode=disable",
		"the mysis uses sk-learn and a basic plan",
		`{"token": null, "password": ""}`,
		"idempotency key llm:4f0c:12 already names another memory",
		"Bearer token missing",
		"mysis scout-1: state changed from running to errored",
	} {
		if got := redact.New(bareKey).String(s); got != s {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
}

func TestHandlerRedactsMessagesAttrsErrorsAndGroups(t *testing.T) {
	var buf bytes.Buffer
	r := redact.New(bareKey)
	log := slog.New(r.Handler(slog.NewJSONHandler(&buf, nil)))
	wrapped := fmt.Errorf("llm openai: %w", errors.New("HTTP 401: Incorrect API key provided: "+bareKey))
	log.With("key", bareKey).WithGroup("call").Warn("failed with "+bareKey,
		"err", wrapped, "body", []byte(`{"api_key":"`+bareKey+`"}`), "args", []string{"x", "Bearer " + bareKey},
		"req", struct{ URL string }{"https://x/?key=" + bareKey}, slog.Group("g", "v", bareKey), "n", 3)
	out := buf.String()
	assertClean(t, out, bareKey)
	if !strings.Contains(out, `"n":3`) || strings.Count(out, redact.Marker) < 6 {
		t.Errorf("line: %s", out)
	}
	if redact.Of(log.Handler()) != r || redact.Of(slog.NewJSONHandler(&buf, nil)) != nil {
		t.Error("Of does not find the redactor")
	}
}

// The log path runs the rule on every record: these measure what it adds (docs/BENCHMARKS.md).
func BenchmarkStringClean(b *testing.B) {
	r := redact.New(bareKey, "another-known-secret-1", "another-known-secret-2")
	s := "llm openai: openai: HTTP 429: Rate limit reached for gpt-4o-mini in organization org-x on tokens per min (TPM): Limit 200000, Used 199000, Requested 1800. Please try again in 240ms."
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(s)
	}
}

func BenchmarkStringEcho(b *testing.B) {
	r := redact.New(bareKey)
	s := "llm openai: openai: HTTP 401: Incorrect API key provided: Bearer " + bareKey + ". You can find your API key at https://platform.openai.com/account/api-keys."
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(s)
	}
}

func BenchmarkStringManyKnownValues(b *testing.B) {
	r := redact.New()
	for i := range 10000 { // a swarm's game passwords
		r.Add(fmt.Sprintf("pw-%08d-%016x", i, i*7919))
	}
	s := strings.Repeat("sell iron_ore at sol_station: ok; ", 8)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(s)
	}
}

func benchmarkLog(b *testing.B, h slog.Handler) {
	log := slog.New(h).With("replica", "runner-1", "mysis_id", "4f0c3a5e-1d2b-4c6a-9e8f-0a1b2c3d4e5f")
	err := errors.New("llm openai: openai: HTTP 429: Rate limit reached for gpt-4o-mini")
	b.ReportAllocs()
	for b.Loop() {
		log.Warn("mysis error", "err", err, "seq", 1234, "tool", "get_status")
	}
}

func BenchmarkLogJSON(b *testing.B) { benchmarkLog(b, slog.NewJSONHandler(discard{}, nil)) }

func BenchmarkLogJSONRedacted(b *testing.B) {
	benchmarkLog(b, redact.New(bareKey).Handler(slog.NewJSONHandler(discard{}, nil)))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A redacted error keeps its chain for classification and prints clean.
func TestErrorKeepsTheChain(t *testing.T) {
	cause := errors.New("HTTP 401: Bearer " + bareKey)
	err := redact.New().Error(fmt.Errorf("llm: %w", cause))
	if !errors.Is(err, cause) || strings.Contains(err.Error(), bareKey) {
		t.Errorf("got %v (is cause: %v)", err, errors.Is(err, cause))
	}
	if clean := errors.New("ok"); redact.New().Error(clean) != clean || redact.New().Error(nil) != nil {
		t.Error("a clean error is not returned as it is")
	}
}

// Every echo of the shared table, with a key the redactor knows and with one it only recognises by its shape.
func TestEchoTable(t *testing.T) {
	for _, secret := range []string{bareKey, shapedKey} {
		r := redact.New(bareKey)
		for _, e := range redacttest.Echoes(secret) {
			if e.Bare && secret != bareKey {
				continue
			}
			if got := r.String(e.Text); redacttest.Leak(got, secret) != "" {
				t.Errorf("%s (%s): %q", e.Name, secret[:6], got)
			}
		}
	}
}
