package grpcapi

import (
	"context"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
)

// askedIDs records the mysis ids memory's GetMysis is asked for (a server interceptor on the shared fake).
type askedIDs struct {
	mu  sync.Mutex
	ids []string
}

func (a *askedIDs) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*memoryv1.GetMysisRequest); ok {
		a.mu.Lock()
		a.ids = append(a.ids, r.GetMysisId())
		a.mu.Unlock()
	}
	return h(ctx, req)
}

func (a *askedIDs) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ids)
}

// An unknown id is NotFound (no name can be a UUID, so there is no name to try); an unknown name is NotFound too.
func TestResolveUnknownIDAndName(t *testing.T) {
	mem, client := startMemory(t, memfake.Options{}) // knows no mysis
	s := New(client, nil, nil, noLive{}, Defaults{Rules: admin.Rules{Provider: "autopilot"}})
	ctx := context.Background()
	for _, ref := range []string{"0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4", "nobody"} {
		_, err := s.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: ref})
		if !errs.Is(err, errs.NotFound) {
			t.Errorf("%s: %v, want NotFound", ref, err)
		}
	}
	if n := mem.Calls("GetMysisByName"); n != 1 {
		t.Errorf("name lookups = %d, want 1 (only for the name)", n)
	}
}

// Any spelling of a UUID (upper case, no dashes, braces, urn:uuid:) is an id, asked of memory in canonical form.
func TestResolveAcceptsEveryUUIDSpelling(t *testing.T) {
	asked := &askedIDs{}
	mem, client := startMemory(t, memfake.Options{Interceptors: []grpc.UnaryServerInterceptor{asked.intercept}}) // knows no mysis
	s := New(client, nil, nil, noLive{}, Defaults{Rules: admin.Rules{Provider: "autopilot"}})
	const canonical = "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"
	refs := []string{canonical, "0B8C7D2E-1F3A-4B5C-9D6E-7F8091A2B3C4", "0b8c7d2e1f3a4b5c9d6e7f8091a2b3c4",
		"{0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4}", "urn:uuid:0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"}
	for _, ref := range refs {
		if _, err := s.GetMysis(context.Background(), &runnerv1.GetMysisRequest{Mysis: ref}); !errs.Is(err, errs.NotFound) {
			t.Errorf("%s: %v, want NotFound", ref, err)
		}
	}
	ids := asked.get()
	if len(ids) != len(refs) || mem.Calls("GetMysisByName") != 0 {
		t.Fatalf("id lookups %v, name lookups %d: every ref is an id", ids, mem.Calls("GetMysisByName"))
	}
	for _, id := range ids {
		if id != canonical {
			t.Errorf("memory asked for %q, want the canonical %q", id, canonical)
		}
	}
}

// Memory stores the provider as an opaque name, so the runner refuses a switch to a provider that needs a model
// when none is given and none is configured.
func TestConfigureRequiresAModelForModelProviders(t *testing.T) {
	mem, client := startMemory(t, memfake.Options{})
	addMysis(t, mem, "scout", "autopilot", "")
	s := New(client, nil, nil, noLive{}, Defaults{Rules: admin.Rules{Provider: "autopilot", Providers: []string{"autopilot", "openai"}}})
	openai := "openai"
	_, err := s.ConfigureMysis(context.Background(), &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: &openai})
	if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) != "model" {
		t.Fatalf("switch to openai without a model: %v, want Invalid naming model", err)
	}
	if n, m := mem.Calls("UpdateMysisConfig"), storedMysis(t, mem, "scout"); n != 0 || m.GetProvider() != "autopilot" {
		t.Fatalf("the refused switch reached memory: %d updates, stored provider %q", n, m.GetProvider())
	}
}
