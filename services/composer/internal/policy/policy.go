// Package policy holds the composer's policy limits, written once: every rule checks both a request's overrides
// (grpcapi applies them field by field) and the server's default policy (checked when the service starts), on
// compose.Policy values. It is the composer's own rules, not the algorithm's (package compose) and not the
// transport's: grpcapi maps each rule's field to the request's override and converts.
package policy

import (
	"fmt"
	"strings"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// The policy limits, written once: every rule below checks both a request's overrides and the server's default
// policy, on compose.Policy values. The lower bounds are the compose package's own (a cap must hold its truncation
// notice); the upper bounds keep one request from asking the memory service for more than its maximum window or the
// composer for an absurd amount of work.
const (
	// MaxToolName bounds a tool name, in the policy's tool lists and in a request's tool definitions.
	MaxToolName = 128

	maxScanWindow  = 1000 // the memory service's GetComposeWindow maximum
	maxTokenBudget = 2_000_000
	maxPolicyTools = 64
	maxNudgeText   = 4096
	maxCarryLimit  = 1000 // the memory service's GetComposeWindow maximums
	maxReplyLimit  = 100
	maxTurnRows    = 100_000
	maxCompactStep = 10_000
)

// IntRule is one integer field of the policy: its API name, where it lives in compose.Policy, and its bounds. A
// bound of BudgetBound is the policy's token budget.
type IntRule struct {
	Field    string
	Value    func(*compose.Policy) *int
	Min, Max int
}

// BudgetBound as an IntRule's Max is the policy's token budget.
const BudgetBound = -1

// IntRules are in the order overrides apply: the token budget before the fields bounded by it.
var IntRules = []IntRule{
	{"policy.scan_window", func(p *compose.Policy) *int { return &p.ScanWindow }, 1, maxScanWindow},
	{"policy.token_budget", func(p *compose.Policy) *int { return &p.TokenBudget }, compose.MinTokenBudget, maxTokenBudget},
	{"policy.tool_result_cap_tokens", func(p *compose.Policy) *int { return &p.ToolResultCap }, compose.MinToolResultCap, BudgetBound},
	{"policy.carry_limit", func(p *compose.Policy) *int { return &p.CarryLimit }, 0, maxCarryLimit},
	{"policy.reply_limit", func(p *compose.Policy) *int { return &p.ReplyLimit }, 0, maxReplyLimit},
	{"policy.reply_cap_tokens", func(p *compose.Policy) *int { return &p.ReplyCap }, compose.MinReplyCap, BudgetBound},
	{"policy.max_turn_rows", func(p *compose.Policy) *int { return &p.MaxTurnRows }, 0, maxTurnRows},
	{"policy.high_water_tokens", func(p *compose.Policy) *int { return &p.HighWater }, 0, BudgetBound},
	{"policy.compact_step", func(p *compose.Policy) *int { return &p.CompactStep }, 1, maxCompactStep},
	{"policy.low_water_tokens", func(p *compose.Policy) *int { return &p.LowWater }, 0, BudgetBound},
	{"policy.carry_tokens", func(p *compose.Policy) *int { return &p.CarryTokens }, 0, BudgetBound},
}

// Check reports v out of the rule's bounds under policy p, naming the field.
func (r IntRule) Check(p *compose.Policy, v int) error {
	if r.Max == BudgetBound {
		if v < r.Min || v > p.TokenBudget {
			return errs.InvalidField(r.Field, "must be between %d and the token budget (%d), got %d", r.Min, p.TokenBudget, v)
		}
		return nil
	}
	if v < r.Min || v > r.Max {
		return errs.InvalidField(r.Field, "must be between %d and %d, got %d", r.Min, r.Max, v)
	}
	return nil
}

// CheckTools checks a list of tool names (snapshot or pinned tools).
func CheckTools(field string, tools []string) error {
	if len(tools) > maxPolicyTools {
		return errs.InvalidField(field, "at most %d tools, got %d", maxPolicyTools, len(tools))
	}
	for i, t := range tools {
		if strings.TrimSpace(t) == "" || len(t) > MaxToolName {
			return errs.InvalidField(fmt.Sprintf("%s[%d]", field, i), "a tool name of 1 to %d bytes is required", MaxToolName)
		}
	}
	return nil
}

// CheckNudges checks nudge wordings, gentle first.
func CheckNudges(levels []string) error {
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

// Validate checks a whole policy (the server's defaults) with the same rules as a request's overrides.
func Validate(p compose.Policy) error {
	for _, r := range IntRules {
		if err := r.Check(&p, *r.Value(&p)); err != nil {
			return err
		}
	}
	if err := CheckTools("policy.snapshot_tools", p.SnapshotTools); err != nil {
		return err
	}
	if err := CheckTools("policy.pinned_tools", p.PinnedTools); err != nil {
		return err
	}
	return CheckNudges([]string{p.Nudges.Gentle, p.Nudges.Firm, p.Nudges.Urgent})
}
