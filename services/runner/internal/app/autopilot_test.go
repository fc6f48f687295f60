package app

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

type instant struct{}

func (instant) Name() string { return "autopilot" }
func (instant) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Reasoning: "done"}, nil
}

// ZOEA_AUTOPILOT_LATENCY delays each reply by the configured time and no more; a cancelled call returns at once.
func TestAutopilotLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := withLatency(instant{}, 3*time.Second)
		began := time.Now()
		resp, err := p.Chat(context.Background(), llm.Request{})
		if err != nil || resp.Reasoning != "done" {
			t.Fatalf("reply %+v, %v", resp, err)
		}
		if took := time.Since(began); took != 3*time.Second {
			t.Errorf("reply after %s, want 3s", took)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := p.Chat(ctx, llm.Request{}); err == nil {
			t.Error("a cancelled call succeeded")
		}
		if _, ok := withLatency(instant{}, 0).(instant); !ok {
			t.Error("no latency should leave the provider as it is")
		}
	})
}

func TestValidateRejectsBadStopGraceAndLatency(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.StopGrace = -time.Second }, "ZOEA_STOP_GRACE"},
		{func(c *Config) { c.AutopilotLatency = -time.Second }, "ZOEA_AUTOPILOT_LATENCY"},
	} {
		cfg := Config{MaxToolIterations: 10, LeaseTTL: 15 * time.Second, BackoffMin: time.Second, BackoffMax: time.Minute, StopGrace: 10 * time.Second}
		tc.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want an error naming %s", err, tc.want)
		}
	}
}
