package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// endpointRunner records the SpaceMolt endpoint create and configure send, and answers with a mysis that plays it.
type endpointRunner struct {
	runnerv1.UnimplementedSwarmServiceServer
	mu         sync.Mutex
	created    []string
	configured []*string
}

func (r *endpointRunner) CreateMysis(_ context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.CreateMysisResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.created = append(r.created, req.GetSpacemoltEndpoint())
	return &runnerv1.CreateMysisResponse{Status: &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-1", Name: req.GetName(),
		SpacemoltEndpoint: req.GetSpacemoltEndpoint()}}}, nil
}

func (r *endpointRunner) ConfigureMysis(_ context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.ConfigureMysisResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configured = append(r.configured, req.SpacemoltEndpoint)
	return &runnerv1.ConfigureMysisResponse{Status: &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-1", Name: req.GetMysis(),
		SpacemoltEndpoint: req.GetSpacemoltEndpoint()}}}, nil
}

func (r *endpointRunner) GetMysis(_ context.Context, req *runnerv1.GetMysisRequest) (*runnerv1.GetMysisResponse, error) {
	return &runnerv1.GetMysisResponse{Status: &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-1", Name: req.GetMysis(), SpacemoltEndpoint: "v2"}}}, nil
}

// The SpaceMolt endpoint per mysis (issue 29): zoea create --endpoint and zoea configure --endpoint send it
// ("swarm" is the swarm's, ""); configure without the flag leaves it alone; get shows it.
func TestEndpointFlags(t *testing.T) {
	r := &endpointRunner{}
	addr := serveRunner(t, r)
	runZoea(t, "--runner", addr, "create", "far", "--endpoint", "v2")
	runZoea(t, "--runner", addr, "create", "near")
	runZoea(t, "--runner", addr, "configure", "far", "--endpoint", "v1")
	runZoea(t, "--runner", addr, "configure", "far", "--endpoint", "swarm")
	runZoea(t, "--runner", addr, "configure", "far", "--temperature", "0.2")
	if strings.Join(r.created, ",") != "v2," {
		t.Errorf("create sent endpoints %q, want v2 then none", r.created)
	}
	var got []string
	for _, e := range r.configured {
		if e == nil {
			got = append(got, "unset")
		} else {
			got = append(got, "'"+*e+"'")
		}
	}
	if strings.Join(got, ",") != "'v1','',unset" {
		t.Errorf("configure sent endpoints %v, want v1, the swarm's, then nothing", got)
	}
	if out := runZoea(t, "--runner", addr, "get", "far"); !strings.Contains(out, "v2 (/mcp/v2)") {
		t.Errorf("get does not show the endpoint:\n%s", out)
	}
}
