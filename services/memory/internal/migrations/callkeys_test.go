package migrations_test

import (
	"context"
	"testing"

	"github.com/zoeaswarm/zoea/libs/callkey"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
)

// TestCallKeyBackfill migrates a database with tool results written at schema v2 (no call columns) and checks
// every result got its call's arguments and the key the service computes for new rows; a row already keyed (a
// backfill interrupted and resumed) is left as it is.
func TestCallKeyBackfill(t *testing.T) {
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	if err := migrations.UpTo(ctx, p, 2); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := p.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	id := memory.NewID()
	exec(`INSERT INTO myses (id, name, provider) VALUES ($1, 'old', 'autopilot')`, id)
	args := `{ "item" : "ore", "station":"haven" }`
	rows := []struct {
		seq        int64
		role       int
		toolCalls  any
		callID     string
		tool       string
		wantArgs   any
		wantKey    any
		presetDone bool
	}{
		{1, 2, nil, "", "", nil, nil, false},
		{2, 3, `[{"id":"a","name":"view_market","arguments":"` + `{ \"item\" : \"ore\", \"station\":\"haven\" }` + `"},{"id":"b","name":"get_status","arguments":"{}"}]`, "", "", nil, nil, false},
		{3, 4, nil, "a", "view_market", args, callkey.Of("view_market", args), false},
		{4, 4, nil, "b", "get_status", "{}", "get_status {}", false},
		{5, 4, nil, "zz", "mine", nil, "mine ", false}, // its call is nowhere
		{6, 3, `[{"id":"c","name":"travel","arguments":"{\"to\":\"sol\"}"}]`, "", "", nil, nil, false},
		{7, 4, nil, "c", "travel", nil, "travel already", true}, // keyed before: untouched
		{8, 3, nil, "", "", nil, nil, false},                    // a text reply
	}
	for _, r := range rows {
		exec(`INSERT INTO memories (mysis_id, seq, turn, role, source, tool_calls, tool_call_id, tool_name)
			VALUES ($1, $2, 1, $3::smallint, CASE $3::smallint WHEN 2 THEN 1 WHEN 3 THEN 4 ELSE 5 END, $4::jsonb, $5, $6)`,
			id, r.seq, r.role, r.toolCalls, r.callID, r.tool)
	}
	// Schema v3's columns do not exist yet; simulate a resumed backfill by adding them and keying row 7 first.
	exec(`ALTER TABLE memories ADD COLUMN call_arguments_json text, ADD COLUMN call_key text`)
	exec(`UPDATE memories SET call_key = 'travel already' WHERE seq = 7`)
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var a, k *string
		if err := p.QueryRow(ctx, `SELECT call_arguments_json, call_key FROM memories WHERE mysis_id = $1 AND seq = $2`, id, r.seq).Scan(&a, &k); err != nil {
			t.Fatal(err)
		}
		if !eq(a, r.wantArgs) || !eq(k, r.wantKey) {
			t.Errorf("seq %d: arguments %v key %v, want %v %v", r.seq, deref(a), deref(k), r.wantArgs, r.wantKey)
		}
	}
	for _, idx := range []string{"memories_tool_seq_idx", "memories_tool_name_idx", "memories_reply_idx", "memories_turn_open_idx"} {
		var valid bool
		if err := p.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, idx).Scan(&valid); err != nil || !valid {
			t.Errorf("index %s: valid %v %v", idx, valid, err)
		}
	}
}

func eq(got *string, want any) bool {
	if want == nil {
		return got == nil
	}
	return got != nil && *got == want.(string)
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
