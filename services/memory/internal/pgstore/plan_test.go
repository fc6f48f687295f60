package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// explainWindow returns the plan of the compose-window statement for q with sequential scans disabled, so a small
// test table cannot hide a predicate that no longer matches a partial index.
func explainWindow(t *testing.T, q memory.WindowQuery) string {
	t.Helper()
	return explainWindowWith(t, pool(t), q, "EXPLAIN ")
}

// explainWindowWith is explainWindow on another database and with another EXPLAIN prefix (EXPLAIN ANALYZE: what
// the statement did run), planned for the query's values.
func explainWindowWith(t *testing.T, p *pgxpool.Pool, q memory.WindowQuery, explain string) string {
	t.Helper()
	return explainWindowPlan(t, p, q, explain, false)
}

// explainGeneric is explainWindowWith with the statement's generic plan, the one a connection that has run it often
// may settle on.
func explainGeneric(t *testing.T, p *pgxpool.Pool, q memory.WindowQuery, explain string) string {
	t.Helper()
	return explainWindowPlan(t, p, q, explain, true)
}

func explainWindowPlan(t *testing.T, p *pgxpool.Pool, q memory.WindowQuery, explain string, generic bool) string {
	t.Helper()
	ctx := context.Background()
	args, err := pgstore.WindowArgs(q)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, `RESET enable_seqscan`) }()
	sql := explain + pgstore.WindowSQL()
	if generic {
		// A prepared statement under force_generic_plan, executed with the values inlined (pgx's simple protocol).
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = conn.Exec(ctx, `RESET plan_cache_mode`) }()
		if _, err := conn.Exec(ctx, `PREPARE zoea_window AS `+pgstore.WindowSQL()); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = conn.Exec(ctx, `DEALLOCATE zoea_window`) }()
		ph := make([]string, len(args))
		for i := range args {
			ph[i] = fmt.Sprintf("$%d", i+1)
		}
		sql = explain + "EXECUTE zoea_window(" + strings.Join(ph, ", ") + ")"
	}
	rows, err := conn.Query(ctx, sql, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestComposeWindowUsesItsIndexes guards the property that keeps GetComposeWindow flat however long a mysis has
// played: the v1 window is a backward walk of (mysis_id, seq) and the mission the first entry of the partial mission
// index.
func TestComposeWindowUsesItsIndexes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("mine"), assistant("ok"), user("sell")}))
	plan := explainWindow(t, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true})
	for _, want := range []string{"using memories_mysis_seq_key", "memories_mission_idx", "broadcasts_commander_idx"} {
		if !strings.Contains(plan, want) {
			t.Errorf("compose plan does not use %s:\n%s", want, plan)
		}
	}
}

// TestComposeWindowV2UsesItsIndexes checks, on a bulk-loaded and analysed table of 40,000 SpaceMolt-like rows, that
// each v2 part is served by its index: the turn start by memories_turn_open_idx, the carry-over scan by
// memories_tool_seq_idx, the pinned tools by memories_tool_name_idx, the replies by memories_reply_idx, and that
// no part reads the memories table sequentially.
func TestComposeWindowV2UsesItsIndexes(t *testing.T) {
	ctx := context.Background()
	s, p := freshStore(t)
	var ids []string
	for range 4 {
		ids = append(ids, mkMysis(t, s).ID)
	}
	// 4 myses × 10,000 rows: turns of an order or nudge, loops of a few tools, a text reply now and then.
	tools := []string{"mine", "get_status", "view_market", "travel", "sell", "login"}
	k, seq, turn, mysis := 0, int64(0), int64(0), 0
	var buf []memory.Memory
	at := time.Now().Add(-time.Hour)
	next := func() (memory.Memory, bool) {
		for len(buf) == 0 {
			if mysis == len(ids) {
				return memory.Memory{}, false
			}
			if seq >= 10000 {
				mysis, seq, turn = mysis+1, 0, 0
				continue
			}
			turn++
			src := memory.SourceNudge
			if turn%20 == 1 {
				src = memory.SourceDirect
			}
			buf = append(buf, memory.Memory{Role: memory.RoleUser, Source: src, Content: "go"})
			for range 5 {
				k++
				name, id, args := tools[k%len(tools)], fmt.Sprintf("c%d", k), fmt.Sprintf(`{"n":%d}`, k%7)
				buf = append(buf, memory.Memory{Role: memory.RoleAssistant, Source: memory.SourceLLM,
					ToolCalls: []memory.ToolCall{{ID: id, Name: name, Arguments: args}}},
					memory.Memory{Role: memory.RoleTool, Source: memory.SourceTool, ToolCallID: id, ToolName: name,
						Content: "result", CallArguments: args})
			}
			buf = append(buf, memory.Memory{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "done"})
		}
		r := buf[0]
		buf = buf[1:]
		seq++
		r.MysisID, r.Seq, r.Turn, r.CreatedAt = ids[mysis], seq, turn, at
		if seq == 10000 {
			buf = nil
		}
		return r, true
	}
	if _, err := s.CopyMemories(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCounters(ctx, ids, []int64{10000, 10000, 10000, 10000}, []int64{turn, turn, turn, turn}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `VACUUM ANALYZE memories`); err != nil {
		t.Fatal(err)
	}
	// The plan for these values, and the generic plan the service runs the statement on.
	wq := memory.WindowQuery{MysisID: ids[1], Window: 20, GlobalFallback: true, CarryLimit: 50,
		SnapshotTools: []string{"get_status"}, PinnedTools: []string{"login"}, ReplyLimit: 5}
	for what, plan := range map[string]string{"custom": explainWindow(t, wq), "generic": explainGeneric(t, p, wq, "EXPLAIN ")} {
		for _, want := range []string{"memories_turn_open_idx", "memories_tool_seq_idx", "memories_tool_name_idx",
			"memories_reply_idx", "memories_mission_idx", "using memories_mysis_seq_key"} {
			if !strings.Contains(plan, want) {
				t.Errorf("v2 compose plan (%s) does not use %s:\n%s", what, want, plan)
			}
		}
		if strings.Contains(plan, "Seq Scan on memories") {
			t.Errorf("v2 compose plan (%s) scans memories:\n%s", what, plan)
		}
	}
	// And the answer on this table: the current turn, carried keys, the pinned login, 5 replies.
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: ids[1], Window: 20, CarryLimit: 50,
		SnapshotTools: []string{"get_status"}, PinnedTools: []string{"login"}, ReplyLimit: 5}))
	if w.ObjectiveSeq == 0 || w.RecentStartSeq == 0 || len(w.Memories) < 20+5 {
		t.Fatalf("seeded window: objective %d, start %d, %d memories", w.ObjectiveSeq, w.RecentStartSeq, len(w.Memories))
	}
	// With the carried rows held by the caller (carry_known), none of the carried parts runs: the carry-over scan,
	// the pinned probes and the replies are gated off before they read anything.
	q := memory.WindowQuery{MysisID: ids[1], Window: 20, CarryLimit: 50, SnapshotTools: []string{"get_status"},
		PinnedTools: []string{"login"}, ReplyLimit: 5, Known: memory.CarryKnown{ObjectiveSeq: w.ObjectiveSeq, RecentStartSeq: w.RecentStartSeq}}
	const analyze = "EXPLAIN (ANALYZE, COSTS off, TIMING off, SUMMARY off) "
	for what, plan := range map[string]string{"custom": explainWindowWith(t, p, q, analyze), "generic": explainGeneric(t, p, q, analyze)} {
		if !strings.Contains(plan, "CTE Scan on om") || !strings.Contains(plan, "Index Scan using memories_mysis_seq_key") {
			t.Fatalf("not the window's plan (%s):\n%s", what, plan)
		}
		for _, idx := range []string{"memories_tool_seq_idx", "memories_tool_name_idx", "memories_reply_idx"} {
			if !neverExecuted(plan, idx) {
				t.Errorf("carry held (%s plan): the scan of %s ran:\n%s", what, idx, plan)
			}
		}
	}
}

// neverExecuted reports whether every scan of index idx in an EXPLAIN ANALYZE plan says "(never executed)".
func neverExecuted(plan, idx string) bool {
	found := false
	for _, l := range strings.Split(plan, "\n") {
		if strings.Contains(l, "using "+idx) || strings.Contains(l, "on "+idx) {
			found = true
			if !strings.Contains(l, "never executed") {
				return false
			}
		}
	}
	return found
}
