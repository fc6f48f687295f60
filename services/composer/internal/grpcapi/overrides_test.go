package grpcapi

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/policy"
)

// Every integer rule has a request override and every override a rule: a rule without one would panic on the first
// request with a policy, an override without one would never be checked.
func TestEveryIntRuleHasAnOverride(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range policy.IntRules {
		if overrides[r.Field] == nil {
			t.Errorf("rule %s has no request override", r.Field)
		}
		seen[r.Field] = true
	}
	for f := range overrides {
		if !seen[f] {
			t.Errorf("override %s has no rule", f)
		}
	}
}
