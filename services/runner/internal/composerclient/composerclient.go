// Package composerclient adapts the composer service's gRPC API to mysis.Composer.
package composerclient

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/memorypb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Client composes through the composer service.
type Client struct {
	api    composerv1.ComposerServiceClient
	policy *composerv1.Policy
}

// New wraps a generated client; policy (may be nil) overrides the server's defaults for every call.
func New(api composerv1.ComposerServiceClient, policy *composerv1.Policy) *Client {
	return &Client{api: api, policy: policy}
}

// Compose implements mysis.Composer. The request's rows to append and spend time travel through the composer to
// the memory service's GetComposeWindow; the spend comes back as a usage.Snapshot for usage.Guard.
func (c *Client) Compose(ctx context.Context, mysisID string, r mysis.ComposeRequest) (mysis.Composition, error) {
	req := &composerv1.ComposeContextRequest{
		MysisId: mysisID, Policy: c.policy, BeginAutonomousTurn: r.BeginAutonomousTurn, Tools: ToProtoTools(r.Tools),
		Append: memorypb.ToProtoNewMemories(r.Append),
	}
	if !r.SpendAt.IsZero() {
		req.SpendAt = timestamppb.New(r.SpendAt)
	}
	if r.Previous != (mysis.Compaction{}) {
		req.PreviousCompaction = &composerv1.Compaction{BoundarySeq: r.Previous.Boundary, CompactionSeq: r.Previous.Seq}
	}
	resp, err := c.api.ComposeContext(ctx, req)
	if err != nil {
		return mysis.Composition{}, server.FromStatus(err)
	}
	out := FromProto(resp)
	if resp.GetSpend() != nil && !r.SpendAt.IsZero() {
		out.Spend = &mysis.SpendCounts{At: r.SpendAt, Data: memorypb.FromProtoSpend(resp.GetSpend())}
	}
	return out, nil
}

// Preview composes a mysis's next request without storing anything (the SwarmService's PreviewContext): policy
// overrides the server's defaults for this call only, and the composition comes back as the composer sent it, for
// the transport to relay. Errors are libs/errs errors.
func (c *Client) Preview(ctx context.Context, mysisID string, policy *composerv1.Policy, beginAutonomousTurn bool, tools []llm.Tool) (*composerv1.ComposeContextResponse, []*composerv1.ToolDefinition, error) {
	sent := ToProtoTools(tools)
	resp, err := c.api.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: mysisID, Policy: policy,
		BeginAutonomousTurn: beginAutonomousTurn, Tools: sent})
	if err != nil {
		return nil, nil, server.FromStatus(err)
	}
	return resp, sent, nil
}

// ToProtoTools converts the tools sent with a request to the definitions the composer budgets for: what the
// provider receives (name, description, parameter schema), without the runner-only ReadOnly flag.
func ToProtoTools(tools []llm.Tool) []*composerv1.ToolDefinition {
	if len(tools) == 0 {
		return nil
	}
	out := make([]*composerv1.ToolDefinition, len(tools))
	for i, t := range tools {
		params := string(t.Parameters)
		if params == "" {
			params = "{}"
		}
		out[i] = &composerv1.ToolDefinition{Name: t.Name, Description: t.Description, ParametersJson: params}
	}
	return out
}

// FromProto converts a composition.
func FromProto(resp *composerv1.ComposeContextResponse) mysis.Composition {
	out := mysis.Composition{Messages: make([]chat.Message, len(resp.GetMessages()))}
	for i, m := range resp.GetMessages() {
		out.Messages[i] = chatpb.FromProtoMessage(m)
	}
	for _, e := range resp.GetManifest().GetEntries() {
		out.MaxSeq = max(out.MaxSeq, e.GetSeq())
	}
	out.Tokens, out.Budget = int(resp.GetManifest().GetTokens().GetTotal()), int(resp.GetManifest().GetTokenBudget())
	out.Compaction = mysis.Compaction{Boundary: resp.GetManifest().GetCompactionBoundarySeq(), Seq: resp.GetManifest().GetCompactionSeq()}
	if resp.GetMysis() != nil {
		m := memorypb.FromProtoMysis(resp.GetMysis())
		out.Mysis = &m
	}
	for _, m := range resp.GetAppended() {
		out.Appended = append(out.Appended, memorypb.FromProtoMemory(m))
	}
	enc := resp.GetEncouragement()
	out.NextCount, out.Nudge = int(enc.GetNextCount()), enc.GetNudge()
	switch enc.GetAction() {
	case composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET:
		out.Action = mysis.ActionReset
	case composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_INCREMENT:
		out.Action = mysis.ActionIncrement
	case composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_IDLE:
		out.Action = mysis.ActionIdle
	default:
		out.Action = mysis.ActionNone
	}
	return out
}
