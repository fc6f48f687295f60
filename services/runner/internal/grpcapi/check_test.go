package grpcapi

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// oneMysis is a memory service holding one mysis; only the calls configure makes are implemented.
type oneMysis struct {
	memoryv1.MemoryServiceClient
	m       *memoryv1.Mysis
	updated bool
}

func (o *oneMysis) GetMysisByName(context.Context, *memoryv1.GetMysisByNameRequest, ...grpc.CallOption) (*memoryv1.GetMysisByNameResponse, error) {
	return &memoryv1.GetMysisByNameResponse{Mysis: o.m}, nil
}

func (o *oneMysis) UpdateMysisConfig(_ context.Context, in *memoryv1.UpdateMysisConfigRequest, _ ...grpc.CallOption) (*memoryv1.UpdateMysisConfigResponse, error) {
	o.updated = true
	return &memoryv1.UpdateMysisConfigResponse{Mysis: o.m}, nil
}

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
	mem := &oneMysis{m: &memoryv1.Mysis{Id: "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4", Name: "scout-1", Provider: "autopilot", Model: "autopilot"}}
	s := New(memoryclient.New(mem), nil, noWakes{}, noLive{}, Defaults{Provider: "autopilot", Providers: []string{"autopilot", "ollama"},
		Models: map[string]string{"ollama": "qwen3:8b", "autopilot": "autopilot"}, Check: check})
	ctx := context.Background()

	_, err := s.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "a", Provider: "ollama"})
	if !errors.Is(err, refuse) {
		t.Fatalf("create with ollama down: %v", err)
	}
	str := func(v string) *string { return &v }
	_, err = s.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout-1", Provider: str("ollama")})
	if !errors.Is(err, refuse) || mem.updated {
		t.Fatalf("configure to ollama while down: %v (written: %v)", err, mem.updated)
	}
	if _, err = s.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout-1", Temperature: new(0.3)}); err != nil || !mem.updated {
		t.Fatalf("temperature only: %v", err)
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
