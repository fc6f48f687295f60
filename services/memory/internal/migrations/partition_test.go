package migrations_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// TestWriteMigrationsOnASeededDatabase fills a schema-v4 database (unpartitioned memories, broadcast deliveries
// carrying copies of the text, generated content_tsv), adds an index as a later migration on another branch might
// (00007), migrates to the latest schema (00005 broadcast once, 00006 asynchronous indexing, 00007 searchable tool
// calls, 00008 partitioning, 00009 tool calls in content_tsv) and checks rows, seq, ids, indexes, search and new
// writes.
func TestWriteMigrationsOnASeededDatabase(t *testing.T) {
	ctx := context.Background()
	p := open(t, pgtest.New(t))
	if err := migrations.UpTo(ctx, p, 4); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := p.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Three myses of 300 rows: loops of assistant call → tool result → user order, a broadcast delivery (with its
	// copy of the text, as v4 wrote them) at seq 150, an idempotency key on every other row.
	bc := memory.NewID()
	exec(`INSERT INTO broadcasts (id, content) VALUES ($1, 'Swarm order: regroup at haven_station')`, bc)
	var ids []string
	for i := range 3 {
		id := memory.NewID()
		ids = append(ids, id)
		exec(`INSERT INTO myses (id, name, provider, last_seq, current_turn) VALUES ($1, $2, 'autopilot', 300, 100)`, id, "seeded-"+string(rune('a'+i)))
		exec(`INSERT INTO memories (mysis_id, seq, turn, role, source, content, tool_calls, tool_call_id, tool_name,
				idempotency_key, broadcast_id, call_key)
			SELECT $1, s, (s + 2) / 3,
				CASE WHEN s = 150 THEN 2 WHEN s % 3 = 1 THEN 2 WHEN s % 3 = 2 THEN 3 ELSE 4 END,
				CASE WHEN s = 150 THEN 2 WHEN s % 3 = 1 THEN 1 WHEN s % 3 = 2 THEN 4 ELSE 5 END,
				CASE WHEN s = 150 THEN 'Swarm order: regroup at haven_station' WHEN s % 3 = 0 THEN '{"item_id":"titanium_ore","n":' || s || '}'
					ELSE 'step ' || s END,
				CASE WHEN s % 3 = 2 AND s <> 150 THEN ('[{"id":"c' || s || '","name":"mine","arguments":"{}"}]')::jsonb END,
				CASE WHEN s % 3 = 0 THEN 'c' || (s - 1) ELSE '' END,
				CASE WHEN s % 3 = 0 THEN 'mine' ELSE '' END,
				CASE WHEN s % 2 = 0 AND s <> 150 THEN 'k' || s END,
				CASE WHEN s = 150 THEN $2::uuid END,
				CASE WHEN s % 3 = 0 THEN 'mine {}' END
			FROM generate_series(1, 300) s`, id, bc)
	}
	exec(`CREATE INDEX memories_branch_extra_idx ON memories (mysis_id, lower(tool_name)) INCLUDE (seq) WHERE role = 4`)

	// What the store reads at v4 (its reads resolve deliveries from broadcasts either way).
	s := memory.NewService(pgstore.New(p, nil))
	before := map[string][]memory.Memory{}
	for _, id := range ids {
		before[id] = readAll(t, s, id)
	}
	var maxID int64
	if err := p.QueryRow(ctx, `SELECT max(id) FROM memories`).Scan(&maxID); err != nil {
		t.Fatal(err)
	}

	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}

	var kind string
	var parts int
	if err := p.QueryRow(ctx, `SELECT c.relkind::text, (SELECT count(*) FROM pg_inherits WHERE inhparent = c.oid)
		FROM pg_class c WHERE c.oid = 'memories'::regclass`).Scan(&kind, &parts); err != nil || kind != "p" || parts != 16 {
		t.Fatalf("memories: relkind %q, %d partitions (%v)", kind, parts, err)
	}
	for _, id := range ids {
		if after := readAll(t, s, id); !reflect.DeepEqual(after, before[id]) {
			t.Fatalf("mysis %s: rows differ after migrating (%d before, %d after)", id, len(before[id]), len(after))
		}
	}
	var copies int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM memories WHERE broadcast_id IS NOT NULL AND content <> ''`).Scan(&copies); err != nil || copies != 0 {
		t.Fatalf("deliveries still carrying a copy: %d %v", copies, err)
	}
	// Indexes carried along, the branch's own included, each partition with <index>_pNN copies.
	var names, partNames string
	if err := p.QueryRow(ctx, `SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'memories'`).Scan(&names); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memories_pkey", "memories_mysis_seq_key", "memories_idempotency_key", "memories_mission_idx",
		"memories_content_fts_idx", "memories_reasoning_fts_idx", "memories_broadcast_delivery_key", "memories_tool_seq_idx",
		"memories_tool_name_idx", "memories_reply_idx", "memories_turn_open_idx", "memories_fts_pending_idx", "memories_branch_extra_idx"} {
		if !strings.Contains(","+names+",", ","+want+",") {
			t.Fatalf("index %s missing after partitioning: %s", want, names)
		}
	}
	if err := p.QueryRow(ctx, `SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'memories_p05'`).Scan(&partNames); err != nil ||
		partNames != strings.ReplaceAll(names, ",", "_p05,")+"_p05" {
		t.Fatalf("partition indexes: %s (%v)", partNames, err)
	}
	var def string
	if err := p.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_branch_extra_idx'`).Scan(&def); err != nil ||
		!strings.Contains(def, "lower(tool_name)") || !strings.Contains(def, "INCLUDE (seq)") || !strings.Contains(def, "WHERE (role = 4)") {
		t.Fatalf("carried index definition: %q %v", def, err)
	}
	// A query of one mysis reads one partition.
	rows, err := p.Query(ctx, `EXPLAIN (COSTS OFF) SELECT * FROM memories WHERE mysis_id = '`+ids[0]+`' AND seq > 10`)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	rows.Close()
	if got := strings.Count(strings.Join(lines, "\n"), " on memories_p"); got != 1 {
		t.Fatalf("a one-mysis query scans %d partitions:\n%s", got, strings.Join(lines, "\n"))
	}

	// Search: stored vectors survived (tool results), deliveries are found through their broadcast.
	if hs, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: ids[1], Text: "titanium_ore", Limit: 100}); err != nil || len(hs.Hits) != 99 {
		t.Fatalf("search after migrating: %d %v", len(hs.Hits), err)
	}
	if hs, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: ids[1], Text: "haven_station"}); err != nil || len(hs.Hits) != 1 || hs.Hits[0].Memory.Seq != 150 {
		t.Fatalf("delivery search after migrating: %+v %v", hs, err)
	}
	// Tool calls written before 00009 are in their rows' content_tsv: found by the call's name (the 100 assistant
	// rows that called mine; the results' text does not name it), through the one GIN index left.
	if hs, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: ids[1], Text: "mine", Limit: 100, Order: memory.OrderRecency}); err != nil ||
		len(hs.Hits) != 100 || hs.Hits[0].Memory.Seq != 299 || len(hs.Hits[0].Memory.ToolCalls) != 1 {
		t.Fatalf("tool-call search after migrating: %d hits %v", len(hs.Hits), err)
	}
	var stale int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM memories WHERE tool_calls IS NOT NULL
		AND content_tsv IS DISTINCT FROM zoea_calls_tsv(content, tool_calls)`).Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("%d memories with tool calls keep a vector without them (%v)", stale, err)
	}
	if strings.Contains(names, "memories_calls_fts_idx") {
		t.Fatalf("the calls expression index is still there: %s", names)
	}
	// New writes continue the seq and the ids, idempotency keys still hold.
	// k2 names seq 2 (an assistant call); replaying its own payload returns it, as before the migration.
	seq2 := before[ids[2]][1]
	if seq2.Seq != 2 {
		t.Fatalf("seeded seq 2 read as %d", seq2.Seq)
	}
	got, err := s.AppendMemories(ctx, ids[2], []memory.NewMemory{
		{Role: seq2.Role, Source: seq2.Source, Content: seq2.Content, ToolCalls: seq2.ToolCalls, IdempotencyKey: "k2"},
		{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "new order", IdempotencyKey: "fresh"},
	})
	if err != nil || got[0].Seq != 2 || got[1].Seq != 301 || got[1].Turn != 101 || got[1].ID <= maxID {
		t.Fatalf("append after migrating: %+v %v", got, err)
	}
	d, err := s.RecordBroadcast(ctx, memory.Broadcast{Content: "all hands"}, ids)
	if err != nil || d.Delivered != 3 || d.Memories[0].Seq != 301 {
		t.Fatalf("broadcast after migrating: %+v %v", d, err)
	}
	if d, err := s.DeliverBroadcast(ctx, bc, ids); err != nil || d.Delivered != 0 || d.AlreadyDelivered != 3 {
		t.Fatalf("an old delivery is not recognised after migrating: %+v %v", d, err)
	}
}

func readAll(t *testing.T, s *memory.Service, mysisID string) []memory.Memory {
	t.Helper()
	var out []memory.Memory
	for from := int64(1); ; {
		page, err := s.ListMemoriesRange(context.Background(), mysisID, from, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out
		}
		from = page[len(page)-1].Seq + 1
	}
}
