package grpcapi

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/policy"
)

// ruleFields are the request's fields for policy.IntRules, in order: each rule's API name less "policy." is its
// field of zoea.composer.v1.Policy (an optional int32), so the rules table is the one list of the policy's integer
// fields (TestEveryIntegerFieldHasARule holds the two to each other).
var ruleFields = func() []protoreflect.FieldDescriptor {
	fields := (&composerv1.Policy{}).ProtoReflect().Descriptor().Fields()
	out := make([]protoreflect.FieldDescriptor, len(policy.IntRules))
	for i, r := range policy.IntRules {
		out[i] = fields.ByName(protoreflect.Name(strings.TrimPrefix(r.Field, "policy.")))
	}
	return out
}()

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
	m := pp.ProtoReflect()
	for i, r := range policy.IntRules {
		if !m.Has(ruleFields[i]) {
			continue
		}
		v := int(m.Get(ruleFields[i]).Int())
		if err := r.Check(p, v); err != nil {
			return err
		}
		*r.Value(p) = v
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
