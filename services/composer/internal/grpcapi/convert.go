package grpcapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/policy"
)

// Limits on tool definitions sent with a request.
const (
	maxTools    = 512
	maxToolJSON = 64 << 10 // one tool definition's description plus schema
)

func int32Ptr(v int) *int32 {
	if v > 1<<31-1 {
		v = 1<<31 - 1
	}
	if v < -1<<31 {
		v = -1 << 31
	}
	x := int32(v)
	return &x
}

// fromProtoTools validates and converts the tool definitions sent with the request. Every rejected value names its
// field, e.g. "tools[3].parameters_json".
func fromProtoTools(ts []*composerv1.ToolDefinition) ([]compose.Tool, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	if len(ts) > maxTools {
		return nil, errs.InvalidField("tools", "at most %d tools, got %d", maxTools, len(ts))
	}
	out := make([]compose.Tool, len(ts))
	for i, t := range ts {
		name, params := t.GetName(), strings.TrimSpace(t.GetParametersJson())
		switch {
		case strings.TrimSpace(name) == "" || len(name) > policy.MaxToolName:
			return nil, errs.InvalidField(fmt.Sprintf("tools[%d].name", i), "a tool name of 1 to %d bytes is required", policy.MaxToolName)
		case len(t.GetDescription())+len(params) > maxToolJSON:
			return nil, errs.InvalidField(fmt.Sprintf("tools[%d]", i), "description and parameters_json may hold at most %d bytes", maxToolJSON)
		case params != "" && (params[0] != '{' || !json.Valid([]byte(params))):
			return nil, errs.InvalidField(fmt.Sprintf("tools[%d].parameters_json", i), "must be a JSON object (a JSON schema)")
		}
		out[i] = compose.Tool{Name: name, Description: t.GetDescription(), Parameters: params}
	}
	return out, nil
}

// toProtoResponse converts a composition.
func toProtoResponse(res compose.Result, p compose.Policy) *composerv1.ComposeContextResponse {
	out := &composerv1.ComposeContextResponse{
		Messages:      make([]*composerv1.ChatMessage, len(res.Messages)),
		Manifest:      toProtoManifest(res.Manifest, p),
		Encouragement: toProtoEncouragement(res.Encouragement, res.Nudge),
	}
	for i, m := range res.Messages {
		out.Messages[i] = chatpb.ToProtoMessage(m)
	}
	return out
}

// Tokenizer is the encoding every count in a manifest is in.
const Tokenizer = "o200k_base"

func toProtoManifest(m compose.Manifest, p compose.Policy) *composerv1.Manifest {
	out := &composerv1.Manifest{
		Entries:               make([]*composerv1.ManifestEntry, len(m.Items)),
		Tokens:                toProtoTokens(m.Tokens),
		TokenBudget:           clampInt32(p.TokenBudget),
		NudgeLevel:            int32(m.NudgeLevel),
		Tokenizer:             Tokenizer,
		CompactionBoundarySeq: m.Boundary,
		CompactionSeq:         m.CompactSeq,
		TurnTruncated:         m.TurnTruncated,
	}
	for i, it := range m.Items {
		out.Entries[i] = &composerv1.ManifestEntry{MemoryId: it.MemoryID, Seq: it.Seq,
			Disposition: toProtoDisposition(it.Disposition), Reason: string(it.Reason), Tokens: clampInt32(it.Tokens)}
		if it.Disposition != compose.Dropped {
			out.Entries[i].MessageIndex = proto.Int32(clampInt32(it.MessageIndex))
		}
	}
	for _, s := range m.Synthetic {
		out.Synthetic = append(out.Synthetic, &composerv1.SyntheticMessage{Index: clampInt32(s.Index), Kind: s.Kind, Reason: s.Reason, Tokens: clampInt32(s.Tokens)})
	}
	for _, r := range m.Repairs {
		out.Repairs = append(out.Repairs, fmt.Sprintf("%s: memory #%d: %s", r.Kind, r.MemoryID, r.Detail))
	}
	for _, t := range m.Tools {
		out.Tools = append(out.Tools, &composerv1.ToolTokens{Name: t.Name, Tokens: clampInt32(t.Tokens)})
	}
	return out
}

// toProtoTokens converts the section counts. Total also includes the reply priming (compose.Tokens.Framing), which
// has no section of its own in the API; tools and carried are sections of their own.
func toProtoTokens(t compose.Tokens) *composerv1.SectionTokens {
	return &composerv1.SectionTokens{
		System: clampInt32(t.System), Mission: clampInt32(t.Mission), History: clampInt32(t.History),
		CurrentTurn: clampInt32(t.Current), Synthetic: clampInt32(t.Synthetic), Total: clampInt32(t.Total),
		Tools: clampInt32(t.Tools), Carried: clampInt32(t.Carried),
	}
}

func toProtoDisposition(d compose.Disposition) composerv1.Disposition {
	switch d {
	case compose.Included:
		return composerv1.Disposition_DISPOSITION_INCLUDED
	case compose.Truncated:
		return composerv1.Disposition_DISPOSITION_TRUNCATED
	case compose.Stubbed:
		return composerv1.Disposition_DISPOSITION_STUBBED
	case compose.Dropped:
		return composerv1.Disposition_DISPOSITION_DROPPED
	}
	return composerv1.Disposition_DISPOSITION_UNSPECIFIED
}

func toProtoEncouragement(e compose.Encouragement, n *compose.Nudge) *composerv1.Encouragement {
	out := &composerv1.Encouragement{NextCount: clampInt32(e.Count)}
	switch e.Decision {
	case compose.DecisionNone:
		out.Action = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_NONE
	case compose.DecisionReset:
		out.Action = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET
	case compose.DecisionIncrement:
		out.Action = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_INCREMENT
	case compose.DecisionIdle:
		out.Action = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_IDLE
	}
	if n != nil {
		out.Nudge = n.Content
	}
	return out
}

func clampInt32(v int) int32 {
	return *int32Ptr(v)
}
