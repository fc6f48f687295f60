package grpcapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// RecordLlmCalls implements MemoryService.RecordLlmCalls.
func (s *Server) RecordLlmCalls(ctx context.Context, req *memoryv1.RecordLlmCallsRequest) (*memoryv1.RecordLlmCallsResponse, error) {
	in := req.GetCalls()
	// Bounded before converting, like AppendMemories' batch; memory.Service checks the same bound.
	if len(in) > memory.MaxCallsPerCall {
		return nil, errs.InvalidField("calls", "at most %d calls per request, got %d", memory.MaxCallsPerCall, len(in))
	}
	calls := make([]memory.LlmCall, len(in))
	for i, c := range in {
		if c == nil {
			return nil, errs.InvalidField(fmt.Sprintf("calls[%d]", i), "required")
		}
		calls[i] = *fromProtoLlmCall(c)
	}
	n, err := s.svc.RecordLlmCalls(ctx, req.GetMysisId(), calls)
	if err != nil {
		return nil, err
	}
	return &memoryv1.RecordLlmCallsResponse{RecordedCount: int32(n)}, nil
}

// GetUsage implements MemoryService.GetUsage.
func (s *Server) GetUsage(ctx context.Context, req *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
	q := memory.UsageQuery{MysisIDs: req.GetMysisIds(), PageSize: int(req.GetPageSize()), Top: int(req.GetTop())}
	if err := rules.ValidateTop(q.Top, req.GetGroupBy() == memoryv1.UsageGroup_USAGE_GROUP_MYSIS, q.PageSize, req.GetPageToken() != ""); err != nil {
		return nil, err
	}
	if req.From != nil {
		if err := req.GetFrom().CheckValid(); err != nil {
			return nil, errs.InvalidField("from", "not a valid timestamp")
		}
		q.From = req.GetFrom().AsTime()
	}
	if req.To != nil {
		if err := req.GetTo().CheckValid(); err != nil {
			return nil, errs.InvalidField("to", "not a valid timestamp")
		}
		q.To = req.GetTo().AsTime()
	}
	switch req.GetGroupBy() {
	case memoryv1.UsageGroup_USAGE_GROUP_UNSPECIFIED:
		q.GroupBy = memory.GroupNone
	case memoryv1.UsageGroup_USAGE_GROUP_MYSIS:
		q.GroupBy = memory.GroupMysis
	case memoryv1.UsageGroup_USAGE_GROUP_MODEL:
		q.GroupBy = memory.GroupModel
	default:
		return nil, errs.InvalidField("group_by", "unknown grouping %d", req.GetGroupBy())
	}
	tok, err := decodeUsageToken(req.GetPageToken(), q.GroupBy)
	if err != nil {
		return nil, err
	}
	q.AfterName, q.AfterProvider, q.AfterModel = tok.Name, tok.Provider, tok.Model
	u, err := s.svc.GetUsage(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &memoryv1.GetUsageResponse{Total: toProtoUsageTotals(u.Total)}
	for _, r := range u.Rows {
		out.Rows = append(out.Rows, &memoryv1.UsageRow{MysisId: r.MysisID, MysisName: r.MysisName, Provider: r.Provider, Model: r.Model, Totals: toProtoUsageTotals(r.Totals)})
	}
	if u.More && len(u.Rows) > 0 && q.Top == 0 {
		last := u.Rows[len(u.Rows)-1]
		out.NextPageToken = encodeUsageToken(usageToken{Group: int(q.GroupBy), Name: last.MysisName, Provider: last.Provider, Model: last.Model})
	}
	return out, nil
}

// GetSpend implements MemoryService.GetSpend.
func (s *Server) GetSpend(ctx context.Context, req *memoryv1.GetSpendRequest) (*memoryv1.GetSpendResponse, error) {
	var at time.Time // unset: now, by the Service's clock
	if req.At != nil {
		if err := req.GetAt().CheckValid(); err != nil {
			return nil, errs.InvalidField("at", "not a valid timestamp")
		}
		at = req.GetAt().AsTime()
	}
	sp, err := s.svc.GetSpend(ctx, req.GetMysisId(), at)
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetSpendResponse{Limits: ToProtoSpendLimits(sp.Limits), Mysis: toProtoSpendCounts(sp.Mysis), Swarm: toProtoSpendCounts(sp.Swarm)}, nil
}

// SetSpendLimits implements MemoryService.SetSpendLimits.
func (s *Server) SetSpendLimits(ctx context.Context, req *memoryv1.SetSpendLimitsRequest) (*memoryv1.SetSpendLimitsResponse, error) {
	ls := make([]memory.SpendLimit, len(req.GetLimits()))
	for i, l := range req.GetLimits() {
		ls[i] = memory.SpendLimit{Window: memory.SpendWindow(l.GetWindow()), Unit: memory.SpendUnit(l.GetUnit()), Amount: l.GetAmount()}
	}
	out, err := s.svc.SetSpendLimits(ctx, req.GetMysisId(), ls)
	if err != nil {
		return nil, err
	}
	return &memoryv1.SetSpendLimitsResponse{Limits: ToProtoSpendLimits(out)}, nil
}

// fromProtoLlmCall converts a call's accounting; nil stays nil. The proto enum numbers and the stored numbers of
// windows and units are the same.
func fromProtoLlmCall(c *memoryv1.LlmCall) *memory.LlmCall {
	if c == nil {
		return nil
	}
	out := &memory.LlmCall{
		CallID: c.GetCallId(), Provider: c.GetProvider(), Model: c.GetModel(), PromptTokens: c.GetPromptTokens(),
		CachedPromptTokens: c.GetCachedPromptTokens(), CompletionTokens: c.GetCompletionTokens(),
		ReasoningTokens: c.GetReasoningTokens(), ComposedTokens: c.GetComposedTokens(), LatencyMS: c.GetLatencyMs(),
		Retries: c.GetRetries(), Error: c.GetError(), CostNanos: c.GetCostNanos(), Discarded: c.GetDiscarded(),
	}
	if c.StartedAt != nil {
		out.StartedAt = c.GetStartedAt().AsTime()
	}
	return out
}

func toProtoUsageTotals(t memory.UsageTotals) *memoryv1.UsageTotals {
	out := &memoryv1.UsageTotals{
		Calls: t.Calls, FailedCalls: t.FailedCalls, PromptTokens: t.PromptTokens, CachedPromptTokens: t.CachedPromptTokens,
		CompletionTokens: t.CompletionTokens, ReasoningTokens: t.ReasoningTokens, ComposedTokens: t.ComposedTokens,
		LatencyMs: t.LatencyMS, Retries: t.Retries, CostNanos: t.CostNanos,
	}
	if !t.FirstCallAt.IsZero() {
		out.FirstCallAt = timestamppb.New(t.FirstCallAt)
	}
	if !t.LastCallAt.IsZero() {
		out.LastCallAt = timestamppb.New(t.LastCallAt)
	}
	return out
}

// ToProtoSpendLimits converts limits.
func ToProtoSpendLimits(ls []memory.SpendLimit) []*memoryv1.SpendLimit {
	out := make([]*memoryv1.SpendLimit, len(ls))
	for i, l := range ls {
		out[i] = &memoryv1.SpendLimit{Window: memoryv1.SpendWindow(l.Window), Unit: memoryv1.SpendUnit(l.Unit), Amount: l.Amount}
	}
	return out
}

func toProtoSpendCounts(cs []memory.SpendCount) []*memoryv1.SpendCount {
	out := make([]*memoryv1.SpendCount, len(cs))
	for i, c := range cs {
		out[i] = &memoryv1.SpendCount{Window: memoryv1.SpendWindow(c.Window), Tokens: c.Tokens, CostNanos: c.CostNanos}
		if c.Window != memory.WindowTotal {
			out[i].Start = timestamppb.New(c.Start)
		}
	}
	return out
}

// usageToken is the opaque GetUsage cursor: the last group returned and the grouping it was issued for.
type usageToken struct {
	Group    int    `json:"g"`
	Name     string `json:"n,omitempty"`
	Provider string `json:"p,omitempty"`
	Model    string `json:"m,omitempty"`
}

func encodeUsageToken(t usageToken) string {
	b, _ := json.Marshal(t) // strings and an int always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeUsageToken(s string, g memory.UsageGroup) (usageToken, error) {
	if s == "" {
		return usageToken{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var t usageToken
	if err != nil || json.Unmarshal(b, &t) != nil {
		return usageToken{}, errs.InvalidField("page_token", "malformed page token; pass next_page_token from a previous response")
	}
	if t.Group != int(g) || g == memory.GroupNone {
		return usageToken{}, errs.InvalidField("page_token", "page token was issued for a different grouping")
	}
	return t, nil
}
