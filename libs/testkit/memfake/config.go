package memfake

import (
	"context"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
)

// maxProvider is the real service's bound on a provider name (memory.MaxProviderBytes).
const maxProvider = 32

// config is the configuration part of a mysis, validated as a whole on create and on every update.
type config struct {
	provider, model, systemPrompt, endpoint string
	temperature                             float64
}

// validate applies the real service's rules (memory validateConfig): a provider identifier, a storable model, a
// temperature of 0–2 and a non-blank system prompt of at most maxSystemPrompt bytes.
func (c config) validate() error {
	if err := checkProvider(c.provider); err != nil {
		return err
	}
	if err := checkText("model", c.model, maxShortField); err != nil {
		return err
	}
	if t := c.temperature; t != t || t < 0 || t > 2 {
		return errs.InvalidField("temperature", "must be between 0 and 2")
	}
	if e := c.endpoint; e != "" && e != "v1" && e != "v2" {
		return errs.InvalidField("spacemolt_endpoint", "must be v1 (the flat tools at /mcp), v2 (the action tools at /mcp/v2) or empty for the swarm's endpoint")
	}
	if strings.TrimSpace(c.systemPrompt) == "" {
		return errs.InvalidField("system_prompt", "required: a mysis without a system prompt cannot be composed")
	}
	return checkText("system_prompt", c.systemPrompt, maxSystemPrompt)
}

// checkProvider: 1–maxProvider lower-case letters, digits, '_', '-' or '.', starting with a letter or digit. Which
// providers exist is the runner's question, as in the real service.
func checkProvider(p string) error {
	if p == "" {
		return errs.InvalidField("provider", "required")
	}
	if len(p) > maxProvider {
		return errs.InvalidField("provider", "too long: %d bytes, at most %d", len(p), maxProvider)
	}
	for i, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '_' || r == '-' || r == '.')) {
			return errs.InvalidField("provider", "not a provider name: lower-case letters, digits, '_', '-' or '.', starting with a letter or digit")
		}
	}
	return nil
}

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
	c := config{provider: m.GetProvider(), model: m.GetModel(), temperature: m.GetTemperature(), systemPrompt: m.GetSystemPrompt(),
		endpoint: m.GetSpacemoltEndpoint()}
	if req.Provider != nil {
		c.provider = req.GetProvider()
	}
	if req.Model != nil {
		c.model = req.GetModel()
	}
	if req.Temperature != nil {
		c.temperature = req.GetTemperature()
	}
	if req.SystemPrompt != nil {
		c.systemPrompt = req.GetSystemPrompt()
	}
	if req.SpacemoltEndpoint != nil {
		c.endpoint = req.GetSpacemoltEndpoint()
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	m.Provider, m.Model, m.Temperature, m.SystemPrompt = c.provider, c.model, c.temperature, c.systemPrompt
	m.SpacemoltEndpoint = c.endpoint
	m.UpdatedAt = timestamppb.Now()
	f.changedLocked()
	return &memoryv1.UpdateMysisConfigResponse{Mysis: proto.Clone(m).(*memoryv1.Mysis)}, nil
}

// DeleteMysis implements MemoryService.DeleteMysis: the mysis goes with its memories, idempotency keys and broadcast
// deliveries, and its account is released (the real schema's ON DELETE CASCADE and SET NULL).
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
	f.changedLocked()
	return &memoryv1.DeleteMysisResponse{}, nil
}
