package memoryclient

import (
	"context"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
	"github.com/zoeaswarm/zoea/services/runner/internal/memorypb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// The admin API (grpcapi's SwarmService) re-exports the memory service's records: a MysisStatus carries a
// memoryv1.Mysis and usage rows are memoryv1.UsageTotals. The methods below therefore hand records back as stored,
// so nothing is lost in a round trip through a domain type; errors are libs/errs errors like everywhere else here.

// MysisRecord returns the stored mysis with this id.
func (c *Client) MysisRecord(ctx context.Context, id string) (*memoryv1.Mysis, error) {
	resp, err := c.api.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: id})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return resp.GetMysis(), nil
}

// MysisRecordByName returns the stored mysis with this name.
func (c *Client) MysisRecordByName(ctx context.Context, name string) (*memoryv1.Mysis, error) {
	resp, err := c.api.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: name})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return resp.GetMysis(), nil
}

// ListMysisRecords returns a page of myses, optionally only those in state (UNSPECIFIED: all).
func (c *Client) ListMysisRecords(ctx context.Context, state memoryv1.MysisState, pageSize int32, pageToken string) ([]*memoryv1.Mysis, string, error) {
	resp, err := c.api.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: pageSize, PageToken: pageToken, State: state})
	if err != nil {
		return nil, "", server.FromStatus(err)
	}
	return resp.GetMyses(), resp.GetNextPageToken(), nil
}

// CreateMysis stores a new mysis.
func (c *Client) CreateMysis(ctx context.Context, m admin.NewMysis) (*memoryv1.Mysis, error) {
	resp, err := c.api.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: m.Name, Provider: m.Provider, Model: m.Model,
		Temperature: m.Temperature, SystemPrompt: m.SystemPrompt, SpacemoltEndpoint: m.SpaceMoltEndpoint})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return resp.GetMysis(), nil
}

// SetStateRecord changes a mysis's state (as SetState) and returns the stored record.
func (c *Client) SetStateRecord(ctx context.Context, id string, ch mysis.StateChange) (*memoryv1.Mysis, error) {
	resp, err := c.api.SetMysisState(ctx, toProtoStateChange(id, ch))
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return resp.GetMysis(), nil
}

// UpdateConfig changes a mysis's configuration.
func (c *Client) UpdateConfig(ctx context.Context, id string, ch admin.ConfigChange) (*memoryv1.Mysis, error) {
	resp, err := c.api.UpdateMysisConfig(ctx, &memoryv1.UpdateMysisConfigRequest{MysisId: id, Provider: ch.Provider, Model: ch.Model,
		Temperature: ch.Temperature, SystemPrompt: ch.SystemPrompt, SpacemoltEndpoint: ch.SpaceMoltEndpoint})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return resp.GetMysis(), nil
}

// DeleteMysis deletes a mysis and its memories.
func (c *Client) DeleteMysis(ctx context.Context, id string) error {
	if _, err := c.api.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: id}); err != nil {
		return server.FromStatus(err)
	}
	return nil
}

// Usage sums recorded LLM usage (the admin API forwards its query).
func (c *Client) Usage(ctx context.Context, q *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
	resp, err := c.api.GetUsage(ctx, q)
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return resp, nil
}

// SetSpendLimits replaces a mysis's own spend limits.
func (c *Client) SetSpendLimits(ctx context.Context, id string, limits []*memoryv1.SpendLimit) error {
	if _, err := c.api.SetSpendLimits(ctx, &memoryv1.SetSpendLimitsRequest{MysisId: id, Limits: limits}); err != nil {
		return server.FromStatus(err)
	}
	return nil
}

// OwnSpendLimits returns a mysis's own spend limits.
func (c *Client) OwnSpendLimits(ctx context.Context, id string) ([]usage.Limit, error) {
	resp, err := c.api.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: id})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	return memorypb.FromProtoLimits(resp.GetLimits()), nil
}
