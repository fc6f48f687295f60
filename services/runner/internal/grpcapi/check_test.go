package grpcapi

import (
	"context"
	"errors"
	"testing"

	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

type noWakes struct{}

func (noWakes) Wake(context.Context, string, mysis.WakeReason) error { return nil }

// The provider check sees the provider and model the mysis would run with after the call, and what it refuses is
// never written.
func TestCreateAndConfigureAskTheProviderCheck(t *testing.T) {
	type seen struct{ provider, model string }
	var asked []seen
	refuse := errs.Conflictf("provider ollama is not reachable")
	check := func(_ context.Context, p, m string) error {
		asked = append(asked, seen{p, m})
		if p == "ollama" {
			return refuse
		}
		return nil
	}
	mem, client := startMemory(t, memfake.Options{})
	addMysis(t, mem, "scout-1", "autopilot", "autopilot")
	updates := func() int { return mem.Calls("UpdateMysisConfig") }
	s := New(client, nil, noWakes{}, noLive{}, Defaults{Rules: admin.Rules{Provider: "autopilot", Providers: []string{"autopilot", "ollama"},
		Models: map[string]string{"ollama": "qwen3:8b", "autopilot": "autopilot"}, Serves: check}})
	ctx := context.Background()

	_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "a", Provider: "ollama"})
	if !errors.Is(err, refuse) || mem.Calls("CreateMysis") != 1 {
		t.Fatalf("create with ollama down: %v (creates in memory: %d, want only the test's own)", err, mem.Calls("CreateMysis"))
	}
	str := func(v string) *string { return &v }
	_, err = s.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout-1", Provider: str("ollama")})
	if !errors.Is(err, refuse) || updates() != 0 {
		t.Fatalf("configure to ollama while down: %v (updates written: %d)", err, updates())
	}
	if m := storedMysis(t, mem, "scout-1"); m.GetProvider() != "autopilot" {
		t.Fatalf("after a refused configure the stored provider is %q", m.GetProvider())
	}
	if _, err = s.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout-1", Temperature: new(0.3)}); err != nil || updates() != 1 {
		t.Fatalf("temperature only: %v (updates written: %d)", err, updates())
	}
	if m := storedMysis(t, mem, "scout-1"); m.GetTemperature() != 0.3 || m.GetProvider() != "autopilot" {
		t.Fatalf("after a temperature change: %v", m)
	}
	want := []seen{{"ollama", "qwen3:8b"}, {"ollama", "qwen3:8b"}}
	if len(asked) != len(want) || asked[0] != want[0] || asked[1] != want[1] {
		t.Fatalf("check asked %v, want %v (a temperature change asks nothing)", asked, want)
	}
	if _, err := s.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout-1", Model: str("foo")}); err != nil {
		t.Fatal(err)
	}
	if got := asked[len(asked)-1]; got != (seen{"autopilot", "foo"}) {
		t.Fatalf("model change on autopilot asked %v", got)
	}
}
