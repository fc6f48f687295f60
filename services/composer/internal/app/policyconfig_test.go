package app

import (
	"reflect"
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Every field of compose.Policy goes through the composer's variables and back unchanged: a field added to the
// policy and forgotten in policyConfig or policy fails here, not in an operator's setting that does nothing.
func TestPolicyConfigRoundTrips(t *testing.T) {
	p := compose.DefaultPolicy()
	v := reflect.ValueOf(&p).Elem()
	n := 0
	var fill func(reflect.Value)
	fill = func(f reflect.Value) {
		n++
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(int64(1000 + n))
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"tool_" + string(rune('a'+n%26))}))
		case reflect.String:
			f.SetString(f.String() + " (changed)")
		case reflect.Struct:
			if f.Type() == reflect.TypeOf(compose.CacheModel{}) {
				f.Set(reflect.ValueOf(compose.CacheAnthropic))
				return
			}
			for i := range f.NumField() {
				fill(f.Field(i))
			}
		default:
			t.Fatalf("compose.Policy has a %s field the test does not know how to change", f.Kind())
		}
	}
	for i := range v.NumField() {
		fill(v.Field(i))
	}
	p.Compaction = compose.CompactionWatermark // a string with two values: the changed one must be valid
	if got := policyConfig(p).policy(); !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
	}
	if got := policyConfig(compose.DefaultPolicy()).policy(); !reflect.DeepEqual(got, compose.DefaultPolicy()) {
		t.Fatalf("the defaults changed on the way: %+v", got)
	}
}
