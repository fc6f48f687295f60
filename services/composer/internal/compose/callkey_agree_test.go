package compose

import (
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/callkey"
)

// TestCallKeyAgreesWithMemory: two calls are one call for the composer exactly when they are one for the memory
// service (libs/callkey, the key it stores), on every canonical form: number spellings, key order, whitespace,
// escapes, nesting, non-objects, empty arguments and arguments past the hashed length.
func TestCallKeyAgreesWithMemory(t *testing.T) {
	long := `{"text":"` + strings.Repeat("log entry ", 40) + `"}`
	args := []string{
		`{"qty":1e2}`, `{"qty":100}`, `{"qty":100.0}`, `{"qty":1E+2}`, `{"qty":"100"}`,
		`{"a":1,"b":2}`, `{"b":2,"a":1}`, "{ \"a\" : 1 ,\n\"b\":2 }",
		`{"to":"sol"}`, `{"to":"\u0073ol"}`, `{"to":"sol\/x"}`, `{"to":"sol/x"}`,
		`{"o":{"y":1,"x":2}}`, `{"o":{"x":2,"y":1}}`, `{"l":[1,2]}`, `{"l":[2,1]}`,
		``, `{}`, ` {} `, `[1,2]`, `"sol"`, `not json`, `{"a":1}{"b":2}`, `{"a":"\u0000"}`,
		long, long[:len(long)-2] + ` "}`,
	}
	p := Policy{}
	for _, a := range args {
		for _, b := range args {
			composer := p.CallKey("travel", a) == p.CallKey("travel", b)
			memory := callkey.Of("travel", a) == callkey.Of("travel", b)
			if composer != memory {
				t.Errorf("%q and %q: one call for the composer %v, for memory %v", a, b, composer, memory)
			}
		}
	}
	if p.CallKey("sell", `{"qty":1e2}`) != p.CallKey("sell", `{"qty":100}`) {
		t.Error(`{"qty":1e2} and {"qty":100} are two calls for the composer`)
	}
	// Snapshot calls stay keyed by their policy entry, whatever their arguments.
	snap := Policy{SnapshotTools: []string{"get_status"}}
	if snap.CallKey("get_status", `{"x":1}`) != snap.CallKey("get_status", `{}`) {
		t.Error("snapshot calls with different arguments got different keys")
	}
}
