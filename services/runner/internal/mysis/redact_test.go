package mysis

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// callRecorder is the CallLog port keeping what the actor records.
type callRecorder struct {
	next  CallLog
	mu    sync.Mutex
	calls []LlmCall
}

func (r *callRecorder) RecordCalls(ctx context.Context, id string, calls []LlmCall) error {
	r.mu.Lock()
	r.calls = append(r.calls, calls...)
	r.mu.Unlock()
	return r.next.RecordCalls(ctx, id, calls)
}

// syncBuffer is a log destination read after the actor stopped.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// secretHarness is a harness whose actor knows key, logs to a plain (not redacting) handler, so what the actor
// itself writes is what is checked, and records its calls.
func secretHarness(t *testing.T, key string, backoff time.Duration) (*harness, *callRecorder, *syncBuffer) {
	logs := &syncBuffer{}
	cfg := Config{TurnPause: time.Hour, BackoffMin: backoff, BackoffMax: backoff, Redactor: redact.New(key),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	h := newHarness(t, Mysis{State: StateRunning}, cfg)
	rec := &callRecorder{next: h.store}
	h.actor = New(testID, Deps{Store: h.store, Composer: h.composer, Tools: h.tools, Providers: fakeProviders{h.provider},
		Events: h.events, Calls: rec}, cfg)
	return h, rec, logs
}

// everything is every text the actor wrote down or showed for the mysis.
func everything(h *harness, rec *callRecorder, logs *syncBuffer) string {
	var b strings.Builder
	m := h.store.get(testID)
	fmt.Fprintln(&b, "state reason:", m.StateReason)
	fmt.Fprintln(&b, "last error:", h.actor.Status().LastError)
	for _, mem := range h.store.all(testID) {
		fmt.Fprintln(&b, "memory:", mem.Content, mem.Reasoning)
	}
	h.events.mu.Lock()
	for _, ev := range h.events.evs {
		fmt.Fprintln(&b, "event:", ev.Reason, ev.Message, ev.Excerpt)
	}
	h.events.mu.Unlock()
	rec.mu.Lock()
	for _, c := range rec.calls {
		fmt.Fprintln(&b, "call:", c.Error)
	}
	rec.mu.Unlock()
	fmt.Fprintln(&b, "logs:", logs.String())
	return b.String()
}

// Whatever a provider or a game echoes — a 401 quoting the key, a tool error quoting it, either wrapped, cut at
// the state reason's length — the key is nowhere the actor writes: the state reason, the live status, events, the
// stored call, the stored tool result the model reads, its own log lines (issue 41, finding 3). The provider here
// passes the text through unredacted, as an adapter that forgot would.
func TestSecretsNeverLeaveTheActor(t *testing.T) {
	const key = "q7Zx2LmN9vBw4RtY8uKp3HsD"
	for _, e := range redacttest.Echoes(key) {
		t.Run(e.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, rec, logs := secretHarness(t, key, time.Hour)
				h.tools.results = map[string]ToolResult{"mine": {Content: e.Text, IsError: true}}
				h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
					if n == 0 {
						return reply("", call("c1", "mine", `{}`)), nil
					}
					return llm.Response{}, fmt.Errorf("openai: %w", &llm.StatusError{Provider: "openai", StatusCode: 401, Message: e.Text})
				}
				h.start()
				h.eventually("the mysis errored", func() bool { return h.state() == StateErrored })
				h.stop()
				out := everything(h, rec, logs)
				if leak := redacttest.Leak(out, key); leak != "" {
					t.Errorf("%q of the key written down:\n%s", leak, out)
				}
				if !strings.Contains(h.store.get(testID).StateReason, "HTTP 401") || len(rec.calls) != 1 || rec.calls[0].Error == "" {
					t.Errorf("the failure itself must still show: reason %q, calls %+v", h.store.get(testID).StateReason, rec.calls)
				}
			})
		})
	}
}

// A panic inside a turn (here the model's adapter) becomes the mysis's error, redacted, and the actor goes on: the
// mysis is retried after its backoff instead of the runner crashing with the value printed raw.
func TestPanicInATurnIsAnErrorWithoutSecrets(t *testing.T) {
	const key = "q7Zx2LmN9vBw4RtY8uKp3HsD"
	synctest.Test(t, func(t *testing.T) {
		h, rec, logs := secretHarness(t, key, time.Millisecond)
		h.provider.script = func(n int, _ llm.Request) (llm.Response, error) {
			if n == 0 {
				panic("provider state broken after Incorrect API key provided: " + key)
			}
			return reply("recovered"), nil
		}
		h.start()
		h.eventually("a turn after the panic", func() bool { return h.actor.Status().Turns >= 1 })
		h.stop()
		var reasons []string
		for _, ch := range h.store.stateLog() {
			reasons = append(reasons, ch.Reason)
		}
		out := everything(h, rec, logs) + strings.Join(reasons, "\n")
		if leak := redacttest.Leak(out, key); leak != "" {
			t.Errorf("%q of the key written down:\n%s", leak, out)
		}
		if !strings.Contains(out, "internal error in the turn") || !strings.Contains(logs.String(), "panic in a turn") {
			t.Errorf("the panic is not reported:\n%s", out)
		}
	})
}
