package memory_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
	"github.com/zoeaswarm/zoea/services/memory/internal/secretbox"
)

// The Service is tested over the real store (pgstore on a fresh database): its contract is that bad input is
// refused with the API field named before anything reaches storage, and that what does reach it is normalised.

func newService(t *testing.T, opts ...memory.ServiceOption) *memory.Service {
	t.Helper()
	ctx := context.Background()
	p, err := pgutil.Open(ctx, pgtest.New(t), "zoea-test", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := migrations.Up(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return memory.NewService(pgstore.New(p, box), opts...)
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	if !errs.Is(err, errs.Invalid) {
		t.Fatalf("want Invalid on %q, got %v", field, err)
	}
	if got := errs.FieldOf(err); got != field {
		t.Fatalf("want Invalid on %q, got field %q: %v", field, got, err)
	}
}

func mkMysis(t *testing.T, s *memory.Service, name string) memory.Mysis {
	t.Helper()
	m, err := s.CreateMysis(context.Background(), memory.NewMysis{
		Name: name, Provider: "ollama", Model: "qwen3:8b", Temperature: 0.7, SystemPrompt: "You are a mysis.",
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func user(content string) memory.NewMemory {
	return memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceDirect, Content: content}
}

func assistant(content string, calls ...memory.ToolCall) memory.NewMemory {
	return memory.NewMemory{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: content, ToolCalls: calls}
}

func llmCall(id string, prompt int64) *memory.LlmCall {
	return &memory.LlmCall{CallID: id, Provider: "openai", Model: "gpt-x", PromptTokens: prompt, CompletionTokens: 1}
}

// TestServiceRejectsBadInputNamingTheField: every operation's bad input fails with Invalid naming the API field,
// and nothing is written.
func TestServiceRejectsBadInputNamingTheField(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	m := mkMysis(t, s, "validated")
	neg := int64(-1)
	bad := "Open AI"
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	failed := *llmCall(memory.NewID(), 0)
	for _, c := range []struct {
		name  string
		call  func() error
		field string
	}{
		// Memory checks only the provider name's shape; which providers exist and need a model is the runner's rule.
		{"create: provider", func() error {
			_, err := s.CreateMysis(ctx, memory.NewMysis{SystemPrompt: "You are a mysis.", Name: "x", Provider: "Open AI"})
			return err
		}, "provider"},
		{"create: temperature", func() error {
			_, err := s.CreateMysis(ctx, memory.NewMysis{SystemPrompt: "You are a mysis.", Name: "x", Provider: "autopilot", Temperature: 3})
			return err
		}, "temperature"},
		{"create: name", func() error {
			_, err := s.CreateMysis(ctx, memory.NewMysis{SystemPrompt: "You are a mysis.", Provider: "autopilot"})
			return err
		}, "name"},
		{"create: system prompt", func() error {
			_, err := s.CreateMysis(ctx, memory.NewMysis{SystemPrompt: " ", Name: "x", Provider: "autopilot"})
			return err
		}, "system_prompt"},
		{"get: id", func() error { _, err := s.GetMysis(ctx, "not-a-uuid"); return err }, "mysis_id"},
		{"get by name: empty", func() error { _, err := s.GetMysisByName(ctx, ""); return err }, "name"},
		{"get by name: NUL", func() error { _, err := s.GetMysisByName(ctx, "a\x00"); return err }, "name"},
		{"list: page size", func() error { _, _, err := s.ListMyses(ctx, memory.ListFilter{PageSize: -1}); return err }, "page_size"},
		{"list: state", func() error { _, _, err := s.ListMyses(ctx, memory.ListFilter{State: "asleep"}); return err }, "state"},
		{"update: id", func() error { _, err := s.UpdateMysisConfig(ctx, "", memory.ConfigPatch{}); return err }, "mysis_id"},
		{"update: provider", func() error {
			_, err := s.UpdateMysisConfig(ctx, m.ID, memory.ConfigPatch{Provider: &bad})
			return err
		}, "provider"},
		{"state: required", func() error { _, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{}); return err }, "state"},
		{"state: expected", func() error {
			_, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateIdle, Expected: "asleep"})
			return err
		}, "expected_state"},
		{"state: encouragement", func() error {
			n := int32(-1)
			_, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateIdle, EncouragementCount: &n})
			return err
		}, "encouragement_count"},
		{"delete: id", func() error { return s.DeleteMysis(ctx, "x") }, "mysis_id"},
		{"append: id", func() error { _, err := s.AppendMemories(ctx, "x", []memory.NewMemory{user("hi")}); return err }, "mysis_id"},
		{"append: call arguments on a user row", func() error {
			bad := user("hi")
			bad.CallArguments = "{}"
			_, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("ok"), bad})
			return err
		}, "memories[1].call_arguments_json"},
		{"append: llm call tokens", func() error {
			a := assistant("ok")
			a.LlmCall = llmCall(memory.NewID(), -1)
			_, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{a})
			return err
		}, "memories[0].llm_call.prompt_tokens"},
		{"append: llm call on a user row", func() error {
			u := user("x")
			u.LlmCall = llmCall(memory.NewID(), 1)
			_, err := s.AppendMemories(ctx, m.ID, []memory.NewMemory{u})
			return err
		}, "memories[0].llm_call"},
		{"append if: negative seq", func() error {
			_, err := s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{user("x")}, memory.AppendCondition{IfNoPromptAfterSeq: &neg})
			return err
		}, "if_no_prompt_after_seq"},
		{"append if: state", func() error {
			_, err := s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{user("x")}, memory.AppendCondition{State: &memory.StateChange{}})
			return err
		}, "state_change.state"},
		{"append if: encouragement", func() error {
			n := int32(-2)
			sc := &memory.StateChange{State: memory.StateRunning, EncouragementCount: &n}
			_, err := s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{user("x")}, memory.AppendCondition{State: sc})
			return err
		}, "state_change.encouragement_count"},
		{"recent: limit", func() error { _, err := s.ListRecentMemories(ctx, m.ID, -1); return err }, "limit"},
		{"range: from", func() error { _, err := s.ListMemoriesRange(ctx, m.ID, -1, 0, 0); return err }, "from_seq"},
		{"range: to below from", func() error { _, err := s.ListMemoriesRange(ctx, m.ID, 5, 2, 0); return err }, "to_seq"},
		{"range: limit", func() error { _, err := s.ListMemoriesRange(ctx, m.ID, 1, 0, -3); return err }, "limit"},
		{"get memory: id", func() error { _, err := s.GetMemory(ctx, m.ID, 0); return err }, "memory_id"},
		{"window: id", func() error { _, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: "x"}); return err }, "mysis_id"},
		{"window: window", func() error {
			_, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, Window: -1})
			return err
		}, "window"},
		{"window: max result bytes", func() error {
			_, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, MaxResultBytes: 10})
			return err
		}, "max_result_bytes"},
		{"window: recent from", func() error {
			_, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, RecentFrom: -1})
			return err
		}, "recent_from_seq"},
		{"broadcast: id", func() error {
			_, err := s.RecordBroadcast(ctx, memory.Broadcast{ID: "x", Content: "go"}, nil)
			return err
		}, "broadcast_id"},
		{"broadcast: sender", func() error {
			_, err := s.RecordBroadcast(ctx, memory.Broadcast{SenderID: "x", Content: "go"}, nil)
			return err
		}, "sender_id"},
		{"broadcast: content", func() error { _, err := s.RecordBroadcast(ctx, memory.Broadcast{Content: " "}, nil); return err }, "content"},
		{"broadcast: target", func() error {
			_, err := s.RecordBroadcast(ctx, memory.Broadcast{Content: "go"}, []string{m.ID, "x"})
			return err
		}, "target_mysis_ids[1]"},
		{"deliver: id", func() error { _, err := s.DeliverBroadcast(ctx, "", []string{m.ID}); return err }, "broadcast_id"},
		{"deliver: target", func() error {
			_, err := s.DeliverBroadcast(ctx, memory.NewID(), []string{m.ID, "nope"})
			return err
		}, "mysis_ids[1]"},
		{"deliver: no targets", func() error { _, err := s.DeliverBroadcast(ctx, memory.NewID(), nil); return err }, "mysis_ids"},
		{"search: blank query", func() error {
			_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "   "})
			return err
		}, "query"},
		{"search: mysis", func() error { _, err := s.SearchMessages(ctx, memory.SearchQuery{Text: "iron"}); return err }, "mysis_id"},
		{"search: 10 KB query", func() error {
			_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: strings.Repeat("iron ", 2048)})
			return err
		}, "query"},
		{"search: NUL", func() error {
			_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "iron\x00ore"})
			return err
		}, "query"},
		{"search: invalid UTF-8", func() error {
			_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "iron \xff\xfe"})
			return err
		}, "query"},
		{"search reasoning: NUL", func() error {
			_, err := s.SearchReasoning(ctx, memory.SearchQuery{MysisID: m.ID, Text: "\x00"})
			return err
		}, "query"},
		{"search broadcasts: invalid UTF-8", func() error { _, err := s.SearchBroadcasts(ctx, memory.SearchQuery{Text: "\xc3"}); return err }, "query"},
		{"search: limit", func() error {
			_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "iron", Limit: -5})
			return err
		}, "limit"},
		{"search: order", func() error {
			_, err := s.SearchMessages(ctx, memory.SearchQuery{MysisID: m.ID, Text: "iron", Order: memory.SearchOrder(7)})
			return err
		}, "order"},
		{"search reasoning: query", func() error { _, err := s.SearchReasoning(ctx, memory.SearchQuery{MysisID: m.ID}); return err }, "query"},
		{"search broadcasts: query", func() error { _, err := s.SearchBroadcasts(ctx, memory.SearchQuery{}); return err }, "query"},
		{"account: username", func() error {
			_, err := s.CreateAccount(ctx, memory.Account{Username: "ab", Password: "x"})
			return err
		}, "username"},
		{"account: password", func() error {
			_, err := s.CreateAccount(ctx, memory.Account{Username: "pilot_c"})
			return err
		}, "password"},
		{"account: mysis", func() error {
			_, err := s.CreateAccount(ctx, memory.Account{Username: "pilot_c", Password: "x", MysisID: "x"})
			return err
		}, "mysis_id"},
		{"claim: id", func() error { _, err := s.ClaimAccount(ctx, ""); return err }, "mysis_id"},
		{"account for: id", func() error { _, err := s.GetAccountForMysis(ctx, "x"); return err }, "mysis_id"},
		{"release: id", func() error { _, err := s.ReleaseAccount(ctx, "x"); return err }, "mysis_id"},
		{"calls: none", func() error { _, err := s.RecordLlmCalls(ctx, m.ID, nil); return err }, "calls"},
		{"calls: repeated id", func() error {
			_, err := s.RecordLlmCalls(ctx, m.ID, []memory.LlmCall{failed, failed})
			return err
		}, "calls[1].call_id"},
		{"calls: malformed id", func() error {
			_, err := s.RecordLlmCalls(ctx, m.ID, []memory.LlmCall{*llmCall("not-a-uuid", 1)})
			return err
		}, "calls[0].call_id"},
		{"usage: to not after from", func() error { _, err := s.GetUsage(ctx, memory.UsageQuery{From: t0, To: t0}); return err }, "to"},
		{"usage: mysis id", func() error {
			_, err := s.GetUsage(ctx, memory.UsageQuery{MysisIDs: []string{m.ID, "x"}})
			return err
		}, "mysis_ids[1]"},
		{"usage: too many myses", func() error {
			_, err := s.GetUsage(ctx, memory.UsageQuery{MysisIDs: make([]string, memory.MaxUsageMyses+1)})
			return err
		}, "mysis_ids"},
		{"usage: page size", func() error { _, err := s.GetUsage(ctx, memory.UsageQuery{PageSize: -1}); return err }, "page_size"},
		{"spend: id", func() error { _, err := s.GetSpend(ctx, "x", t0); return err }, "mysis_id"},
		{"limits: repeated pair", func() error {
			_, err := s.SetSpendLimits(ctx, m.ID, []memory.SpendLimit{{Window: memory.WindowDay, Unit: memory.UnitTokens, Amount: 1}, {Window: memory.WindowDay, Unit: memory.UnitTokens, Amount: 2}})
			return err
		}, "limits[1].window"},
		{"limits: unknown window", func() error {
			_, err := s.SetSpendLimits(ctx, m.ID, []memory.SpendLimit{{Window: 9, Unit: memory.UnitTokens, Amount: 1}})
			return err
		}, "limits[0].window"},
	} {
		t.Run(c.name, func(t *testing.T) { wantField(t, c.call(), c.field) })
	}
	cur, err := s.GetMysis(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.LastSeq != 0 || cur.State != memory.StateIdle || cur.Provider != "ollama" {
		t.Fatalf("rejected calls changed the mysis: %+v", cur)
	}
	if u, err := s.GetUsage(ctx, memory.UsageQuery{}); err != nil || u.Total.Calls != 0 {
		t.Fatalf("rejected calls were recorded: %+v %v", u.Total, err)
	}
}

// TestAppendRejectsWhatPostgresCannotStore: the Service refuses text Postgres cannot store and malformed tool-call
// shapes with the field named, and writes nothing.
func TestAppendRejectsWhatPostgresCannotStore(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	m := mkMysis(t, s, "unstorable")
	cases := []struct {
		name  string
		batch []memory.NewMemory
		field string
	}{
		{"nul content", []memory.NewMemory{user("ok"), user("a\x00b")}, "memories[1].content"},
		{"invalid utf8", []memory.NewMemory{user("\xff\xfe")}, "memories[0].content"},
		{"nul reasoning", []memory.NewMemory{{Role: memory.RoleAssistant, Source: memory.SourceLLM, Reasoning: "\x00"}}, "memories[0].reasoning"},
		{"args not object", []memory.NewMemory{assistant("", memory.ToolCall{ID: "1", Name: "x", Arguments: `[1]`})}, "memories[0].tool_calls[0].arguments_json"},
		{"args not json", []memory.NewMemory{assistant("", memory.ToolCall{ID: "1", Name: "x", Arguments: `{"a":}`})}, "memories[0].tool_calls[0].arguments_json"},
		{"args nul escape", []memory.NewMemory{assistant("", memory.ToolCall{ID: "1", Name: "x", Arguments: "{\"a\":\"\x00\"}"})}, "memories[0].tool_calls[0].arguments_json"},
		{"dup call ids", []memory.NewMemory{assistant("", memory.ToolCall{ID: "1", Name: "x", Arguments: `{}`}, memory.ToolCall{ID: "1", Name: "y", Arguments: `{}`})}, "memories[0].tool_calls[1].id"},
		{"calls on user", []memory.NewMemory{{Role: memory.RoleUser, Source: memory.SourceDirect, ToolCalls: []memory.ToolCall{{ID: "1", Name: "x", Arguments: "{}"}}}}, "memories[0].tool_calls"},
		{"tool without call id", []memory.NewMemory{{Role: memory.RoleTool, Source: memory.SourceTool}}, "memories[0].tool_call_id"},
		{"no role", []memory.NewMemory{{Source: memory.SourceTool}}, "memories[0].role"},
		{"no source", []memory.NewMemory{{Role: memory.RoleUser}}, "memories[0].source"},
		{"dup keys", []memory.NewMemory{{Role: memory.RoleUser, Source: memory.SourceDirect, IdempotencyKey: "k"}, {Role: memory.RoleUser, Source: memory.SourceDirect, IdempotencyKey: "k"}}, "memories[1].idempotency_key"},
		{"empty", nil, "memories"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.AppendMemories(ctx, m.ID, c.batch)
			wantField(t, err, c.field)
		})
	}
	cur, err := s.GetMysis(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.LastSeq != 0 {
		t.Fatalf("rejected batches wrote rows: last_seq %d", cur.LastSeq)
	}
}

func TestComposeWindowValidation(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	m := mkMysis(t, s, "window")
	for _, c := range []struct {
		q     memory.WindowQuery
		field string
	}{
		{memory.WindowQuery{MysisID: m.ID, CarryLimit: -1}, "carry_limit"},
		{memory.WindowQuery{MysisID: m.ID, ReplyLimit: -2}, "reply_limit"},
		{memory.WindowQuery{MysisID: m.ID, MaxTurnRows: -3}, "max_turn_rows"},
		{memory.WindowQuery{MysisID: m.ID, PinnedTools: []string{"login", ""}}, "pinned_tools[1]"},
		{memory.WindowQuery{MysisID: m.ID, SnapshotTools: []string{strings.Repeat("x", 300)}}, "snapshot_tools[0]"},
		{memory.WindowQuery{MysisID: m.ID, SnapshotTools: make([]string, 101)}, "snapshot_tools"},
	} {
		_, err := s.GetComposeWindow(ctx, c.q)
		wantField(t, err, c.field)
	}
	// Large values are lowered to the maximum, like every other limit.
	if _, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID, CarryLimit: 5000, ReplyLimit: 5000, MaxTurnRows: 1 << 30}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceNormalises: what reaches the store is canonical and defaulted, so the store can use it as is.
func TestServiceNormalises(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 42, 0, 0, time.UTC)
	s := newService(t, memory.WithClock(func() time.Time { return now }))
	m := mkMysis(t, s, "normal")

	// Ids in any case find the row (the store compares canonical lower-case text).
	if got, err := s.GetMysis(ctx, strings.ToUpper(m.ID)); err != nil || got.ID != m.ID {
		t.Fatalf("upper-case id: %+v %v", got, err)
	}
	for i := range 25 {
		if _, err := s.AppendMemories(ctx, strings.ToUpper(m.ID), []memory.NewMemory{user(strings.Repeat("x", i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	// Limit 0 is the default, not "nothing"; too large is capped.
	if rs, err := s.ListRecentMemories(ctx, m.ID, 0); err != nil || len(rs) != memory.DefaultWindow {
		t.Fatalf("default recent: %d %v", len(rs), err)
	}
	if rs, err := s.ListMemoriesRange(ctx, m.ID, 1, 0, 1<<30); err != nil || len(rs) != 25 {
		t.Fatalf("capped range: %d %v", len(rs), err)
	}
	if w, err := s.GetComposeWindow(ctx, memory.WindowQuery{MysisID: m.ID}); err != nil || len(w.Memories) != memory.DefaultWindow {
		t.Fatalf("default window: %d %v", len(w.Memories), err)
	}
	ms, _, err := s.ListMyses(ctx, memory.ListFilter{})
	if err != nil || len(ms) != 1 {
		t.Fatalf("default page: %d %v", len(ms), err)
	}
	// Duplicate targets are delivered once; a broadcast without an id gets one.
	d, err := s.RecordBroadcast(ctx, memory.Broadcast{Content: "regroup"}, []string{m.ID, strings.ToUpper(m.ID)})
	if err != nil || d.Delivered != 1 || len(d.Memories) != 1 || d.Broadcast.ID == "" {
		t.Fatalf("broadcast: %+v %v", d, err)
	}
	// A run of exclusion operators is bounded before Postgres parses it.
	if _, err := s.SearchBroadcasts(ctx, memory.SearchQuery{Text: strings.Repeat("-", 40) + "regroup"}); err != nil {
		t.Fatalf("bounded operators: %v", err)
	}
	// GetSpend without a time counts the windows containing the Service's clock.
	sp, err := s.GetSpend(ctx, m.ID, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Mysis) != 3 || !sp.Mysis[0].Start.Equal(now.Truncate(time.Hour)) || !sp.Mysis[1].Start.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("spend windows: %+v", sp.Mysis)
	}
}

// TestUpdateConfigValidatesTheResult: a patch is validated together with the stored configuration, and a refused
// patch changes nothing.
func TestUpdateConfigValidatesTheResult(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	m := mkMysis(t, s, "patched")
	hot, blank := 2.5, "  "
	if _, err := s.UpdateMysisConfig(ctx, m.ID, memory.ConfigPatch{Temperature: &hot}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "temperature" {
		t.Fatalf("temperature: %v", err)
	}
	if _, err := s.UpdateMysisConfig(ctx, m.ID, memory.ConfigPatch{SystemPrompt: &blank}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "system_prompt" {
		t.Fatalf("system prompt: %v", err)
	}
	if _, err := s.UpdateMysisConfig(ctx, memory.NewID(), memory.ConfigPatch{}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown mysis: %v", err)
	}
	model := "llama3.2"
	up, err := s.UpdateMysisConfig(ctx, m.ID, memory.ConfigPatch{Model: &model})
	if err != nil || up.Model != model || up.Temperature != 0.7 || up.SystemPrompt != "You are a mysis." {
		t.Fatalf("valid patch: %+v %v", up, err)
	}
}
