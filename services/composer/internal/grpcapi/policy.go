package grpcapi

import (
	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/policy"
)

// overrides maps each integer rule's field (policy.IntRules) to where a request may override it.
var overrides = map[string]func(*composerv1.Policy) *int32{
	"policy.scan_window":            func(pp *composerv1.Policy) *int32 { return pp.ScanWindow },
	"policy.token_budget":           func(pp *composerv1.Policy) *int32 { return pp.TokenBudget },
	"policy.tool_result_cap_tokens": func(pp *composerv1.Policy) *int32 { return pp.ToolResultCapTokens },
	"policy.carry_limit":            func(pp *composerv1.Policy) *int32 { return pp.CarryLimit },
	"policy.reply_limit":            func(pp *composerv1.Policy) *int32 { return pp.ReplyLimit },
	"policy.reply_cap_tokens":       func(pp *composerv1.Policy) *int32 { return pp.ReplyCapTokens },
	"policy.max_turn_rows":          func(pp *composerv1.Policy) *int32 { return pp.MaxTurnRows },
	"policy.high_water_tokens":      func(pp *composerv1.Policy) *int32 { return pp.HighWaterTokens },
	"policy.compact_step":           func(pp *composerv1.Policy) *int32 { return pp.CompactStep },
	"policy.low_water_tokens":       func(pp *composerv1.Policy) *int32 { return pp.LowWaterTokens },
	"policy.carry_tokens":           func(pp *composerv1.Policy) *int32 { return pp.CarryTokens },
}

// fromProtoPolicy applies a request's overrides to the server's defaults. Every rejected value names its field, e.g.
// "policy.token_budget", so a caller can tell exactly what to fix; fields the request leaves unset keep the
// (already validated) defaults.
func fromProtoPolicy(pp *composerv1.Policy, defaults compose.Policy) (compose.Policy, error) {
	p := defaults
	if pp == nil {
		return p, nil
	}
	if err := applyInts(&p, pp); err != nil {
		return p, err
	}
	if err := applyTools(&p, pp); err != nil {
		return p, err
	}
	if err := applyNudges(&p, pp.GetNudgeLevels()); err != nil {
		return p, err
	}
	if pp.GlobalMissionFallback != nil {
		p.DisableMissionFallback = !pp.GetGlobalMissionFallback()
	}
	return p, nil
}

func applyInts(p *compose.Policy, pp *composerv1.Policy) error {
	for _, r := range policy.IntRules {
		o := overrides[r.Field](pp)
		if o == nil {
			continue
		}
		if err := r.Check(p, int(*o)); err != nil {
			return err
		}
		*r.Value(p) = int(*o)
	}
	return nil
}

func applyTools(p *compose.Policy, pp *composerv1.Policy) error {
	for _, f := range []struct {
		field string
		tools []string
		dst   *[]string
	}{{"policy.snapshot_tools", pp.GetSnapshotTools(), &p.SnapshotTools}, {"policy.pinned_tools", pp.GetPinnedTools(), &p.PinnedTools}} {
		if len(f.tools) == 0 {
			continue
		}
		if err := policy.CheckTools(f.field, f.tools); err != nil {
			return err
		}
		*f.dst = f.tools
	}
	return nil
}

// applyNudges overrides the wording of the levels given, in order; missing ones keep the server's wording.
func applyNudges(p *compose.Policy, levels []string) error {
	if len(levels) == 0 {
		return nil
	}
	if err := policy.CheckNudges(levels); err != nil {
		return err
	}
	dst := []*string{&p.Nudges.Gentle, &p.Nudges.Firm, &p.Nudges.Urgent}
	for i, t := range levels {
		*dst[i] = t
	}
	return nil
}
