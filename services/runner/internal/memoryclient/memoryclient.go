// Package memoryclient adapts the memory service's gRPC API to the ports the runner's domain declares
// (mysis.Store, tools.Accounts, tools.Searcher, the lease manager's lister). Status codes become libs/errs kinds
// here, so the domain reasons about NotFound and Conflict without knowing gRPC.
package memoryclient

import (
	"context"
	"fmt"
	"strings"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/memorypb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/tools"
)

// Client is the memory service as the runner uses it.
type Client struct {
	api memoryv1.MemoryServiceClient
}

// New wraps a generated client.
func New(api memoryv1.MemoryServiceClient) *Client { return &Client{api: api} }

// GetMysis implements mysis.Store.
func (c *Client) GetMysis(ctx context.Context, id string) (mysis.Mysis, error) {
	resp, err := c.api.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: id})
	if err != nil {
		return mysis.Mysis{}, server.FromStatus(err)
	}
	return memorypb.FromProtoMysis(resp.GetMysis()), nil
}

// SetState implements mysis.Store.
func (c *Client) SetState(ctx context.Context, id string, ch mysis.StateChange) (mysis.Mysis, error) {
	resp, err := c.api.SetMysisState(ctx, toProtoStateChange(id, ch))
	if err != nil {
		return mysis.Mysis{}, server.FromStatus(err)
	}
	return memorypb.FromProtoMysis(resp.GetMysis()), nil
}

// Append implements mysis.Store.
func (c *Client) Append(ctx context.Context, id string, ms []mysis.NewMemory) ([]mysis.Memory, error) {
	req := &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: make([]*memoryv1.NewMemory, len(ms))}
	for i, m := range ms {
		req.Memories[i] = memorypb.ToProtoNewMemory(m)
	}
	resp, err := c.api.AppendMemories(ctx, req)
	if err != nil {
		return nil, server.FromStatus(err)
	}
	out := make([]mysis.Memory, len(resp.GetMemories()))
	for i, m := range resp.GetMemories() {
		out[i] = memorypb.FromProtoMemory(m)
	}
	return out, nil
}

// ReasonPromptArrived is the memory service's ErrorInfo reason for a conditional append refused because a
// commander prompt arrived (AppendMemoriesRequest.if_no_prompt_after_seq).
const ReasonPromptArrived = "PROMPT_ARRIVED"

// AppendIf implements mysis.Store: one AppendMemories carrying the condition. A refusal with reason
// PROMPT_ARRIVED becomes mysis.ErrPromptArrived; a state conflict stays a Conflict error.
func (c *Client) AppendIf(ctx context.Context, id string, ms []mysis.NewMemory, cond mysis.AppendCondition) ([]mysis.Memory, error) {
	req := &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: make([]*memoryv1.NewMemory, len(ms)), IfNoPromptAfterSeq: cond.IfNoPromptAfter}
	for i, m := range ms {
		req.Memories[i] = memorypb.ToProtoNewMemory(m)
	}
	if ch := cond.State; ch != nil {
		req.StateChange = &memoryv1.AppendStateChange{State: memorypb.ToProtoState(ch.To), Reason: ch.Reason, ExpectedState: memorypb.ToProtoState(ch.Expected)}
		if ch.Count != nil {
			n := int32(*ch.Count)
			req.StateChange.EncouragementCount = &n
		}
	}
	resp, err := c.api.AppendMemories(ctx, req)
	if err != nil {
		err = server.FromStatus(err)
		if errs.ReasonOf(err) == ReasonPromptArrived {
			return nil, fmt.Errorf("%w: %w", mysis.ErrPromptArrived, err)
		}
		return nil, err
	}
	out := make([]mysis.Memory, len(resp.GetMemories()))
	for i, m := range resp.GetMemories() {
		out[i] = memorypb.FromProtoMemory(m)
	}
	return out, nil
}

// Recent implements mysis.Store.
func (c *Client) Recent(ctx context.Context, id string, limit int) ([]mysis.Memory, error) {
	resp, err := c.api.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: int32(limit)})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	out := make([]mysis.Memory, len(resp.GetMemories()))
	for i, m := range resp.GetMemories() {
		out[i] = memorypb.FromProtoMemory(m)
	}
	return out, nil
}

// ListMysisIDs returns one page of mysis ids (all states) and the next page token.
func (c *Client) ListMysisIDs(ctx context.Context, pageToken string, pageSize int) ([]string, string, error) {
	resp, err := c.api.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: int32(pageSize), PageToken: pageToken})
	if err != nil {
		return nil, "", server.FromStatus(err)
	}
	ids := make([]string, len(resp.GetMyses()))
	for i, m := range resp.GetMyses() {
		ids[i] = m.GetId()
	}
	return ids, resp.GetNextPageToken(), nil
}

// AccountForMysis implements tools.Accounts.
func (c *Client) AccountForMysis(ctx context.Context, id string) (tools.Account, error) {
	resp, err := c.api.GetAccountForMysis(ctx, &memoryv1.GetAccountForMysisRequest{MysisId: id})
	if err != nil {
		return tools.Account{}, server.FromStatus(err)
	}
	return fromProtoAccount(resp.GetAccount()), nil
}

// ClaimAccount implements tools.Accounts.
func (c *Client) ClaimAccount(ctx context.Context, id string) (tools.Account, error) {
	resp, err := c.api.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: id})
	if err != nil {
		return tools.Account{}, server.FromStatus(err)
	}
	return fromProtoAccount(resp.GetAccount()), nil
}

// CreateAccount implements tools.Accounts.
func (c *Client) CreateAccount(ctx context.Context, a tools.Account) error {
	_, err := c.api.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: a.Username, Password: a.Password, Empire: a.Empire, MysisId: a.MysisID})
	return server.FromStatus(err)
}

// ReleaseAccount implements tools.Accounts.
func (c *Client) ReleaseAccount(ctx context.Context, id string) error {
	_, err := c.api.ReleaseAccount(ctx, &memoryv1.ReleaseAccountRequest{MysisId: id})
	return server.FromStatus(err)
}

// SearchMessages implements tools.Searcher.
func (c *Client) SearchMessages(ctx context.Context, id, query string, limit int, order tools.SearchOrder) ([]tools.Hit, tools.SearchInfo, error) {
	o := memoryv1.SearchOrder_SEARCH_ORDER_RELEVANCE
	if order == tools.OrderRecency {
		o = memoryv1.SearchOrder_SEARCH_ORDER_RECENCY
	}
	resp, err := c.api.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: id, Query: query, Limit: int32(limit), Order: o})
	if err != nil {
		return nil, tools.SearchInfo{}, server.FromStatus(err)
	}
	return fromProtoHits(resp.GetHits()), tools.SearchInfo{Matches: resp.GetMatches(), Estimated: resp.GetMatchesEstimated(),
		Bounded: resp.GetCandidatesBounded(), Note: resp.GetNote()}, nil
}

// SearchReasoning implements tools.Searcher.
func (c *Client) SearchReasoning(ctx context.Context, id, query string, limit int) ([]tools.Hit, tools.SearchInfo, error) {
	resp, err := c.api.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{MysisId: id, Query: query, Limit: int32(limit)})
	if err != nil {
		return nil, tools.SearchInfo{}, server.FromStatus(err)
	}
	return fromProtoHits(resp.GetHits()), tools.SearchInfo{Matches: resp.GetMatches(), Estimated: resp.GetMatchesEstimated(),
		Note: resp.GetNote()}, nil
}

// SearchBroadcasts implements tools.Searcher.
func (c *Client) SearchBroadcasts(ctx context.Context, query string, limit int) ([]tools.BroadcastHit, error) {
	resp, err := c.api.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{Query: query, Limit: int32(limit)})
	if err != nil {
		return nil, server.FromStatus(err)
	}
	out := make([]tools.BroadcastHit, len(resp.GetHits()))
	for i, h := range resp.GetHits() {
		b := h.GetBroadcast()
		out[i] = tools.BroadcastHit{BroadcastID: b.GetId(), FromMysis: b.GetSenderId(), Snippet: h.GetSnippet(), CreatedAt: b.GetCreatedAt().AsTime()}
	}
	return out, nil
}

// Recall implements tools.Searcher: the mysis's own memory (the memory service answers NotFound for another's).
func (c *Client) Recall(ctx context.Context, id string, memoryID int64) (tools.Recalled, error) {
	resp, err := c.api.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: id, MemoryId: memoryID})
	if err != nil {
		return tools.Recalled{}, server.FromStatus(err)
	}
	m := resp.GetMemory()
	return tools.Recalled{MemoryID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(), Role: string(chatpb.FromProtoRole(m.GetRole())), Tool: m.GetToolName(),
		CreatedAt: m.GetCreatedAt().AsTime(), Content: m.GetContent()}, nil
}

func fromProtoHits(hs []*memoryv1.MemoryHit) []tools.Hit {
	out := make([]tools.Hit, len(hs))
	for i, h := range hs {
		m := h.GetMemory()
		tool := m.GetToolName()
		if calls := m.GetToolCalls(); tool == "" && len(calls) > 0 {
			// An assistant memory: the tools it called (the snippet shows their arguments).
			names := make([]string, len(calls))
			for j, c := range calls {
				names[j] = c.GetName()
			}
			tool = strings.Join(names, ",")
		}
		out[i] = tools.Hit{MemoryID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(), Role: string(chatpb.FromProtoRole(m.GetRole())),
			Tool: tool, Snippet: h.GetSnippet(), CreatedAt: m.GetCreatedAt().AsTime()}
	}
	return out
}

func fromProtoAccount(a *memoryv1.Account) tools.Account {
	return tools.Account{Username: a.GetUsername(), Password: a.GetPassword(), Empire: a.GetEmpire(), MysisID: a.GetMysisId()}
}

func toProtoStateChange(id string, ch mysis.StateChange) *memoryv1.SetMysisStateRequest {
	req := &memoryv1.SetMysisStateRequest{MysisId: id, State: memorypb.ToProtoState(ch.To), Reason: ch.Reason, ExpectedState: memorypb.ToProtoState(ch.Expected)}
	if ch.Count != nil {
		n := int32(*ch.Count)
		req.EncouragementCount = &n
	}
	return req
}
