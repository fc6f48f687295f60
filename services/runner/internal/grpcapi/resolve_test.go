package grpcapi

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/memoryclient"
)

// noMyses is a memory service that knows no mysis; it embeds the interface so any other call would panic.
type noMyses struct {
	memoryv1.MemoryServiceClient
	byName int
	ids    []string // ids asked for by GetMysis
}

func (n *noMyses) GetMysis(_ context.Context, req *memoryv1.GetMysisRequest, _ ...grpc.CallOption) (*memoryv1.GetMysisResponse, error) {
	n.ids = append(n.ids, req.GetMysisId())
	return nil, status.Error(codes.NotFound, "mysis not found")
}

func (n *noMyses) GetMysisByName(context.Context, *memoryv1.GetMysisByNameRequest, ...grpc.CallOption) (*memoryv1.GetMysisByNameResponse, error) {
	n.byName++
	return nil, status.Error(codes.NotFound, "mysis not found")
}

// An unknown id is NotFound (no name can be a UUID, so there is no name to try); an unknown name is NotFound too.
func TestResolveUnknownIDAndName(t *testing.T) {
	mem := &noMyses{}
	s := New(memoryclient.New(mem), nil, nil, noLive{}, Defaults{Provider: "autopilot"})
	ctx := context.Background()
	for _, ref := range []string{"0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4", "nobody"} {
		_, err := s.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: ref})
		if !errs.Is(err, errs.NotFound) {
			t.Errorf("%s: %v, want NotFound", ref, err)
		}
	}
	if mem.byName != 1 {
		t.Errorf("name lookups = %d, want 1 (only for the name)", mem.byName)
	}
}

// Any spelling of a UUID (upper case, no dashes, braces, urn:uuid:) is an id, asked of memory in canonical form.
func TestResolveAcceptsEveryUUIDSpelling(t *testing.T) {
	mem := &noMyses{}
	s := New(memoryclient.New(mem), nil, nil, noLive{}, Defaults{Provider: "autopilot"})
	const canonical = "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"
	refs := []string{canonical, "0B8C7D2E-1F3A-4B5C-9D6E-7F8091A2B3C4", "0b8c7d2e1f3a4b5c9d6e7f8091a2b3c4",
		"{0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4}", "urn:uuid:0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"}
	for _, ref := range refs {
		if _, err := s.GetMysis(context.Background(), &runnerv1.GetMysisRequest{Mysis: ref}); !errs.Is(err, errs.NotFound) {
			t.Errorf("%s: %v, want NotFound", ref, err)
		}
	}
	if len(mem.ids) != len(refs) || mem.byName != 0 {
		t.Fatalf("id lookups %v, name lookups %d: every ref is an id", mem.ids, mem.byName)
	}
	for _, id := range mem.ids {
		if id != canonical {
			t.Errorf("memory asked for %q, want the canonical %q", id, canonical)
		}
	}
}

// autopilotMysis is a memory service holding one autopilot mysis; a config update would panic (embedded nil).
type autopilotMysis struct{ memoryv1.MemoryServiceClient }

func (autopilotMysis) GetMysisByName(context.Context, *memoryv1.GetMysisByNameRequest, ...grpc.CallOption) (*memoryv1.GetMysisByNameResponse, error) {
	return &memoryv1.GetMysisByNameResponse{Mysis: &memoryv1.Mysis{Id: "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4", Name: "scout", Provider: "autopilot"}}, nil
}

// Memory stores the provider as an opaque name, so the runner refuses a switch to a provider that needs a model
// when none is given and none is configured.
func TestConfigureRequiresAModelForModelProviders(t *testing.T) {
	s := New(memoryclient.New(autopilotMysis{}), nil, nil, noLive{}, Defaults{Provider: "autopilot", Providers: []string{"autopilot", "openai"}})
	openai := "openai"
	_, err := s.ConfigureMysis(context.Background(), &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: &openai})
	if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) != "model" {
		t.Fatalf("switch to openai without a model: %v, want Invalid naming model", err)
	}
}
