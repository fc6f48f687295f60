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
}

func (n *noMyses) GetMysis(context.Context, *memoryv1.GetMysisRequest, ...grpc.CallOption) (*memoryv1.GetMysisResponse, error) {
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
