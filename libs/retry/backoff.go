// Package retry is Zoea's one rule for how long to wait between attempts: a delay that starts at Policy.Initial,
// doubles after every failure up to Policy.Max, and is jittered downwards so that many clients that failed together
// (a swarm behind one rate limit, every replica after a NATS restart) do not come back together. The growth, its
// overflow-safe cap and the randomisation all come from github.com/cenkalti/backoff/v5: the library spreads a delay
// symmetrically around its interval, so the interval is centred below the undisturbed delay (see New) and the
// spread falls exactly on [(1−Jitter)·d, d], never above the cap.
//
// Callers keep their own decision of what is worth retrying; the delay is shared, and Do is the shared loop for a
// caller that has nothing else to do between attempts.
package retry

import (
	"context"
	"time"

	cbackoff "github.com/cenkalti/backoff/v5"
)

// Policy describes one caller's delays.
type Policy struct {
	// Initial is the delay after the first failure, before jitter. It must be positive.
	Initial time.Duration
	// Max caps every delay (values below Initial are raised to Initial).
	Max time.Duration
	// Jitter is the fraction of each delay that is random, in [0, 1]: a delay d becomes a value in [(1−Jitter)·d, d].
	// 0 gives the exact doubling sequence; 0.5 is "equal jitter".
	Jitter float64
}

// Backoff is the stateful form of a Policy: Next returns successive delays, Reset starts over after a success.
// It is not safe for concurrent use; each retrying loop owns one.
type Backoff struct {
	max time.Duration
	exp cbackoff.ExponentialBackOff
}

// New returns a Backoff whose first Next is Policy.Initial (less jitter).
//
// The library returns its interval c times a random factor in [1−f, 1+f]. With the interval centred at
// c = d·(1−Jitter/2) (d the undisturbed delay: Initial doubling up to Max) and f = (Jitter/2)/(1−Jitter/2), that is
// [(1−Jitter)·d, d]: the fixed part keeps the delay growing, the random part spreads the callers, and the cap holds.
func New(p Policy) *Backoff {
	p.Max = max(p.Max, p.Initial)
	j := min(max(p.Jitter, 0), 1)
	centre := 1 - j/2
	b := &Backoff{max: p.Max, exp: cbackoff.ExponentialBackOff{
		InitialInterval:     time.Duration(float64(p.Initial) * centre),
		RandomizationFactor: j / 2 / centre,
		Multiplier:          2,
		MaxInterval:         time.Duration(float64(p.Max) * centre),
	}}
	b.exp.Reset()
	return b
}

// Next returns the delay before the next attempt and advances the sequence.
func (b *Backoff) Next() time.Duration {
	// The min only guards the cap against the library's float rounding (a nanosecond at most).
	return min(b.exp.NextBackOff(), b.max)
}

// Reset starts the sequence over at Initial, after a success.
func (b *Backoff) Reset() { b.exp.Reset() }

// Delay is the stateless form for callbacks that are told the attempt number (1 for the delay after the first
// failure), such as nats.CustomReconnectDelay.
func (p Policy) Delay(attempt int) time.Duration {
	b := New(p)
	// 63 doublings overflow any Duration, so every later attempt has reached Max long before.
	for range min(max(attempt, 1), 64) - 1 {
		b.exp.NextBackOff()
	}
	return b.Next()
}

// NextBackOff is Next under the name github.com/cenkalti/backoff/v5's BackOff interface uses, so a Backoff can drive
// the library's retry loop (Do).
func (b *Backoff) NextBackOff() time.Duration { return b.Next() }

// Do runs op until it succeeds, returns an error marked Permanent (Do returns the error inside at once), ctx ends
// (Do returns its cause), or the next wait would end more than within after the first attempt (Do returns op's
// last error; within 0: no bound). It waits between attempts by p. notify, when not nil, is told each failure and
// the wait that follows it, before the wait (for logs). The loop is github.com/cenkalti/backoff/v5's Retry.
func Do(ctx context.Context, p Policy, within time.Duration, op func() error, notify func(err error, wait time.Duration)) error {
	opts := []cbackoff.RetryOption{cbackoff.WithBackOff(New(p)), cbackoff.WithMaxElapsedTime(within)}
	if notify != nil {
		opts = append(opts, cbackoff.WithNotify(notify))
	}
	_, err := cbackoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, op() }, opts...)
	return err
}

// Permanent marks err as not worth another attempt: Do returns err itself at once. Permanent(nil) is nil.
func Permanent(err error) error { return cbackoff.Permanent(err) }
