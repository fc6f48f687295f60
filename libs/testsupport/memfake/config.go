package memfake

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// config is the configuration part of a mysis, validated as a whole (rules.ValidateConfig) on create and on every
// update.
type config = rules.NewMysis

// UpdateMysisConfig implements MemoryService.UpdateMysisConfig: the fields that are set change, the result is
// validated as a whole, and a refused update changes nothing.
func (f *Fake) UpdateMysisConfig(_ context.Context, req *memoryv1.UpdateMysisConfigRequest) (*memoryv1.UpdateMysisConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("UpdateMysisConfig"); ok {
		return nil, injected(fault)
	}
	m, err := f.mysisLocked(req.GetMysisId())
	if err != nil {
		return nil, err
	}
	c := config{Provider: m.GetProvider(), Model: m.GetModel(), Temperature: m.GetTemperature(), SystemPrompt: m.GetSystemPrompt(),
		SpaceMoltEndpoint: m.GetSpacemoltEndpoint()}
	if req.Provider != nil {
		c.Provider = req.GetProvider()
	}
	if req.Model != nil {
		c.Model = req.GetModel()
	}
	if req.Temperature != nil {
		c.Temperature = req.GetTemperature()
	}
	if req.SystemPrompt != nil {
		c.SystemPrompt = req.GetSystemPrompt()
	}
	if req.SpacemoltEndpoint != nil {
		c.SpaceMoltEndpoint = req.GetSpacemoltEndpoint()
	}
	if err := rules.ValidateConfig(c); err != nil {
		return nil, err
	}
	m.Provider, m.Model, m.Temperature, m.SystemPrompt = c.Provider, c.Model, c.Temperature, c.SystemPrompt
	m.SpacemoltEndpoint = c.SpaceMoltEndpoint
	m.UpdatedAt = timestamppb.Now()
	f.changedLocked()
	return &memoryv1.UpdateMysisConfigResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis)}, nil
}

// DeleteMysis implements MemoryService.DeleteMysis: the mysis goes with its memories, idempotency keys, broadcast
// deliveries, LLM calls and spend limits, and its account is released (the real schema's ON DELETE CASCADE and SET NULL).
func (f *Fake) DeleteMysis(_ context.Context, req *memoryv1.DeleteMysisRequest) (*memoryv1.DeleteMysisResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("DeleteMysis"); ok {
		return nil, injected(fault)
	}
	m, err := f.mysisLocked(req.GetMysisId())
	if err != nil {
		return nil, err
	}
	id := m.GetId()
	delete(f.myses, id)
	delete(f.byName, m.GetName())
	delete(f.memories, id)
	delete(f.keys, id)
	for _, to := range f.delivered {
		delete(to, id)
	}
	for _, a := range f.accounts {
		if a.GetMysisId() == id {
			a.MysisId = ""
		}
	}
	// Its calls, spend windows and limits go too; the swarm's counts keep what it spent (no refund).
	f.callOrder = slices.DeleteFunc(f.callOrder, func(c string) bool {
		if f.llmCalls[c].mysisID == id {
			delete(f.llmCalls, c)
			return true
		}
		return false
	})
	delete(f.spend, id)
	delete(f.limits, id)
	f.changedLocked()
	return &memoryv1.DeleteMysisResponse{}, nil
}
