package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

func TestMissionIDIsStablePerSwarm(t *testing.T) {
	a := missionID("mine ore", []string{"id-2", "id-1"})
	if a != missionID("mine ore", []string{"id-1", "id-2"}) {
		t.Fatal("the same mission to the same myses must get the same id, whatever their order")
	}
	if a == missionID("mine ore", []string{"id-1", "id-3"}) {
		t.Fatal("another swarm (another database) must get another id, or JetStream would drop its mission")
	}
	if a == missionID("sell ore", []string{"id-1", "id-2"}) {
		t.Fatal("another mission must get another id")
	}
}

// seed-demo against a real local swarm whose runner has an OpenAI-compatible server (a local one listing one
// model): the demo myses are created on autopilot; seeding again with --provider openai switches them, keeping
// their ids; a provider that cannot serve (no Ollama there) is a sentence naming the mysis, not a gRPC dump; and a
// seed that asks for no provider (docker compose's job) leaves them as they are.
func TestSeedDemoSwitchesExistingMysesToTheProviderAskedFor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every service and runs a swarm")
	}
	openai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "not here", http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model","owned_by":"test"}]}`)
	}))
	defer openai.Close()
	s := startLocalSwarm(t, "OPENAI_BASE_URL="+openai.URL+"/v1", "OPENAI_API_KEY=test-key")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := func(provider, model string) (string, error) {
		var out strings.Builder
		err := seedDemo(ctx, s.clients, s.ep, demoSeed{myses: 2, provider: provider, model: model, mission: defaultMission,
			switchExisting: provider != ""}, &out)
		return out.String(), err
	}
	mysis1 := func() *memoryv1.Mysis {
		got, err := s.clients.swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: "mysis-1"})
		if err != nil {
			t.Fatal(err)
		}
		return got.GetStatus().GetMysis()
	}
	if out, err := seed("autopilot", ""); err != nil || !strings.Contains(out, "swarm: created mysis-1 (autopilot)") {
		t.Fatalf("first seed: %v\n%s", err, out)
	}
	id := mysis1().GetId()

	out, err := seed("openai", "gpt-test")
	if err != nil || !strings.Contains(out, "swarm: mysis-1 exists (history kept), switched from autopilot/autopilot to openai/gpt-test") {
		t.Fatalf("seed with openai: %v\n%s", err, out)
	}
	if m := mysis1(); m.GetId() != id || m.GetProvider() != "openai" || m.GetModel() != "gpt-test" {
		t.Fatalf("mysis-1 after the switch: %s %s/%s, want the same id on openai/gpt-test", m.GetId(), m.GetProvider(), m.GetModel())
	}

	_, err = seed("ollama", "")
	if err == nil || !strings.Contains(err.Error(), "mysis-1") || !strings.Contains(err.Error(), "ollama") ||
		strings.Contains(err.Error(), "rpc error") || strings.Contains(err.Error(), "desc =") {
		t.Fatalf("seed with an unreachable Ollama: %v, want a sentence naming mysis-1 and ollama", err)
	}
	t.Logf("seed with an unreachable Ollama: %v", err)

	if out, err := seed("", ""); err != nil || !strings.Contains(out, "swarm: mysis-1 exists (history kept)\n") {
		t.Fatalf("seed asking for no provider: %v\n%s", err, out)
	}
	if m := mysis1(); m.GetProvider() != "openai" {
		t.Fatalf("a seed that asked for no provider moved mysis-1 to %s", m.GetProvider())
	}
}
