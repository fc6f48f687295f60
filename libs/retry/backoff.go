// Package retry is Zoea's one rule for how long to wait between attempts: a delay that starts at Policy.Initial,
// doubles after every failure up to Policy.Max, and is jittered downwards so that many clients that failed together
// (a swarm behind one rate limit, every replica after a NATS restart) do not come back together. The growth and its
// overflow-safe cap come from github.com/cenkalti/backoff/v5; the jitter is applied here because the library's own
// randomisation can exceed the cap and cannot be made deterministic in tests.
//
// Callers keep their own limits and their own decision of what is worth retrying; only the delay is shared.
package retry

import (
	"math/rand/v2"
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
	// Rand returns a number in [0, 1) (default math/rand/v2.Float64). Tests inject a constant.
	Rand func() float64
}

// Backoff is the stateful form of a Policy: Next returns successive delays, Reset starts over after a success.
// It is not safe for concurrent use; each retrying loop owns one.
type Backoff struct {
	p   Policy
	exp cbackoff.ExponentialBackOff
}

// New returns a Backoff whose first Next is Policy.Initial (less jitter).
func New(p Policy) *Backoff {
	p.Max = max(p.Max, p.Initial)
	p.Jitter = min(max(p.Jitter, 0), 1)
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	b := &Backoff{p: p, exp: cbackoff.ExponentialBackOff{
		InitialInterval: p.Initial,
		Multiplier:      2,
		MaxInterval:     p.Max,
		// RandomizationFactor 0: the library yields the exact doubling sequence; jitter is ours (see package doc).
	}}
	b.exp.Reset()
	return b
}

// Next returns the delay before the next attempt and advances the sequence.
func (b *Backoff) Next() time.Duration {
	d := min(b.exp.NextBackOff(), b.p.Max)
	if b.p.Jitter == 0 {
		return d
	}
	// d·(1 − Jitter + Jitter·r): the fixed part keeps the delay growing, the random part spreads the callers.
	return d - time.Duration(b.p.Jitter*(1-b.p.Rand())*float64(d))
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
