package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/zoeaswarm/zoea/libs/retry"
)

// RetryOptions tunes WithRetry. The zero value is usable: every unset field takes the default named on it.
type RetryOptions struct {
	// MaxAttempts counts the first call too (default 4). 1 disables retries.
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt; it doubles on every later one (default 1s).
	BaseDelay time.Duration
	// MaxDelay caps the exponential backoff (default 30s). It does not shorten a Retry-After.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After we are willing to wait (default 60s). A server asking for more gets
	// its error returned at once: retrying sooner than it said would only be refused again, and a mysis parked for
	// minutes inside one LLM call is worse than an errored mysis that the runner's own backoff revives.
	MaxRetryAfter time.Duration
	// Retryable decides which errors are worth another attempt (default: IsRetryable or IsTransient).
	Retryable func(error) bool
	// Now is the clock used to compare a wait with the context deadline (default time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends (default a timer). Tests inject a recorder that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told about every retry before its wait (for logs and metrics).
	OnRetry func(attempt int, wait time.Duration, err error)
}

func (o RetryOptions) withDefaults() RetryOptions {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = time.Second
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 30 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 60 * time.Second
	}
	if o.Retryable == nil {
		o.Retryable = func(err error) bool { return IsRetryable(err) || IsTransient(err) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return o
}

// WithRetry returns a Provider that retries p's retryable failures with exponential backoff and jitter, never
// sooner than a StatusError's RetryAfter. It is the only layer that retries (adapters disable their SDK's own
// retries), so every provider honours Retry-After the same way (LESSONS 11).
func WithRetry(p Provider, opts RetryOptions) Provider {
	return &retrying{next: p, opts: opts.withDefaults()}
}

type retrying struct {
	next Provider
	opts RetryOptions
}

func (r *retrying) Name() string { return r.next.Name() }

func (r *retrying) Chat(ctx context.Context, req Request) (Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Chat(ctx, req)
		if err == nil {
			resp.Retries = attempt - 1
			return resp, nil
		}
		if ctx.Err() != nil || !r.opts.Retryable(err) {
			return Response{}, retried(attempt-1, err)
		}
		if attempt >= r.opts.MaxAttempts {
			return Response{}, retried(attempt-1, fmt.Errorf("llm: giving up after %d attempts: %w", attempt, err))
		}
		wait, werr := r.wait(ctx, attempt, err)
		if werr != nil {
			return Response{}, retried(attempt-1, werr)
		}
		if r.opts.OnRetry != nil {
			r.opts.OnRetry(attempt, wait, err)
		}
		if serr := r.opts.Sleep(ctx, wait); serr != nil {
			return Response{}, retried(attempt-1, serr)
		}
	}
}

// retried wraps err with the retry count for the call's accounting; an error after no retry stays as it is.
func retried(n int, err error) error {
	if n == 0 {
		return err
	}
	return &RetriedError{Retries: n, Err: err}
}

// wait is how long to pause after the attempt-th failure, or an error when the server's Retry-After or the
// context deadline rules out another attempt.
func (r *retrying) wait(ctx context.Context, attempt int, err error) (time.Duration, error) {
	// Equal jitter (the shared rule with half of each delay random): the fixed half keeps the wait growing with
	// every attempt, the random half keeps a swarm that hit the same rate limit together from coming back together.
	wait := retry.Policy{Initial: r.opts.BaseDelay, Max: r.opts.MaxDelay, Jitter: 0.5}.Delay(attempt)

	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		if se.RetryAfter > r.opts.MaxRetryAfter {
			return 0, fmt.Errorf("llm: server asks to retry after %v, more than the %v we wait: %w", se.RetryAfter, r.opts.MaxRetryAfter, err)
		}
		wait = max(wait, se.RetryAfter)
	}
	if dl, ok := ctx.Deadline(); ok && r.opts.Now().Add(wait).After(dl) {
		// Sleeping into the deadline would only turn a useful error into DeadlineExceeded.
		return 0, fmt.Errorf("llm: retry in %v would pass the context deadline: %w", wait, err)
	}
	return wait, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// IsTransient reports whether err is a network failure that a new connection may not repeat: a reset or refused
// connection (Ollama restarting, a proxy recycling), a connection closed mid-response, or a network timeout.
// Context cancellation is never transient: the caller gave up.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTimeout || dnsErr.IsTemporary
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
