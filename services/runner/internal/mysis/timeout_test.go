package mysis

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A provider that never finishes its reply (a stream that stalls, or trickles below any byte limit) is cut at
// LLMTimeout: the call is recorded with why it failed, the mysis goes errored saying so and is retried after its
// backoff, instead of waiting for ever inside one call (issue 41, finding 2).
func TestStalledReplyEndsAtTheCallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, _ := secretHarness(t, "unused-secret-value", time.Hour)
		cfg := h.actor.cfg
		cfg.LLMTimeout = 10 * time.Minute
		h.actor = New(testID, Deps{Store: h.store, Composer: h.composer, Tools: h.tools, Providers: fakeProviders{h.provider},
			Events: h.events, Calls: rec}, cfg)
		h.provider.gate = make(chan struct{}) // every call waits for a receive that never comes: only ctx ends it
		start := time.Now()
		h.start()
		advance(9 * time.Minute)
		if h.state() != StateRunning || h.provider.count() != 1 {
			t.Fatalf("before the timeout: state %s, %d calls", h.state(), h.provider.count())
		}
		advance(time.Minute)
		h.eventually("the mysis errored", func() bool { return h.state() == StateErrored })
		h.stop()
		if took := time.Since(start); took < 10*time.Minute || took > 11*time.Minute {
			t.Errorf("the call ended after %v of fake time, want the 10m timeout", took)
		}
		reason := h.store.get(testID).StateReason
		if !strings.Contains(reason, "no complete reply within 10m0s") {
			t.Errorf("state reason %q does not say the call timed out", reason)
		}
		if len(rec.calls) != 1 || !strings.Contains(rec.calls[0].Error, "no complete reply within 10m0s") {
			t.Errorf("recorded calls %+v", rec.calls)
		}
	})
}
