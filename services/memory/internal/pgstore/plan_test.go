package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// TestComposeWindowUsesItsIndexes guards the property that keeps GetComposeWindow flat however long a mysis has
// played: the window is a backward walk of (mysis_id, seq) and the mission the first entry of the partial mission
// index. Sequential scans are disabled so the tiny test table cannot hide a predicate that no longer matches the
// partial index.
func TestComposeWindowUsesItsIndexes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("mine"), assistant("ok"), user("sell")}))
	conn, err := pool(t).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, `RESET enable_seqscan`) }()
	rows, err := conn.Query(ctx, `EXPLAIN `+pgstore.ComposeSQL(), pgx.QueryExecModeSimpleProtocol, m.ID, 20, true)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	for _, want := range []string{"Index Scan Backward using memories_mysis_seq_key", "memories_mission_idx", "broadcasts_commander_idx"} {
		if !strings.Contains(plan, want) {
			t.Errorf("compose plan does not use %s:\n%s", want, plan)
		}
	}
}
