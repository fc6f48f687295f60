package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// scripted is a hand-written fake Provider that answers from a script, one entry per call.
type scripted struct {
	errs  []error // errs[i] is the i-th call's error; past the end calls succeed
	calls int
	// onCall runs at the start of every call (to cancel a context mid-retry).
	onCall func(call int)
}

func (s *scripted) Name() string { return "fake" }

func (s *scripted) Chat(_ context.Context, _ Request) (Response, error) {
	s.calls++
	if s.onCall != nil {
		s.onCall(s.calls)
	}
	if s.calls <= len(s.errs) && s.errs[s.calls-1] != nil {
		return Response{}, s.errs[s.calls-1]
	}
	return Response{Message: chat.Message{Role: chat.RoleAssistant, Content: "ok"}}, nil
}

// sleeper records the waits instead of sleeping.
type sleeper struct{ waits []time.Duration }

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func status(code int, retryAfter time.Duration) error {
	return &StatusError{Provider: "fake", StatusCode: code, RetryAfter: retryAfter, Message: "x"}
}

func TestWithRetry(t *testing.T) {
	// The real clock: a context deadline is compared with it when the context is created.
	epoch := time.Now()
	tests := []struct {
		name      string
		errs      []error
		opts      RetryOptions
		deadline  time.Duration // 0: no deadline
		wantCalls int
		wantWaits []time.Duration // the lowest wait of each retry
		wantMax   []time.Duration // the highest, when the wait is jittered
		wantOK    bool
		wantCode  int // StatusError code reachable with errors.As from the returned error
	}{
		{
			name:      "Retry-After honoured over a shorter backoff",
			errs:      []error{status(429, 5*time.Second)},
			opts:      RetryOptions{BaseDelay: time.Second},
			wantCalls: 2, wantWaits: []time.Duration{5 * time.Second}, wantOK: true,
		},
		{
			name:      "backoff longer than Retry-After wins",
			errs:      []error{status(503, time.Second), status(503, time.Second), status(503, time.Second)},
			opts:      RetryOptions{BaseDelay: 4 * time.Second},
			wantCalls: 4, wantWaits: []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}, wantOK: true,
			wantMax: []time.Duration{4 * time.Second, 8 * time.Second, 16 * time.Second},
		},
		{
			name:      "backoff grows exponentially with equal jitter",
			errs:      []error{status(500, 0), status(502, 0), status(408, 0)},
			opts:      RetryOptions{BaseDelay: time.Second},
			wantCalls: 4, wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}, wantOK: true,
			wantMax: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name:      "backoff capped at MaxDelay",
			errs:      []error{status(500, 0), status(500, 0), status(500, 0), status(500, 0)},
			opts:      RetryOptions{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: 2 * time.Second},
			wantCalls: 5, wantOK: true,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, time.Second, time.Second},
			wantMax:   []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
		},
		{
			name:      "400 is not retried",
			errs:      []error{status(400, 0)},
			wantCalls: 1, wantCode: 400,
		},
		{
			name:      "401 is not retried even with Retry-After",
			errs:      []error{status(401, time.Second)},
			wantCalls: 1, wantCode: 401,
		},
		{
			name:      "plain error is not retried",
			errs:      []error{errors.New("bad tool schema")},
			wantCalls: 1,
		},
		{
			name:      "gives up after MaxAttempts and keeps the cause",
			errs:      []error{status(503, 0), status(503, 0), status(503, 0)},
			opts:      RetryOptions{MaxAttempts: 3, BaseDelay: time.Second},
			wantCalls: 3, wantWaits: []time.Duration{500 * time.Millisecond, time.Second}, wantCode: 503,
			wantMax: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name:      "Retry-After above MaxRetryAfter fails at once",
			errs:      []error{status(429, 10*time.Minute)},
			opts:      RetryOptions{MaxRetryAfter: time.Minute},
			wantCalls: 1, wantCode: 429,
		},
		{
			name:      "Retry-After past the context deadline fails at once",
			errs:      []error{status(429, 30*time.Second)},
			deadline:  10 * time.Second,
			wantCalls: 1, wantCode: 429,
		},
		{
			name:      "Retry-After within the context deadline is waited",
			errs:      []error{status(429, 30*time.Second)},
			deadline:  31 * time.Second,
			wantCalls: 2, wantWaits: []time.Duration{30 * time.Second}, wantOK: true,
		},
		{
			name:      "transient network error retried",
			errs:      []error{&url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}},
			opts:      RetryOptions{BaseDelay: 2 * time.Second},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}, wantOK: true, wantMax: []time.Duration{2 * time.Second},
		},
		{
			name:      "provider's own context error not retried",
			errs:      []error{fmt.Errorf("ollama: %w", context.DeadlineExceeded)},
			wantCalls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &scripted{errs: tc.errs}
			sl := &sleeper{}
			opts := tc.opts
			opts.Sleep = sl.Sleep
			opts.Now = func() time.Time { return epoch }
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, epoch.Add(tc.deadline))
				defer cancel()
			}
			p := WithRetry(fake, opts)
			if p.Name() != "fake" {
				t.Errorf("Name() = %q", p.Name())
			}
			resp, err := p.Chat(ctx, Request{})
			if fake.calls != tc.wantCalls {
				t.Errorf("calls = %d, want %d", fake.calls, tc.wantCalls)
			}
			// Equal jitter: a backoff wait d is drawn from [d/2, d] (wantWaits the lowest, wantMax the highest); a
			// Retry-After above the whole band is waited exactly (no wantMax).
			hi := tc.wantMax
			if hi == nil {
				hi = tc.wantWaits
			}
			if len(sl.waits) != len(tc.wantWaits) {
				t.Errorf("waits = %v, want %d in [%v, %v]", sl.waits, len(tc.wantWaits), tc.wantWaits, hi)
			}
			for i := range min(len(sl.waits), len(tc.wantWaits)) {
				if w := sl.waits[i]; w < tc.wantWaits[i]-time.Nanosecond || w > hi[i] {
					t.Errorf("wait %d = %v, want within [%v, %v]", i+1, w, tc.wantWaits[i], hi[i])
				}
			}
			if tc.wantOK {
				if err != nil || resp.Message.Content != "ok" {
					t.Fatalf("Chat = %+v, %v; want success", resp, err)
				}
				return
			}
			if err == nil {
				t.Fatal("Chat succeeded; want an error")
			}
			var se *StatusError
			if tc.wantCode != 0 && (!errors.As(err, &se) || se.StatusCode != tc.wantCode) {
				t.Errorf("error %v does not carry StatusError %d", err, tc.wantCode)
			}
		})
	}
}

// The default sleeper must return as soon as the context is cancelled, not after the backoff.
func TestWithRetryCancelStopsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the retry is about to wait, not during the call: a cancel that lands during the call ends the
	// loop with the provider's own error (TestWithRetryCancelledDuringCall), which would make this test racy.
	called := make(chan struct{})
	fake := &scripted{errs: []error{status(503, 0)}}
	p := WithRetry(fake, RetryOptions{BaseDelay: time.Hour, MaxDelay: time.Hour,
		OnRetry: func(int, time.Duration, error) { close(called) }})

	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, Request{})
		done <- err
	}()
	<-called
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Chat still waiting after cancel")
	}
	if fake.calls != 1 {
		t.Fatalf("calls = %d, want 1", fake.calls)
	}
}

// A context cancelled while the provider was running ends the loop even if the error looks retryable.
func TestWithRetryCancelledDuringCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fake := &scripted{errs: []error{status(503, 0), status(503, 0)}, onCall: func(int) { cancel() }}
	sl := &sleeper{}
	_, err := WithRetry(fake, RetryOptions{Sleep: sl.Sleep}).Chat(ctx, Request{})
	if err == nil || fake.calls != 1 || len(sl.waits) != 0 {
		t.Fatalf("err = %v, calls = %d, waits = %v; want one call and no wait", err, fake.calls, sl.waits)
	}
}

func TestWithRetryOnRetry(t *testing.T) {
	fake := &scripted{errs: []error{status(429, 3*time.Second)}}
	sl := &sleeper{}
	var seen []string
	p := WithRetry(fake, RetryOptions{Sleep: sl.Sleep, OnRetry: func(attempt int, wait time.Duration, err error) {
		seen = append(seen, fmt.Sprintf("%d %v %v", attempt, wait, err))
	}})
	if _, err := p.Chat(t.Context(), Request{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"1 3s fake: HTTP 429: x"}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("OnRetry saw %q, want %q", seen, want)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestIsTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{status(503, 0), false}, // a StatusError is IsRetryable's business
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true},
		{&url.Error{Op: "Post", URL: "u", Err: io.EOF}, true},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{&url.Error{Op: "Post", URL: "u", Err: timeoutErr{}}, true},
		{&net.DNSError{Err: "no such host", Name: "ollama", IsNotFound: true}, false},
		{&net.DNSError{Err: "timeout", Name: "ollama", IsTimeout: true}, true},
	}
	for _, tc := range tests {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
