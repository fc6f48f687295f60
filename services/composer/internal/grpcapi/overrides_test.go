package grpcapi

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/policy"
)

// Every integer rule names an optional int32 field of the request's policy, and every such field (but deprecated
// ones, which the composer ignores) has a rule: a field without one would be accepted unchecked and unused.
func TestEveryIntegerFieldHasARule(t *testing.T) {
	ruled := map[protoreflect.Name]bool{}
	for i, r := range policy.IntRules {
		fd := ruleFields[i]
		if fd == nil || fd.Kind() != protoreflect.Int32Kind || !fd.HasPresence() {
			t.Errorf("rule %s names no optional int32 field of zoea.composer.v1.Policy", r.Field)
			continue
		}
		ruled[fd.Name()] = true
	}
	fields := (&composerv1.Policy{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		deprecated := fd.Options().(*descriptorpb.FieldOptions).GetDeprecated()
		if fd.Kind() == protoreflect.Int32Kind && !deprecated && !ruled[fd.Name()] {
			t.Errorf("policy.%s has no rule in policy.IntRules", fd.Name())
		}
		if deprecated && ruled[fd.Name()] {
			t.Errorf("policy.%s is deprecated but still ruled", fd.Name())
		}
	}
	if len(ruled) < 10 || !strings.HasPrefix(policy.IntRules[0].Field, "policy.") {
		t.Fatalf("only %d rules resolved", len(ruled))
	}
}

// Each rule's override reaches its own field of compose.Policy, checked by its own bounds.
func TestEachOverrideReachesItsField(t *testing.T) {
	defaults := compose.DefaultPolicy()
	for i, r := range policy.IntRules {
		pp := &composerv1.Policy{}
		v := int32(*r.Value(&defaults))
		if v == 0 {
			v = 1
		} else {
			v--
		}
		if r.Min > int(v) {
			v = int32(r.Min)
		}
		pp.ProtoReflect().Set(ruleFields[i], protoreflect.ValueOfInt32(v))
		got, err := fromProtoPolicy(pp, defaults)
		if err != nil {
			t.Errorf("%s = %d: %v", r.Field, v, err)
			continue
		}
		want := defaults
		*r.Value(&want) = int(v)
		if *r.Value(&got) != int(v) || !samePolicyInts(got, want) {
			t.Errorf("%s = %d changed %+v, want only that field", r.Field, v, got)
		}
		pp.ProtoReflect().Set(ruleFields[i], protoreflect.ValueOfInt32(-1))
		if _, err := fromProtoPolicy(pp, defaults); err == nil || !strings.Contains(err.Error(), r.Field) {
			t.Errorf("%s = -1: %v, want an error naming the field", r.Field, err)
		}
	}
}

func samePolicyInts(a, b compose.Policy) bool {
	for _, r := range policy.IntRules {
		if *r.Value(&a) != *r.Value(&b) {
			return false
		}
	}
	return true
}
