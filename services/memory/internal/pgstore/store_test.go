package pgstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
	"github.com/zoeaswarm/zoea/services/memory/internal/secretbox"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, "memory", &dbURL)) }

var (
	setupOnce sync.Once
	sharedDB  *pgxpool.Pool
	setupErr  error
)

// pool returns the package's migrated database. Tests share it and isolate themselves by creating their own myses
// (names carry the test name), except the ones that need a database of their own.
func pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	setupOnce.Do(func() {
		ctx := context.Background()
		sharedDB, setupErr = pgutil.Open(ctx, dbURL, "zoea-test", 20)
		if setupErr == nil {
			_, setupErr = migrations.Up(ctx, sharedDB, nil)
		}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return sharedDB
}

func testBox(t testing.TB) *secretbox.Box {
	t.Helper()
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	b, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// svcStore is what the tests drive: pgstore's operations as the server runs them, through memory.Service, which
// validates and normalises every argument before the store sees it (pgstore's methods take only what the Service
// has checked: canonical ids, limits with their defaults, bounded queries). The adapter's own methods (bulk
// loading, the indexer's, Ping) are reachable too: the Service's methods are one embedding level shallower, so
// they win where both have the name.
type svcStore struct {
	*memory.Service
	adapter
}

type adapter struct{ *pgstore.Store }

func newSvcStore(p *pgxpool.Pool, box pgstore.Sealer, opts ...pgstore.Option) *svcStore {
	st := pgstore.New(p, box, opts...)
	return &svcStore{Service: memory.NewService(st), adapter: adapter{st}}
}

// ExplainSearchMessages explains the statement for q as SearchMessages would run it, normalised by the Service's rule.
func (s *svcStore) ExplainSearchMessages(ctx context.Context, q memory.SearchQuery) (string, error) {
	q, err := q.Normalize(true)
	if err != nil {
		return "", err
	}
	return s.Store.ExplainSearchMessages(ctx, q)
}

func newStore(t testing.TB) *svcStore { return newSvcStore(pool(t), testBox(t)) }

// freshStore returns a store on a database of its own, for tests that look at swarm-wide data.
func freshStore(t testing.TB) (*svcStore, *pgxpool.Pool) {
	t.Helper()
	return freshStoreConns(t, 10)
}

// freshStoreConns is freshStore with a pool of conns connections.
func freshStoreConns(t testing.TB, conns int32) (*svcStore, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	p, err := pgutil.Open(ctx, pgtest.New(t), "zoea-test", conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	return newSvcStore(p, testBox(t)), p
}

var nameSeq struct {
	sync.Mutex
	n int
}

func uniqueName(t testing.TB) string {
	nameSeq.Lock()
	defer nameSeq.Unlock()
	nameSeq.n++
	n := fmt.Sprintf("%s-%d", t.Name(), nameSeq.n)
	if len(n) > 60 {
		n = n[len(n)-60:]
	}
	return n
}

func mkMysis(t testing.TB, s *svcStore) memory.Mysis {
	t.Helper()
	m, err := s.CreateMysis(context.Background(), memory.NewMysis{
		Name: uniqueName(t), Provider: "ollama", Model: "qwen3:8b", Temperature: 0.7, SystemPrompt: "You are a mysis.",
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wantKind(t testing.TB, err error, k errs.Kind, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error of kind %v, got nil", k)
	}
	if got := errs.KindOf(err); got != k {
		t.Fatalf("want kind %v, got %v (%v)", k, got, err)
	}
	if field != "" && errs.FieldOf(err) != field {
		t.Fatalf("want field %q, got %q (%v)", field, errs.FieldOf(err), err)
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func user(content string) memory.NewMemory {
	return memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceDirect, Content: content}
}

func assistant(content string, calls ...memory.ToolCall) memory.NewMemory {
	return memory.NewMemory{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: content, ToolCalls: calls}
}

func toolResult(id, name, content string) memory.NewMemory {
	return memory.NewMemory{Role: memory.RoleTool, Source: memory.SourceTool, ToolCallID: id, ToolName: name, Content: content}
}

func TestMysisLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	if m.State != memory.StateIdle || m.LastSeq != 0 || m.CurrentTurn != 0 || m.CreatedAt.IsZero() {
		t.Fatalf("new mysis: %+v", m)
	}
	got := must[memory.Mysis](t)(s.GetMysis(ctx, strings.ToUpper(m.ID)))
	if got.ID != m.ID || got.Name != m.Name || got.SystemPrompt != "You are a mysis." || got.Temperature != 0.7 {
		t.Fatalf("get: %+v", got)
	}
	byName := must[memory.Mysis](t)(s.GetMysisByName(ctx, m.Name))
	if byName.ID != m.ID {
		t.Fatalf("by name: %+v", byName)
	}

	_, err := s.CreateMysis(ctx, memory.NewMysis{SystemPrompt: "You are a mysis.", Name: m.Name, Provider: "autopilot"})
	wantKind(t, err, errs.Exists, "")
	_, err = s.GetMysis(ctx, memory.NewID())
	wantKind(t, err, errs.NotFound, "")
	_, err = s.GetMysisByName(ctx, "no such mysis at all")
	wantKind(t, err, errs.NotFound, "")

	model, temp := "llama3.2", 1.5
	up := must[memory.Mysis](t)(s.UpdateMysisConfig(ctx, m.ID, memory.ConfigPatch{Model: &model, Temperature: &temp}))
	if up.Model != model || up.Temperature != temp || up.Provider != "ollama" || up.SystemPrompt != "You are a mysis." {
		t.Fatalf("update: %+v", up)
	}
	if !up.UpdatedAt.After(m.UpdatedAt) && !up.UpdatedAt.Equal(m.UpdatedAt) {
		t.Fatalf("updated_at went back")
	}

	if err := s.DeleteMysis(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetMysis(ctx, m.ID)
	wantKind(t, err, errs.NotFound, "")
	wantKind(t, s.DeleteMysis(ctx, m.ID), errs.NotFound, "")
}

func TestListMysesPagesAndFilters(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	for i := range 7 {
		m := must[memory.Mysis](t)(s.CreateMysis(ctx, memory.NewMysis{SystemPrompt: "You are a mysis.", Name: fmt.Sprintf("m%02d", i), Provider: "autopilot"}))
		if i%2 == 0 {
			if _, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateRunning}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		page, more, err := s.ListMyses(ctx, memory.ListFilter{PageSize: 3, AfterName: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			names = append(names, m.Name)
		}
		if !more {
			break
		}
		after = page[len(page)-1].Name
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(names, ",") != "m00,m01,m02,m03,m04,m05,m06" {
		t.Fatalf("pages: %v", names)
	}
	running, more, err := s.ListMyses(ctx, memory.ListFilter{State: memory.StateRunning})
	if err != nil || more || len(running) != 4 {
		t.Fatalf("running: %d %v %v", len(running), more, err)
	}
	for _, m := range running {
		if m.State != memory.StateRunning {
			t.Fatalf("filter leaked %+v", m)
		}
	}
}

func TestSetMysisStateCompareAndSet(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	three := int32(3)
	got, prev, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateRunning, Reason: "started", Expected: memory.StateIdle})
	if err != nil || prev != memory.StateIdle || got.State != memory.StateRunning || got.StateReason != "started" {
		t.Fatalf("cas idle→running: %+v %v %v", got, prev, err)
	}
	// Stale expectation: nothing changes.
	_, _, err = s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateStopped, Reason: "stale", EncouragementCount: &three, Expected: memory.StateIdle})
	wantKind(t, err, errs.Conflict, "")
	cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID))
	if cur.State != memory.StateRunning || cur.StateReason != "started" || cur.EncouragementCount != 0 {
		t.Fatalf("failed CAS changed the row: %+v", cur)
	}
	got, prev, err = s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateIdle, Reason: "Failed to respond after 3 encouragements", EncouragementCount: &three})
	if err != nil || prev != memory.StateRunning || got.EncouragementCount != 3 {
		t.Fatalf("unconditional: %+v %v %v", got, prev, err)
	}
	_, _, err = s.SetMysisState(ctx, memory.NewID(), memory.StateChange{State: memory.StateIdle, Expected: memory.StateRunning})
	wantKind(t, err, errs.NotFound, "")

	// Many racing CAS writers from the same state: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Go(func() {
			_, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateRunning, Expected: memory.StateIdle})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errs.Is(err, errs.Conflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d CAS winners, want 1", wins)
	}
}

func TestAppendAssignsSeqAndTurns(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	batch := []memory.NewMemory{
		{Role: memory.RoleSystem, Source: memory.SourceSystem, Content: "system prompt"},
		user("mine iron"),
		assistant("on it", memory.ToolCall{ID: "c1", Name: "mine", Arguments: `{}`}),
		toolResult("c1", "mine", `{"ore":"iron_ore","qty":3}`),
		{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue your mission."},
		assistant("status"),
		{Role: memory.RoleUser, Source: memory.SourceBroadcast, Content: "all hands"},
	}
	got := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, batch))
	wantTurns := []int64{0, 1, 1, 1, 2, 2, 3}
	for i, g := range got {
		if g.Seq != int64(i+1) || g.Turn != wantTurns[i] || g.ID == 0 || g.MysisID != m.ID || g.CreatedAt.IsZero() {
			t.Fatalf("row %d: %+v", i, g)
		}
	}
	more := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{assistant("more"), user("next")}))
	if more[0].Seq != 8 || more[0].Turn != 3 || more[1].Seq != 9 || more[1].Turn != 4 {
		t.Fatalf("second batch: %+v", more)
	}
	cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID))
	if cur.LastSeq != 9 || cur.CurrentTurn != 4 {
		t.Fatalf("mysis counters: %+v", cur)
	}

	recent := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, m.ID, 3))
	if len(recent) != 3 || recent[0].Seq != 7 || recent[2].Seq != 9 {
		t.Fatalf("recent: %+v", recent)
	}
	rng := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, m.ID, 2, 4, 0))
	if len(rng) != 3 || rng[0].Seq != 2 || rng[2].Seq != 4 {
		t.Fatalf("range: %+v", rng)
	}
	open := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, m.ID, 8, 0, 0))
	if len(open) != 2 {
		t.Fatalf("open range: %+v", open)
	}
	one := must[memory.Memory](t)(s.GetMemory(ctx, m.ID, got[3].ID))
	if one.ToolCallID != "c1" || one.ToolName != "mine" || one.Content != `{"ore":"iron_ore","qty":3}` {
		t.Fatalf("get memory: %+v", one)
	}
	other := mkMysis(t, s)
	_, err := s.GetMemory(ctx, other.ID, got[3].ID)
	wantKind(t, err, errs.NotFound, "")
	_, err = s.ListRecentMemories(ctx, memory.NewID(), 5)
	wantKind(t, err, errs.NotFound, "")
	if empty := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, other.ID, 5)); len(empty) != 0 {
		t.Fatalf("empty history: %+v", empty)
	}
	_, err = s.AppendMemories(ctx, memory.NewID(), []memory.NewMemory{user("x")})
	wantKind(t, err, errs.NotFound, "")
}

func TestContentRoundTripsExactly(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	big := strings.Repeat(`{"k":"v|w:x","n":[1,2,3],"s":"naïve 🚀 \"q\""}`+"\n", 1<<20/48)
	args := []string{
		`{}`,
		`{ "b" : 1,   "a" : "x|y:z" }`,
		`{"target":"sol|station","note":"a:b|c","q":"\"quoted\"","u":"\u00e9 é 日本"}`,
		"{\n\t\"deep\": {\"list\": [1, 2, {\"x\": null}]},\n\t\"dup\": 1, \"dup\": 2\n}",
	}
	var calls []memory.ToolCall
	for i, a := range args {
		calls = append(calls, memory.ToolCall{ID: fmt.Sprintf("call_%d|x:y", i), Name: "travel", Arguments: a})
	}
	in := []memory.NewMemory{
		{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "a|b:c \"d\" 'e' \\ ünïcødé 🛸", Reasoning: "think | hard: ok", ToolCalls: calls},
		toolResult("call_0|x:y", "travel", big),
		{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "  leading and trailing spaces \r\n\t", SenderID: memory.NewID()},
	}
	stored := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, in))
	back := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, m.ID, 1, 0, 0))
	if len(back) != len(in) {
		t.Fatalf("got %d rows", len(back))
	}
	for i := range in {
		for _, got := range []memory.Memory{stored[i], back[i]} {
			if got.Content != in[i].Content || got.Reasoning != in[i].Reasoning || got.SenderID != in[i].SenderID ||
				got.ToolCallID != in[i].ToolCallID || got.ToolName != in[i].ToolName {
				t.Fatalf("row %d changed", i)
			}
			if len(got.ToolCalls) != len(in[i].ToolCalls) {
				t.Fatalf("row %d: %d tool calls, want %d", i, len(got.ToolCalls), len(in[i].ToolCalls))
			}
			for j, tc := range in[i].ToolCalls {
				if got.ToolCalls[j] != tc {
					t.Fatalf("tool call %d: got %+v want %+v", j, got.ToolCalls[j], tc)
				}
			}
		}
	}
}

func TestAppendIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	batch := []memory.NewMemory{
		{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "go", IdempotencyKey: "turn-1/0"},
		{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "ok", IdempotencyKey: "turn-1/1"},
		{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "no key"},
	}
	first := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, batch[:2]))
	again := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, batch[:2]))
	for i := range first {
		if first[i].ID != again[i].ID || first[i].Seq != again[i].Seq || first[i].Turn != again[i].Turn ||
			!first[i].CreatedAt.Equal(again[i].CreatedAt) || again[i].IdempotencyKey != batch[i].IdempotencyKey {
			t.Fatalf("retry %d: first %+v again %+v", i, first[i], again[i])
		}
	}
	if cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)); cur.LastSeq != 2 || cur.CurrentTurn != 1 {
		t.Fatalf("retry advanced counters: %+v", cur)
	}
	// A retry that overlaps: stored rows come back, new ones are appended after.
	mixed := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{batch[1], batch[2], {Role: memory.RoleTool, Source: memory.SourceTool, ToolCallID: "x", IdempotencyKey: "turn-1/2"}}))
	if mixed[0].ID != first[1].ID || mixed[1].Seq != 3 || mixed[2].Seq != 4 {
		t.Fatalf("mixed retry: %+v", mixed)
	}
	// Concurrent retries of the same key write one row.
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		wg.Go(func() {
			out, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "race", IdempotencyKey: "race"}})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = out[0].ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent retries wrote different rows: %v", ids)
		}
	}
	if cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)); cur.LastSeq != 5 {
		t.Fatalf("last_seq %d, want 5", cur.LastSeq)
	}
}

func TestConcurrentAppendersKeepSeqGapless(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	const workers, perWorker = 16, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				batch := []memory.NewMemory{assistant(fmt.Sprintf("w%d-%d", w, i))}
				if i%3 == 0 {
					batch = append(batch, toolResult("c", "get_status", "{}"))
				}
				if _, err := s.AppendMemories(ctx, m.ID, batch); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	all := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, m.ID, 1, 0, 1000))
	want := workers * (perWorker + (perWorker+2)/3)
	if len(all) != want {
		t.Fatalf("%d rows, want %d", len(all), want)
	}
	ids := map[int64]bool{}
	for i, r := range all {
		if r.Seq != int64(i+1) {
			t.Fatalf("seq gap or duplicate at %d: %d", i, r.Seq)
		}
		if ids[r.ID] {
			t.Fatalf("duplicate id %d", r.ID)
		}
		ids[r.ID] = true
	}
	if cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)); cur.LastSeq != int64(want) {
		t.Fatalf("last_seq %d want %d", cur.LastSeq, want)
	}
}

func TestComposeWindow(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	m := mkMysis(t, s)

	// No memories, no broadcasts: empty window, no mission, with or without fallback.
	w := must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}))
	if w.Mysis.ID != m.ID || w.Mysis.SystemPrompt != "You are a mysis." || len(w.Memories) != 0 || w.Mission != nil {
		t.Fatalf("empty: %+v", w)
	}

	// A swarm broadcast to someone else only: the global fallback finds it, but not without the flag.
	other := mkMysis(t, s)
	d := must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: "Explore the universe!"}, []string{other.ID}))
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}))
	if w.Mission == nil || !w.Mission.GlobalFallback || w.Mission.Memory.ID != 0 || w.Mission.Memory.Seq != 0 ||
		w.Mission.Memory.Content != "Explore the universe!" || w.Mission.Memory.BroadcastID != d.Broadcast.ID ||
		w.Mission.Memory.Role != memory.RoleUser || w.Mission.Memory.Source != memory.SourceBroadcast || w.Mission.Memory.MysisID != m.ID {
		t.Fatalf("fallback: %+v", w.Mission)
	}
	if w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: false})); w.Mission != nil {
		t.Fatalf("fallback without the flag: %+v", w.Mission)
	}
	// A mysis-sent broadcast is not a commander mission.
	must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{SenderID: other.ID, Content: "swarm chatter"}, []string{m.ID}))
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}))
	if w.Mission == nil || !w.Mission.GlobalFallback || w.Mission.Memory.Content != "Explore the universe!" {
		t.Fatalf("mysis broadcast taken as mission: %+v", w.Mission)
	}

	// The mysis's own order, followed by a long tool loop: the mission is found far outside the window.
	order := must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("Mine iron_ore at Sol")}))[0]
	var loop []memory.NewMemory
	for i := range 100 {
		id := fmt.Sprintf("c%d", i)
		loop = append(loop, assistant("", memory.ToolCall{ID: id, Name: "mine", Arguments: "{}"}), toolResult(id, "mine", `{"mined":1}`))
	}
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, loop))
	// Nudges and mysis direct messages do not replace the mission.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{
		{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "Continue."},
		{Role: memory.RoleUser, Source: memory.SourceDirect, SenderID: other.ID, Content: "hi from other"},
	}))
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 20, GlobalFallback: true}))
	if len(w.Memories) != 20 {
		t.Fatalf("window %d", len(w.Memories))
	}
	for i := 1; i < len(w.Memories); i++ {
		if w.Memories[i].Seq != w.Memories[i-1].Seq+1 {
			t.Fatalf("window not chronological: %d then %d", w.Memories[i-1].Seq, w.Memories[i].Seq)
		}
	}
	last := w.Memories[len(w.Memories)-1]
	if last.Seq != w.Mysis.LastSeq || last.Content != "hi from other" {
		t.Fatalf("window does not end at the newest memory: %+v", last)
	}
	if w.Mission == nil || w.Mission.GlobalFallback || w.Mission.Memory.ID != order.ID || w.Mission.Memory.Content != "Mine iron_ore at Sol" {
		t.Fatalf("mission: %+v", w.Mission)
	}
	if w.Mysis.CurrentTurn != 4 { // broadcast chatter, order, nudge, direct from other
		t.Fatalf("current turn %d", w.Mysis.CurrentTurn)
	}

	// A newer commander broadcast delivered to the mysis becomes its mission.
	d2 := must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: "Regroup at Haven"}, nil))
	w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 5, GlobalFallback: true}))
	if w.Mission == nil || w.Mission.GlobalFallback || w.Mission.Memory.BroadcastID != d2.Broadcast.ID || w.Mission.Memory.Seq != w.Mysis.LastSeq {
		t.Fatalf("broadcast mission: %+v", w.Mission)
	}
	if len(w.Memories) != 5 {
		t.Fatalf("window 5: %d", len(w.Memories))
	}

	// Account username is part of the mysis.
	must[memory.Account](t)(s.CreateAccount(ctx, memory.Account{Username: "pilot_one", Password: "pw", MysisID: m.ID}))
	if w = must[memory.ComposeWindow](t)(s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: 0, GlobalFallback: false})); w.Mysis.AccountUsername != "pilot_one" || len(w.Memories) != 20 {
		t.Fatalf("account/default window: %q %d", w.Mysis.AccountUsername, len(w.Memories))
	}
	_, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: memory.NewID(), Window: 20, GlobalFallback: true})
	wantKind(t, err, errs.NotFound, "")
}

func TestBroadcastDelivery(t *testing.T) {
	ctx := context.Background()
	s, _ := freshStore(t)
	var ms []memory.Mysis
	for range 5 {
		ms = append(ms, mkMysis(t, s))
	}
	// Give one mysis some history so its delivery lands at seq 3, turn 2.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, ms[1].ID, []memory.NewMemory{user("hello"), assistant("hi")}))

	sender := ms[0]
	b := memory.Broadcast{ID: memory.NewID(), SenderID: sender.ID, Content: "enemy spotted near Sol"}
	d := must[memory.Delivery](t)(s.RecordBroadcast(ctx, b, nil))
	if d.Delivered != 4 || d.AlreadyDelivered != 0 || d.Broadcast.ID != b.ID || d.Broadcast.CreatedAt.IsZero() {
		t.Fatalf("record: %+v", d)
	}
	for _, m := range ms {
		recent := must[[]memory.Memory](t)(s.ListRecentMemories(ctx, m.ID, 1))
		if m.ID == sender.ID {
			if len(recent) != 0 {
				t.Fatalf("sender received its own broadcast")
			}
			continue
		}
		r := recent[0]
		if r.Role != memory.RoleUser || r.Source != memory.SourceBroadcast || r.BroadcastID != b.ID || r.SenderID != sender.ID ||
			r.Content != b.Content || r.IdempotencyKey != "" {
			t.Fatalf("delivery row: %+v", r)
		}
		if m.ID == ms[1].ID && (r.Seq != 3 || r.Turn != 2) {
			t.Fatalf("delivery seq/turn: %d/%d", r.Seq, r.Turn)
		}
	}
	// A retry delivers nothing new and reports the first recording; the same id with other content is refused and
	// changes nothing (issue 41, finding 4).
	d = must[memory.Delivery](t)(s.RecordBroadcast(ctx, b, nil))
	if d.Delivered != 0 || d.AlreadyDelivered != 4 || d.Broadcast.Content != b.Content {
		t.Fatalf("retry: %+v", d)
	}
	b2 := b
	b2.Content = "changed"
	if _, err := s.RecordBroadcast(ctx, b2, nil); !errs.IsKeyReused(err) || errs.FieldOf(err) != "broadcast_id" {
		t.Fatalf("the same id with other content: %v", err)
	}
	// A late joiner gets it through DeliverBroadcast; the others are reported as already delivered, in order.
	late := mkMysis(t, s)
	d = must[memory.Delivery](t)(s.DeliverBroadcast(ctx, b.ID, []string{late.ID, ms[2].ID, late.ID}))
	if d.Delivered != 1 || d.AlreadyDelivered != 1 || len(d.Memories) != 2 || d.Memories[0].MysisID != late.ID || d.Memories[1].MysisID != ms[2].ID {
		t.Fatalf("deliver: %+v", d)
	}
	if d.Memories[0].Seq != 1 || d.Memories[0].Turn != 1 {
		t.Fatalf("late joiner row: %+v", d.Memories[0])
	}
	_, err := s.DeliverBroadcast(ctx, memory.NewID(), []string{late.ID})
	wantKind(t, err, errs.NotFound, "")
	_, err = s.DeliverBroadcast(ctx, b.ID, []string{memory.NewID()})
	wantKind(t, err, errs.NotFound, "")
	_, err = s.RecordBroadcast(ctx, memory.Broadcast{Content: "x"}, []string{memory.NewID()})
	wantKind(t, err, errs.NotFound, "")

	// Deliveries racing appends to the same mysis keep its seq gapless.
	target := ms[3]
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if _, err := s.RecordBroadcast(ctx, memory.Broadcast{Content: fmt.Sprintf("wave %d", i)}, nil); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if _, err := s.AppendMemories(ctx, target.ID, []memory.NewMemory{assistant("busy"), assistant("busy")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, target.ID, 1, 0, 1000))
	for i, r := range all {
		if r.Seq != int64(i+1) {
			t.Fatalf("seq gap at %d: %d", i, r.Seq)
		}
	}
	if len(all) != 1+10+20 {
		t.Fatalf("%d rows", len(all))
	}
}

// statementCounter is a pgx tracer that counts the statements a pool sends, batched or not.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.n.Add(1)
}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// A broadcast's statements do not grow with its targets: the deliveries to 1000 myses are written by as many
// statements as those to 10 (one INSERT … SELECT over the targets), counted by a tracer on the store's own pool.
func TestBroadcastToManyTargetsIsOneStatement(t *testing.T) {
	ctx := context.Background()
	_, p := freshStore(t) // migrated
	cfg, err := pgxpool.ParseConfig(p.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	counter := &statementCounter{}
	cfg.ConnConfig.Tracer = counter
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	s := newSvcStore(traced, testBox(t))
	addMyses := func(n int) {
		if _, err := p.Exec(ctx, `INSERT INTO myses (id, name, provider) SELECT gen_random_uuid(), 'bulk-' || gen_random_uuid(), 'autopilot' FROM generate_series(1, $1) g`, n); err != nil {
			t.Fatal(err)
		}
	}
	broadcast := func(want int) int64 {
		before := counter.n.Load()
		d := must[memory.Delivery](t)(s.RecordBroadcast(ctx, memory.Broadcast{Content: fmt.Sprintf("all %d, report in", want)}, nil))
		if d.Delivered != want {
			t.Fatalf("delivered %d, want %d", d.Delivered, want)
		}
		return counter.n.Load() - before
	}
	addMyses(10)
	few := broadcast(10)
	addMyses(990)
	many := broadcast(1000)
	t.Logf("statements: %d for 10 targets, %d for 1000", few, many)
	if few == 0 || many != few {
		t.Fatalf("a broadcast to 1000 myses sent %d statements, one to 10 sent %d: the count must not grow with the targets", many, few)
	}
}

// msgHits is must for SearchMessages: the hits of a search that must succeed.
func msgHits(t testing.TB) func(memory.MessageHits, error) []memory.MemoryHit {
	return func(r memory.MessageHits, err error) []memory.MemoryHit {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r.Hits
	}
}

// countTerms folds every queued memory into the term counts, as the indexer's next pass would.
func countTerms(t testing.TB, s *svcStore) {
	t.Helper()
	if _, err := s.Store.CountAllTerms(context.Background()); err != nil {
		t.Fatal(err)
	}
}
