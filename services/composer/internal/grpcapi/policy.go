package grpcapi

import (
	"fmt"
	"strings"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// The policy limits, written once: every rule below checks both a request's overrides and the server's default
// policy, on compose.Policy values. The lower bounds are the compose package's own (a cap must hold its truncation
// notice); the upper bounds keep one request from asking the memory service for more than its maximum window or the
// composer for an absurd amount of work.
const (
	maxScanWindow    = 1000 // the memory service's GetComposeWindow maximum
	minTokenBudget   = 256
	maxTokenBudget   = 2_000_000
	minToolResultCap = 64
	maxPolicyTools   = 64
	maxNudgeText     = 4096
	maxCarryLimit    = 1000 // the memory service's GetComposeWindow maximums
	maxReplyLimit    = 100
	minReplyCap      = 32
	maxTurnRows      = 100_000
	maxCompactStep   = 10_000
)

// intRule is one integer field of the policy: its API name, where it lives in compose.Policy and in a request, and
// its bounds. A bound of budgetBound is the policy's token budget.
type intRule struct {
	field    string
	value    func(*compose.Policy) *int
	override func(*composerv1.Policy) *int32
	min, max int
}

const budgetBound = -1

// intRules are in the order overrides apply: the token budget before the fields bounded by it.
var intRules = []intRule{
	{"policy.scan_window", func(p *compose.Policy) *int { return &p.ScanWindow },
		func(pp *composerv1.Policy) *int32 { return pp.ScanWindow }, 1, maxScanWindow},
	{"policy.token_budget", func(p *compose.Policy) *int { return &p.TokenBudget },
		func(pp *composerv1.Policy) *int32 { return pp.TokenBudget }, minTokenBudget, maxTokenBudget},
	{"policy.tool_result_cap_tokens", func(p *compose.Policy) *int { return &p.ToolResultCap },
		func(pp *composerv1.Policy) *int32 { return pp.ToolResultCapTokens }, minToolResultCap, budgetBound},
	{"policy.carry_limit", func(p *compose.Policy) *int { return &p.CarryLimit },
		func(pp *composerv1.Policy) *int32 { return pp.CarryLimit }, 0, maxCarryLimit},
	{"policy.reply_limit", func(p *compose.Policy) *int { return &p.ReplyLimit },
		func(pp *composerv1.Policy) *int32 { return pp.ReplyLimit }, 0, maxReplyLimit},
	{"policy.reply_cap_tokens", func(p *compose.Policy) *int { return &p.ReplyCap },
		func(pp *composerv1.Policy) *int32 { return pp.ReplyCapTokens }, minReplyCap, budgetBound},
	{"policy.max_turn_rows", func(p *compose.Policy) *int { return &p.MaxTurnRows },
		func(pp *composerv1.Policy) *int32 { return pp.MaxTurnRows }, 0, maxTurnRows},
	{"policy.high_water_tokens", func(p *compose.Policy) *int { return &p.HighWater },
		func(pp *composerv1.Policy) *int32 { return pp.HighWaterTokens }, 0, budgetBound},
	{"policy.compact_step", func(p *compose.Policy) *int { return &p.CompactStep },
		func(pp *composerv1.Policy) *int32 { return pp.CompactStep }, 1, maxCompactStep},
	{"policy.low_water_tokens", func(p *compose.Policy) *int { return &p.LowWater },
		func(pp *composerv1.Policy) *int32 { return pp.LowWaterTokens }, 0, budgetBound},
	{"policy.carry_tokens", func(p *compose.Policy) *int { return &p.CarryTokens },
		func(pp *composerv1.Policy) *int32 { return pp.CarryTokens }, 0, budgetBound},
}

// check reports v out of the rule's bounds under policy p, naming the field.
func (r intRule) check(p *compose.Policy, v int) error {
	if r.max == budgetBound {
		if v < r.min || v > p.TokenBudget {
			return errs.InvalidField(r.field, "must be between %d and the token budget (%d), got %d", r.min, p.TokenBudget, v)
		}
		return nil
	}
	if v < r.min || v > r.max {
		return errs.InvalidField(r.field, "must be between %d and %d, got %d", r.min, r.max, v)
	}
	return nil
}

// checkTools checks a list of tool names (snapshot or pinned tools).
func checkTools(field string, tools []string) error {
	if len(tools) > maxPolicyTools {
		return errs.InvalidField(field, "at most %d tools, got %d", maxPolicyTools, len(tools))
	}
	for i, t := range tools {
		if strings.TrimSpace(t) == "" || len(t) > maxToolName {
			return errs.InvalidField(fmt.Sprintf("%s[%d]", field, i), "a tool name of 1 to %d bytes is required", maxToolName)
		}
	}
	return nil
}

// checkNudges checks nudge wordings, gentle first.
func checkNudges(levels []string) error {
	if len(levels) > 3 {
		return errs.InvalidField("policy.nudge_levels", "at most 3 levels (gentle, firm, urgent), got %d", len(levels))
	}
	for i, t := range levels {
		if strings.TrimSpace(t) == "" || len(t) > maxNudgeText {
			return errs.InvalidField(fmt.Sprintf("policy.nudge_levels[%d]", i), "a text of 1 to %d bytes is required", maxNudgeText)
		}
	}
	return nil
}

// validatePolicy checks a whole policy (the server's defaults) with the same rules as a request's overrides.
func validatePolicy(p compose.Policy) error {
	for _, r := range intRules {
		if err := r.check(&p, *r.value(&p)); err != nil {
			return err
		}
	}
	if err := checkTools("policy.snapshot_tools", p.SnapshotTools); err != nil {
		return err
	}
	if err := checkTools("policy.pinned_tools", p.PinnedTools); err != nil {
		return err
	}
	return checkNudges([]string{p.Nudges.Gentle, p.Nudges.Firm, p.Nudges.Urgent})
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
	for _, r := range intRules {
		o := r.override(pp)
		if o == nil {
			continue
		}
		if err := r.check(p, int(*o)); err != nil {
			return err
		}
		*r.value(p) = int(*o)
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
		if err := checkTools(f.field, f.tools); err != nil {
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
	if err := checkNudges(levels); err != nil {
		return err
	}
	dst := []*string{&p.Nudges.Gentle, &p.Nudges.Firm, &p.Nudges.Urgent}
	for i, t := range levels {
		*dst[i] = t
	}
	return nil
}
