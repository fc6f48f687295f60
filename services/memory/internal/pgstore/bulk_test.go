package pgstore_test

import (
	"context"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// memoryIndexes maps every index of memories and of its partitions to its definition and validity.
func memoryIndexes(t *testing.T, p *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := p.Query(context.Background(), `
		SELECT i.relname, pg_get_indexdef(i.oid) || CASE WHEN x.indisvalid THEN '' ELSE ' (INVALID)' END
		FROM pg_partition_tree('memories') t
		JOIN pg_index x ON x.indrelid = t.relid JOIN pg_class i ON i.oid = x.indexrelid`)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{ name, def string }, error) {
		var d struct{ name, def string }
		return d, r.Scan(&d.name, &d.def)
	})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, d := range defs {
		m[d.name] = d.def
	}
	return m
}

// TestRecreateIndexesInParallel rebuilds the secondary indexes as `memorybench seed` does, on several connections:
// indexes on the same columns built at once on the partitioned table must not collide on their partitions' index
// names, and the result must be exactly what the migrations created (names, definitions, all valid).
func TestRecreateIndexesInParallel(t *testing.T) {
	s, p := freshStore(t)
	ctx := context.Background()
	want := memoryIndexes(t, p)
	if len(want) < 32 {
		t.Fatalf("expected the partitioned table's indexes, got %d: %v", len(want), want)
	}
	for round := range 6 {
		defs, err := s.DropSecondaryIndexes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(defs) < 4 {
			t.Fatalf("round %d: dropped %d secondary indexes, want at least 4", round, len(defs))
		}
		if err := s.RecreateIndexes(ctx, defs, "64MB", 4); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := memoryIndexes(t, p); !maps.Equal(got, want) {
			for name, def := range want {
				if got[name] != def {
					t.Errorf("round %d: index %s: got %q, want %q", round, name, got[name], def)
				}
			}
			for name, def := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("round %d: unexpected index %s: %q", round, name, def)
				}
			}
			t.FailNow()
		}
	}
}
