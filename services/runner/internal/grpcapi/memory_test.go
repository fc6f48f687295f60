package grpcapi

import (
	"context"
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/memoryclient"
)

// startMemory serves the shared in-memory memory service (libs/testsupport/memfake, which passes the contract suite the
// real service defines, libs/testsupport/memorycontract) and returns it with the runner's real adapter, memoryclient, over a
// gRPC client of it. What a test needs to see of the calls it gets from the fake (Calls, inspection) or from an
// interceptor in opts.
func startMemory(t *testing.T, opts memfake.Options) (*memfake.Fake, *memoryclient.Client) {
	t.Helper()
	f := memfake.StartWith(t, opts)
	return f, memoryclient.New(f.Client(t))
}

// addMysis creates a mysis in the fake and returns it as stored.
func addMysis(t *testing.T, f *memfake.Fake, name, provider, model string) *memoryv1.Mysis {
	t.Helper()
	resp, err := f.CreateMysis(context.Background(), &memoryv1.CreateMysisRequest{Name: name, Provider: provider, Model: model,
		SystemPrompt: "You play SpaceMolt."})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return resp.GetMysis()
}

// storedMysis reads a mysis back from the fake by name.
func storedMysis(t *testing.T, f *memfake.Fake, name string) *memoryv1.Mysis {
	t.Helper()
	resp, err := f.GetMysisByName(context.Background(), &memoryv1.GetMysisByNameRequest{Name: name})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return resp.GetMysis()
}
