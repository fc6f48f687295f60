package memory_test

import (
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Bad window queries name the API field; recent_from_seq 0 means none and is left alone.
func TestWindowQueryNormalize(t *testing.T) {
	const id = "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4"
	for field, q := range map[string]memory.WindowQuery{
		"recent_from_seq": {MysisID: id, RecentFrom: -1},
		"max_turn_rows":   {MysisID: id, MaxTurnRows: -1},
		"mysis_id":        {MysisID: "nobody"},
	} {
		_, err := q.Normalize()
		if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) != field {
			t.Errorf("%s: %v (kind %v, field %q)", field, err, errs.KindOf(err), errs.FieldOf(err))
		}
	}
	q, err := memory.WindowQuery{MysisID: id, RecentFrom: 42}.Normalize()
	if err != nil || q.RecentFrom != 42 {
		t.Fatalf("recent_from_seq 42: %+v %v", q, err)
	}
}
