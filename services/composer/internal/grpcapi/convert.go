package grpcapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Limits on policy overrides. The lower bounds are the compose package's own (a cap must hold its truncation
// notice); the upper bounds keep one request from asking the memory service for more than its maximum window or the
// composer for an absurd amount of work.
const (
	maxScanWindow    = 1000 // the memory service's GetComposeWindow maximum
	minTokenBudget   = 256
	maxTokenBudget   = 2_000_000
	minToolResultCap = 64
	maxHistoryLoops  = 1000
	maxSnapshotTools = 64
	maxToolName      = 128
	maxNudgeText     = 4096
	maxCarryLimit    = 1000 // the memory service's GetComposeWindow maximums
	maxReplyLimit    = 100
	minReplyCap      = 32
	maxTurnRows      = 100_000
	maxCompactStep   = 10_000
	maxTools         = 512
	maxToolJSON      = 64 << 10 // one tool definition's description plus schema
)

// fromProtoPolicy applies a request's overrides to the server's defaults. Every rejected value names its field, e.g.
// "policy.token_budget", so a caller can tell exactly what to fix.
func fromProtoPolicy(pp *composerv1.Policy, defaults compose.Policy) (compose.Policy, error) {
	p := defaults
	if pp == nil {
		return p, nil
	}
	if pp.ScanWindow != nil {
		v := pp.GetScanWindow()
		if v < 1 || v > maxScanWindow {
			return p, errs.InvalidField("policy.scan_window", "must be between 1 and %d, got %d", maxScanWindow, v)
		}
		p.ScanWindow = int(v)
	}
	if pp.TokenBudget != nil {
		v := pp.GetTokenBudget()
		if v < minTokenBudget || v > maxTokenBudget {
			return p, errs.InvalidField("policy.token_budget", "must be between %d and %d, got %d", minTokenBudget, maxTokenBudget, v)
		}
		p.TokenBudget = int(v)
	}
	if pp.ToolResultCapTokens != nil {
		v := pp.GetToolResultCapTokens()
		if v < minToolResultCap || int(v) > p.TokenBudget {
			return p, errs.InvalidField("policy.tool_result_cap_tokens", "must be between %d and the token budget (%d), got %d",
				minToolResultCap, p.TokenBudget, v)
		}
		p.ToolResultCap = int(v)
	}
	if pp.HistoryToolLoops != nil {
		v := pp.GetHistoryToolLoops()
		if v < 0 || v > maxHistoryLoops {
			return p, errs.InvalidField("policy.history_tool_loops", "must be between 0 and %d, got %d", maxHistoryLoops, v)
		}
		p.HistoryLoops = int(v)
	}
	for _, f := range []struct {
		field string
		tools []string
		dst   *[]string
	}{{"policy.snapshot_tools", pp.GetSnapshotTools(), &p.SnapshotTools}, {"policy.pinned_tools", pp.GetPinnedTools(), &p.PinnedTools}} {
		if len(f.tools) == 0 {
			continue
		}
		if len(f.tools) > maxSnapshotTools {
			return p, errs.InvalidField(f.field, "at most %d tools, got %d", maxSnapshotTools, len(f.tools))
		}
		for i, t := range f.tools {
			if strings.TrimSpace(t) == "" || len(t) > maxToolName {
				return p, errs.InvalidField(fmt.Sprintf("%s[%d]", f.field, i), "a tool name of 1 to %d bytes is required", maxToolName)
			}
		}
		*f.dst = f.tools
	}
	ints := []struct {
		field    string
		set      bool
		v        int32
		min, max int
		dst      *int
	}{
		{"policy.carry_limit", pp.CarryLimit != nil, pp.GetCarryLimit(), 0, maxCarryLimit, &p.CarryLimit},
		{"policy.reply_limit", pp.ReplyLimit != nil, pp.GetReplyLimit(), 0, maxReplyLimit, &p.ReplyLimit},
		{"policy.reply_cap_tokens", pp.ReplyCapTokens != nil, pp.GetReplyCapTokens(), minReplyCap, p.TokenBudget, &p.ReplyCap},
		{"policy.max_turn_rows", pp.MaxTurnRows != nil, pp.GetMaxTurnRows(), 0, maxTurnRows, &p.MaxTurnRows},
		{"policy.high_water_tokens", pp.HighWaterTokens != nil, pp.GetHighWaterTokens(), 0, p.TokenBudget, &p.HighWater},
		{"policy.compact_step", pp.CompactStep != nil, pp.GetCompactStep(), 1, maxCompactStep, &p.CompactStep},
	}
	for _, f := range ints {
		if !f.set {
			continue
		}
		if int(f.v) < f.min || int(f.v) > f.max {
			return p, errs.InvalidField(f.field, "must be between %d and %d, got %d", f.min, f.max, f.v)
		}
		*f.dst = int(f.v)
	}
	if levels := pp.GetNudgeLevels(); len(levels) > 0 {
		if len(levels) > 3 {
			return p, errs.InvalidField("policy.nudge_levels", "at most 3 levels (gentle, firm, urgent), got %d", len(levels))
		}
		for i, t := range levels {
			if strings.TrimSpace(t) == "" || len(t) > maxNudgeText {
				return p, errs.InvalidField(fmt.Sprintf("policy.nudge_levels[%d]", i), "a text of 1 to %d bytes is required", maxNudgeText)
			}
		}
		// Levels given override in order; missing ones keep the server's wording.
		dst := []*string{&p.Nudges.Gentle, &p.Nudges.Firm, &p.Nudges.Urgent}
		for i, t := range levels {
			*dst[i] = t
		}
	}
	if pp.GlobalMissionFallback != nil {
		p.DisableMissionFallback = !pp.GetGlobalMissionFallback()
	}
	return p, nil
}

// validatePolicy checks a whole policy (the server's defaults) with the same limits as a request's overrides.
func validatePolicy(p compose.Policy) error {
	nudges := []string{p.Nudges.Gentle, p.Nudges.Firm, p.Nudges.Urgent}
	fallback := !p.DisableMissionFallback
	_, err := fromProtoPolicy(&composerv1.Policy{
		ScanWindow:            int32Ptr(p.ScanWindow),
		TokenBudget:           int32Ptr(p.TokenBudget),
		ToolResultCapTokens:   int32Ptr(p.ToolResultCap),
		HistoryToolLoops:      int32Ptr(p.HistoryLoops),
		SnapshotTools:         p.SnapshotTools,
		NudgeLevels:           nudges,
		GlobalMissionFallback: &fallback,
		CarryLimit:            int32Ptr(p.CarryLimit),
		PinnedTools:           p.PinnedTools,
		ReplyLimit:            int32Ptr(p.ReplyLimit),
		ReplyCapTokens:        int32Ptr(p.ReplyCap),
		MaxTurnRows:           int32Ptr(p.MaxTurnRows),
		HighWaterTokens:       int32Ptr(p.HighWater),
		CompactStep:           int32Ptr(p.CompactStep),
	}, compose.Policy{TokenBudget: p.TokenBudget})
	return err
}

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
		case strings.TrimSpace(name) == "" || len(name) > maxToolName:
			return nil, errs.InvalidField(fmt.Sprintf("tools[%d].name", i), "a tool name of 1 to %d bytes is required", maxToolName)
		case len(t.GetDescription())+len(params) > maxToolJSON:
			return nil, errs.InvalidField(fmt.Sprintf("tools[%d]", i), "description and parameters_json may hold at most %d bytes", maxToolJSON)
		case params != "" && (params[0] != '{' || !json.Valid([]byte(params))):
			return nil, errs.InvalidField(fmt.Sprintf("tools[%d].parameters_json", i), "must be a JSON object (a JSON schema)")
		}
		out[i] = compose.Tool{Name: name, Description: t.GetDescription(), Parameters: params}
	}
	return out, nil
}

// resultBytesPerToken sizes the memory service's cut of tool results from the policy's cap in tokens: no tokenizer
// averages anywhere near 32 bytes per token, so a result cut there still holds more than ToolResultCap tokens and
// the composer's own cap (with its pointer) is what decides what the model sees.
const (
	resultBytesPerToken = 32
	minResultCutBytes   = 64 << 10
)

// toProtoWindowRequest asks the memory service for what composition needs under policy p.
func toProtoWindowRequest(id string, p compose.Policy) *memoryv1.GetComposeWindowRequest {
	return &memoryv1.GetComposeWindowRequest{
		MysisId: id, Window: int32(p.ScanWindow), GlobalMissionFallback: !p.DisableMissionFallback,
		CarryLimit: int32(p.CarryLimit), SnapshotTools: p.SnapshotTools, PinnedTools: p.PinnedTools,
		ReplyLimit: int32(p.ReplyLimit), MaxTurnRows: int32(p.MaxTurnRows),
		MaxResultBytes: int32(min(max(minResultCutBytes, p.ToolResultCap*resultBytesPerToken), 1<<30)),
	}
}

// fromProtoWindow builds the compose input from the memory service's window. A v1 memory service leaves
// recent_start_seq at 0: the whole window is then recent, as before.
func fromProtoWindow(w *memoryv1.GetComposeWindowResponse, beginTurn bool, tools []compose.Tool) compose.Input {
	mems := w.GetMemories()
	in := compose.Input{
		SystemPrompt:       w.GetMysis().GetSystemPrompt(),
		Mission:            fromProtoMission(w.GetMission()),
		Window:             make([]compose.Memory, len(mems)),
		RecentStartSeq:     w.GetRecentStartSeq(),
		ObjectiveSeq:       w.GetObjectiveSeq(),
		TurnTruncated:      w.GetTurnTruncated(),
		Tools:              tools,
		EncouragementCount: int(w.GetMysis().GetEncouragementCount()),
		BeginTurn:          beginTurn,
	}
	for i, m := range mems {
		in.Window[i] = fromProtoMemory(m)
	}
	return in
}

func fromProtoMemory(m *memoryv1.Memory) compose.Memory {
	out := compose.Memory{
		ID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(),
		Role: chatpb.FromProtoRole(m.GetRole()), Source: fromProtoSource(m.GetSource()), SenderID: m.GetSenderId(),
		Content: m.GetContent(), Reasoning: m.GetReasoning(),
		ToolCallID: m.GetToolCallId(), ToolName: m.GetToolName(),
		CallArguments: m.GetCallArgumentsJson(), CallKey: m.GetCallKey(),
	}
	out.ToolCalls = chatpb.FromProtoToolCalls(m.GetToolCalls())
	return out
}

// fromProtoMission converts the mission; a global fallback never names a memory row of this mysis.
func fromProtoMission(m *memoryv1.Mission) *compose.Mission {
	if m == nil || m.GetMemory() == nil {
		return nil
	}
	mem := m.GetMemory()
	out := &compose.Mission{MemoryID: mem.GetId(), Seq: mem.GetSeq(), Source: fromProtoSource(mem.GetSource()),
		SenderID: mem.GetSenderId(), Content: mem.GetContent()}
	if m.GetGlobalFallback() {
		out.MemoryID, out.Seq = 0, 0
	}
	return out
}

func fromProtoSource(s memoryv1.Source) compose.Source {
	switch s {
	case memoryv1.Source_SOURCE_DIRECT:
		return compose.SourceDirect
	case memoryv1.Source_SOURCE_BROADCAST:
		return compose.SourceBroadcast
	case memoryv1.Source_SOURCE_NUDGE:
		return compose.SourceNudge
	case memoryv1.Source_SOURCE_LLM:
		return compose.SourceLLM
	case memoryv1.Source_SOURCE_TOOL:
		return compose.SourceTool
	case memoryv1.Source_SOURCE_SYSTEM:
		return compose.SourceSystem
	}
	return ""
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
		out.Synthetic = append(out.Synthetic, &composerv1.SyntheticMessage{Index: clampInt32(s.Index), Kind: s.Kind, Reason: s.Reason})
	}
	for _, r := range m.Repairs {
		out.Repairs = append(out.Repairs, fmt.Sprintf("%s: memory #%d: %s", r.Kind, r.MemoryID, r.Detail))
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
