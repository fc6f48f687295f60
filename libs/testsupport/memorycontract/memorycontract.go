// Package memorycontract is the one contract suite for the memory API (zoea.memory.v1.MemoryService). The real
// service runs it against Postgres, and every fake a test uses in its place runs it too, so a fake cannot drift
// from what it stands in for: idempotent, gapless appends, recent-window reads, compare-and-set state changes,
// exactly-once broadcast delivery, the compose window (recent part, carried rows, mission), configuration changes
// and deletion, the account pool, full-text search, LLM-call usage and spend limits, and InvalidArgument statuses
// that name the field for bad input: every RPC of the service.
//
// A fake that implements only part of the API runs the subset it claims:
//
//	memorycontract.Run(t, dial, memorycontract.Myses, memorycontract.Append, memorycontract.Broadcast)
//
// The suite only ever touches myses and accounts it creates (names carry a random suffix; a claim may take any free
// account, and the cases assume nothing about which), so it can share a server and a database with other tests —
// except Usage, whose calls add to the swarm's spend counts.
package memorycontract

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
)

// Capability is a group of RPCs a memory implementation claims to implement.
type Capability int

const (
	// Myses is CreateMysis, GetMysis, GetMysisByName and ListMyses.
	Myses Capability = iota
	// Append is AppendMemories and RecordLlmCalls' discard flag (needs Myses to create the myses it writes to).
	Append
	// Recent is ListRecentMemories, ListMemoriesRange and GetMemory (needs Append).
	Recent
	// State is SetMysisState (needs Myses).
	State
	// Broadcast is RecordBroadcast and DeliverBroadcast (needs Append, whose seq shows the delivered rows).
	Broadcast
	// ComposeWindow is GetComposeWindow, v1 and v2 (needs Append, and Broadcast for the missions it reads).
	ComposeWindow
	// Config is UpdateMysisConfig and DeleteMysis (needs Append and Recent, which show a deleted mysis's memories
	// are gone).
	Config
	// Accounts is the account pool: CreateAccount, ClaimAccount, GetAccountForMysis and ReleaseAccount (needs Myses).
	Accounts
	// Search is SearchMessages, SearchReasoning and SearchBroadcasts (needs Append and Broadcast).
	Search
	// Usage is RecordLlmCalls, GetUsage, GetSpend and SetSpendLimits (needs Append, whose llm_call is usage too).
	// Its cases add to the swarm's spend counts (at a time long past, but the total window counts them): give the
	// suite a database no test that checks those counts shares.
	Usage
)

// All is every capability: what the real service claims.
var All = []Capability{Myses, Append, Recent, State, Broadcast, ComposeWindow, Config, Accounts, Search, Usage}

func (c Capability) String() string {
	switch c {
	case Myses:
		return "Myses"
	case Append:
		return "Append"
	case Recent:
		return "Recent"
	case State:
		return "State"
	case Broadcast:
		return "Broadcast"
	case ComposeWindow:
		return "ComposeWindow"
	case Config:
		return "Config"
	case Accounts:
		return "Accounts"
	case Search:
		return "Search"
	case Usage:
		return "Usage"
	}
	return fmt.Sprintf("Capability(%d)", int(c))
}

var suites = map[Capability][]struct {
	name string
	run  func(t *testing.T, c memoryv1.MemoryServiceClient)
}{
	Myses: {
		{"CreateAndGet", testCreateAndGet},
		{"CreateRejects", testCreateRejects},
		{"GetRejects", testGetRejects},
		{"ListPages", testListPages},
	},
	Append: {
		{"GaplessSeq", testGaplessSeq},
		{"IdempotencyKeys", testIdempotencyKeys},
		{"KeyReuse", testKeyReuse},
		{"AppendRejects", testAppendRejects},
		{"ReplyLimits", testReplyLimits},
		{"ReplyDiscarded", testReplyDiscarded},
	},
	Recent: {{"RecentWindow", testRecentWindow}, {"Range", testRange}, {"GetMemory", testGetMemory}},
	State:  {{"CompareAndSet", testCompareAndSet}},
	Broadcast: {
		{"ExactlyOnce", testBroadcastExactlyOnce},
		{"BroadcastRejects", testBroadcastRejects},
		{"Deliver", testDeliverBroadcast},
		{"KeyReuse", testBroadcastKeyReuse},
	},
	ComposeWindow: {
		{"Empty", testWindowEmpty},
		{"V1Newest", testWindowV1},
		{"RecentAndCarried", testWindowRecentAndCarried},
		{"CarryLimitAndSnapshotTools", testWindowCarryLimitAndSnapshots},
		{"PinnedTools", testWindowPinned},
		{"RecentFromSeq", testWindowRecentFrom},
		{"TurnTruncated", testWindowTruncated},
		{"Missions", testWindowMissions},
		{"CutResults", testWindowCut},
		{"CarryKnown", testWindowCarryKnown},
		{"RecentKnown", testWindowRecentKnown},
		{"WindowRejects", testWindowRejects},
	},
	Config: {
		{"UpdateConfig", testUpdateConfig},
		{"UpdateConfigRejects", testUpdateConfigRejects},
		{"DeleteMysis", testDeleteMysis},
		{"DeleteRejects", testDeleteRejects},
	},
	Accounts: {
		{"CreateBound", testCreateBoundAccount},
		{"ClaimAndRelease", testClaimAndRelease},
		{"AccountRejects", testAccountRejects},
	},
	Search: {
		{"Messages", testSearchMessages},
		{"Reasoning", testSearchReasoning},
		{"Broadcasts", testSearchBroadcasts},
	},
	Usage: {
		{"RecordLlmCalls", testRecordLlmCalls},
		{"Usage", testUsage},
		{"Spend", testSpend},
		// Spend records a century ahead of every other case (its comment says why), so the order does not matter to it.
		{"TopRanks", testUsageTopRanks},
		{"TopRejects", testUsageTopRejects},
	},
}

// Run runs the suites of the given capabilities (All when none is given). dial returns a client of the
// implementation under test; it is called once per test case, so a fake may start afresh for each.
func Run(t *testing.T, dial func(t *testing.T) memoryv1.MemoryServiceClient, caps ...Capability) {
	t.Helper()
	if len(caps) == 0 {
		caps = All
	}
	for _, c := range caps {
		cases, ok := suites[c]
		if !ok {
			t.Fatalf("memorycontract: unknown capability %v", c)
		}
		for _, tc := range cases {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) { tc.run(t, dial(t)) })
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// uniqueName is a valid mysis name no other test uses.
func uniqueName(prefix string) string { return prefix + "-" + uuid.NewString()[:8] }

func newMysis(t *testing.T, c memoryv1.MemoryServiceClient, name string) *memoryv1.Mysis {
	t.Helper()
	resp, err := c.CreateMysis(ctxT(t), &memoryv1.CreateMysisRequest{
		Name: name, Provider: memoryrules.AutopilotProvider, SystemPrompt: "You are a mysis.",
	})
	if err != nil {
		t.Fatalf("CreateMysis(%q): %v", name, err)
	}
	return resp.GetMysis()
}

// wantInvalid checks that err is InvalidArgument naming field in its BadRequest details.
func wantInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("%s: %v, want InvalidArgument", what, err)
		return
	}
	if got := fieldOf(err); got != field {
		t.Errorf("%s: field %q, want %q (%v)", what, got, field, err)
	}
}

// fieldOf returns the first field violation of a status's BadRequest details.
func fieldOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	return ""
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: %v, want %v", what, err, code)
	}
}

func testCreateAndGet(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	name := uniqueName("contract")
	m := newMysis(t, c, name)
	if _, err := uuid.Parse(m.GetId()); err != nil || m.GetName() != name || m.GetProvider() != memoryrules.AutopilotProvider {
		t.Fatalf("created = %v", m)
	}
	if m.GetState() != memoryv1.MysisState_MYSIS_STATE_IDLE || m.GetLastSeq() != 0 {
		t.Errorf("a new mysis: state %v, last_seq %d; want idle and 0", m.GetState(), m.GetLastSeq())
	}
	got, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: m.GetId()})
	if err != nil || got.GetMysis().GetId() != m.GetId() || got.GetMysis().GetName() != name {
		t.Errorf("GetMysis = %v, %v", got.GetMysis(), err)
	}
	byName, err := c.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: name})
	if err != nil || byName.GetMysis().GetId() != m.GetId() {
		t.Errorf("GetMysisByName = %v, %v", byName.GetMysis(), err)
	}
	_, err = c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: name, Provider: memoryrules.AutopilotProvider, SystemPrompt: "again"})
	wantCode(t, "a second mysis with the same name", err, codes.AlreadyExists)
}

func testCreateRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	_, err := c.CreateMysis(ctxT(t), &memoryv1.CreateMysisRequest{Provider: memoryrules.AutopilotProvider, SystemPrompt: "x"})
	wantInvalid(t, "CreateMysis without a name", err, "name")
	_, err = c.CreateMysis(ctxT(t), &memoryv1.CreateMysisRequest{Name: uniqueName("badprov"), Provider: "Open AI", SystemPrompt: "x"})
	wantInvalid(t, "CreateMysis with a provider that is no identifier", err, "provider")
	_, err = c.CreateMysis(ctxT(t), &memoryv1.CreateMysisRequest{Name: uniqueName("noprompt"), Provider: memoryrules.AutopilotProvider, SystemPrompt: " "})
	wantInvalid(t, "CreateMysis with a blank system prompt", err, "system_prompt")
}

func testGetRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	_, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: "not-a-uuid"})
	wantInvalid(t, "GetMysis with a malformed id", err, "mysis_id")
	_, err = c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: uuid.NewString()})
	wantCode(t, "GetMysis of an unknown id", err, codes.NotFound)
	_, err = c.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: uniqueName("nobody")})
	wantCode(t, "GetMysisByName of an unknown name", err, codes.NotFound)
}

func testListPages(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	prefix := uniqueName("list")
	want := map[string]string{}
	for _, s := range []string{"c", "a", "b"} {
		m := newMysis(t, c, prefix+"-"+s)
		want[m.GetId()] = m.GetName()
	}
	var order []string
	seen := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatal("ListMyses never ends")
		}
		resp, err := c.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetMyses()) > 2 {
			t.Fatalf("page of %d myses for page_size 2", len(resp.GetMyses()))
		}
		for _, m := range resp.GetMyses() {
			if seen[m.GetId()] {
				t.Fatalf("mysis %s listed twice", m.GetName())
			}
			seen[m.GetId()] = true
			if _, ok := want[m.GetId()]; ok {
				order = append(order, m.GetName())
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{prefix + "-a", prefix + "-b", prefix + "-c"}) {
		t.Errorf("listed %v, want the three in name order", order)
	}
}

func userMemory(content, key string) *memoryv1.NewMemory {
	return &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: content, IdempotencyKey: key}
}

func appendOK(t *testing.T, c memoryv1.MemoryServiceClient, mysisID string, ms ...*memoryv1.NewMemory) []*memoryv1.Memory {
	t.Helper()
	resp, err := c.AppendMemories(ctxT(t), &memoryv1.AppendMemoriesRequest{MysisId: mysisID, Memories: ms})
	if err != nil {
		t.Fatalf("AppendMemories: %v", err)
	}
	if len(resp.GetMemories()) != len(ms) {
		t.Fatalf("AppendMemories returned %d rows for %d memories", len(resp.GetMemories()), len(ms))
	}
	return resp.GetMemories()
}

func seqs(ms []*memoryv1.Memory) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.GetSeq()
	}
	return out
}

func testGaplessSeq(t *testing.T, c memoryv1.MemoryServiceClient) {
	m := newMysis(t, c, uniqueName("seq"))
	first := appendOK(t, c, m.GetId(), userMemory("Mine iron ore.", ""),
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "On my way."})
	second := appendOK(t, c, m.GetId(), userMemory("Status?", ""))
	if got := seqs(append(first, second...)); fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("seqs %v, want [1 2 3]: per mysis, from 1, without gaps", got)
	}
	for _, r := range append(first, second...) {
		if r.GetMysisId() != m.GetId() || r.GetId() == 0 {
			t.Errorf("row %v: want the mysis id and a row id", r)
		}
	}
	if first[0].GetContent() != "Mine iron ore." || first[1].GetRole() != memoryv1.Role_ROLE_ASSISTANT {
		t.Errorf("rows = %v", first)
	}
	// Another mysis has its own sequence.
	other := newMysis(t, c, uniqueName("seq"))
	if got := seqs(appendOK(t, c, other.GetId(), userMemory("hello", ""))); fmt.Sprint(got) != "[1]" {
		t.Errorf("another mysis's first seq %v, want [1]", got)
	}
	got, err := c.GetMysis(ctxT(t), &memoryv1.GetMysisRequest{MysisId: m.GetId()})
	if err != nil || got.GetMysis().GetLastSeq() != 3 {
		t.Errorf("last_seq after three rows = %d, %v; want 3", got.GetMysis().GetLastSeq(), err)
	}
}

func testIdempotencyKeys(t *testing.T, c memoryv1.MemoryServiceClient) {
	m := newMysis(t, c, uniqueName("idem"))
	req := []*memoryv1.NewMemory{userMemory("Dock at the station.", "k1"), userMemory("Then sell the ore.", "k2")}
	first := appendOK(t, c, m.GetId(), req...)
	retry := appendOK(t, c, m.GetId(), req...)
	for i := range first {
		if retry[i].GetId() != first[i].GetId() || retry[i].GetSeq() != first[i].GetSeq() {
			t.Errorf("retry row %d = id %d seq %d, want the stored id %d seq %d", i, retry[i].GetId(), retry[i].GetSeq(), first[i].GetId(), first[i].GetSeq())
		}
	}
	// A retry wrote nothing: the next row follows directly.
	next := appendOK(t, c, m.GetId(), userMemory("Report back.", "k3"))
	if next[0].GetSeq() != 3 {
		t.Errorf("seq after a retried append = %d, want 3 (the retry must not write)", next[0].GetSeq())
	}
	// A key names one row per mysis: another mysis may use it too.
	other := newMysis(t, c, uniqueName("idem"))
	if o := appendOK(t, c, other.GetId(), userMemory("Dock at the station.", "k1")); o[0].GetSeq() != 1 || o[0].GetId() == first[0].GetId() {
		t.Errorf("the same key on another mysis returned %v", o[0])
	}
}

func testAppendRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("bad"))
	_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId()})
	wantInvalid(t, "no memories", err, "memories")
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: []*memoryv1.NewMemory{userMemory("ok", ""), userMemory("nul\x00byte", "")}})
	wantInvalid(t, "a NUL byte in content", err, "memories[1].content")
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: []*memoryv1.NewMemory{{Source: memoryv1.Source_SOURCE_DIRECT, Content: "x"}}})
	wantInvalid(t, "no role", err, "memories[0].role")
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: "nope", Memories: []*memoryv1.NewMemory{userMemory("x", "")}})
	wantInvalid(t, "a malformed mysis id", err, "mysis_id")
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: uuid.NewString(), Memories: []*memoryv1.NewMemory{userMemory("x", "")}})
	wantCode(t, "an unknown mysis", err, codes.NotFound)
	// Rejected calls wrote nothing, not even the valid first row.
	if r := appendOK(t, c, m.GetId(), userMemory("first", "")); r[0].GetSeq() != 1 {
		t.Errorf("seq after rejected appends = %d, want 1", r[0].GetSeq())
	}
}

// testReplyLimits: a model's reply is held to chat.MaxReplyBytes — an assistant memory's content, reasoning and its
// calls' arguments (each and together), and a result's copy of its call's arguments — and refused beyond it naming
// the field; prompts and tool results keep the larger chat.MaxTextBytes (results are cut in the window instead).
func testReplyLimits(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("big"))
	asst := func(content, reasoning string, args ...string) *memoryv1.NewMemory {
		nm := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: content, Reasoning: reasoning}
		for i, a := range args {
			nm.ToolCalls = append(nm.ToolCalls, &memoryv1.ToolCall{Id: fmt.Sprintf("c%d", i), Name: "chat", ArgumentsJson: a})
		}
		return nm
	}
	// jsonOf is a JSON object text of exactly n bytes.
	jsonOf := func(n int) string { return `{"m":"` + strings.Repeat("x", n-8) + `"}` }
	limit := chat.MaxReplyBytes
	appendOK(t, c, m.GetId(), asst(strings.Repeat("x", limit), strings.Repeat("r", limit), jsonOf(limit/2), jsonOf(limit/2)))
	for _, tc := range []struct {
		what, field string
		mem         *memoryv1.NewMemory
	}{
		{"reply content over the limit", "memories[0].content", asst(strings.Repeat("x", limit+1), "")},
		{"1 MiB reply", "memories[0].content", asst(strings.Repeat("x", 1<<20), "")},
		{"reasoning over the limit", "memories[0].reasoning", asst("ok", strings.Repeat("r", limit+1))},
		{"one call's arguments over the limit", "memories[0].tool_calls[0].arguments_json", asst("", "", jsonOf(limit+1))},
		{"the calls' arguments together over the limit", "memories[0].tool_calls[1].arguments_json", asst("", "", jsonOf(limit/2), jsonOf(limit/2+1))},
		{"a result's copy of its call's arguments over the limit", "memories[0].call_arguments_json", &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL,
			Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c0", ToolName: "chat", Content: "ok", CallArgumentsJson: jsonOf(limit + 1)}},
	} {
		_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: []*memoryv1.NewMemory{tc.mem}})
		wantInvalid(t, tc.what, err, tc.field)
	}
	// A tool result (the game's text) is not a reply: 1 MiB is stored.
	appendOK(t, c, m.GetId(), &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c0", ToolName: "chat",
		Content: strings.Repeat("x", 1<<20), CallArgumentsJson: jsonOf(limit / 2)})
}

func testRecentWindow(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("recent"))
	for i := range 5 {
		appendOK(t, c, m.GetId(), userMemory(fmt.Sprintf("order %d", i+1), ""))
	}
	resp, err := c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: m.GetId(), Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(resp.GetMemories()); fmt.Sprint(got) != "[3 4 5]" {
		t.Errorf("recent 3 = seqs %v, want [3 4 5] (the newest, oldest first)", got)
	}
	all, err := c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: m.GetId(), Limit: 100})
	if err != nil || len(all.GetMemories()) != 5 || all.GetMemories()[0].GetContent() != "order 1" {
		t.Errorf("recent 100 = %v, %v; want all five, oldest first", all.GetMemories(), err)
	}
	_, err = c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: m.GetId(), Limit: -1})
	wantInvalid(t, "a negative limit", err, "limit")
	_, err = c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: "nope"})
	wantInvalid(t, "a malformed mysis id", err, "mysis_id")
}

func testCompareAndSet(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("state"))
	set := func(state, expected memoryv1.MysisState) (*memoryv1.SetMysisStateResponse, error) {
		return c.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: m.GetId(), State: state, ExpectedState: expected, Reason: "contract"})
	}
	resp, err := set(memoryv1.MysisState_MYSIS_STATE_RUNNING, memoryv1.MysisState_MYSIS_STATE_IDLE)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetPreviousState() != memoryv1.MysisState_MYSIS_STATE_IDLE || resp.GetMysis().GetState() != memoryv1.MysisState_MYSIS_STATE_RUNNING {
		t.Errorf("idle→running: previous %v, now %v", resp.GetPreviousState(), resp.GetMysis().GetState())
	}
	// The compare fails: the mysis is running, not idle, and stays running.
	_, err = set(memoryv1.MysisState_MYSIS_STATE_STOPPED, memoryv1.MysisState_MYSIS_STATE_IDLE)
	wantCode(t, "a state change whose expected state is stale", err, codes.FailedPrecondition)
	got, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: m.GetId()})
	if err != nil || got.GetMysis().GetState() != memoryv1.MysisState_MYSIS_STATE_RUNNING {
		t.Errorf("after a failed compare: %v, %v; want still running", got.GetMysis().GetState(), err)
	}
	// No expected state: unconditional.
	if resp, err := set(memoryv1.MysisState_MYSIS_STATE_STOPPED, memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED); err != nil ||
		resp.GetPreviousState() != memoryv1.MysisState_MYSIS_STATE_RUNNING {
		t.Errorf("unconditional change = %v, %v", resp, err)
	}
	_, err = set(memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED, memoryv1.MysisState_MYSIS_STATE_UNSPECIFIED)
	wantInvalid(t, "no state", err, "state")
	_, err = c.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: uuid.NewString(), State: memoryv1.MysisState_MYSIS_STATE_IDLE})
	wantCode(t, "an unknown mysis", err, codes.NotFound)
}

func testBroadcastExactlyOnce(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	a, b := newMysis(t, c, uniqueName("bc")), newMysis(t, c, uniqueName("bc"))
	bid := uuid.NewString()
	req := &memoryv1.RecordBroadcastRequest{BroadcastId: bid, Content: "Regroup at Sol.", TargetMysisIds: []string{a.GetId(), b.GetId()}}
	resp, err := c.RecordBroadcast(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetBroadcast().GetId() != bid || resp.GetDeliveredCount() != 2 || resp.GetAlreadyDeliveredCount() != 0 {
		t.Errorf("first record = %v", resp)
	}
	retry, err := c.RecordBroadcast(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if retry.GetBroadcast().GetId() != bid || retry.GetDeliveredCount() != 0 || retry.GetAlreadyDeliveredCount() != 2 {
		t.Errorf("retried record = %v; want nothing delivered again", retry)
	}
	// Each mysis got exactly one row: its next append is seq 2.
	for _, m := range []*memoryv1.Mysis{a, b} {
		if r := appendOK(t, c, m.GetId(), userMemory("after", "")); r[0].GetSeq() != 2 {
			t.Errorf("mysis %s: seq after the broadcast = %d, want 2 (one delivered row)", m.GetName(), r[0].GetSeq())
		}
	}
}

func testBroadcastRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("bcbad"))
	_, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{Content: "  ", TargetMysisIds: []string{m.GetId()}})
	wantInvalid(t, "blank content", err, "content")
	_, err = c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{BroadcastId: "nope", Content: "x", TargetMysisIds: []string{m.GetId()}})
	wantInvalid(t, "a malformed broadcast id", err, "broadcast_id")
	if r := appendOK(t, c, m.GetId(), userMemory("after", "")); r[0].GetSeq() != 1 {
		t.Errorf("seq after rejected broadcasts = %d, want 1", r[0].GetSeq())
	}
}

// testReplyDiscarded: recording a discarded reply (RecordLlmCalls, discarded set) marks the mysis's reply_discarded
// until its next final answer (an assistant memory without tool calls) — stored state, so a runner that takes the
// mysis over knows the turn already threw one paid answer away (issue 26). A failed call, prompts, and replies with
// tool calls leave it as it is; a retried record of a discarded call already stored does not set it again.
func testReplyDiscarded(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("discard"))
	flag := func(what string, want bool) {
		t.Helper()
		resp, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: m.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetMysis().GetReplyDiscarded(); got != want {
			t.Fatalf("%s: reply_discarded = %v, want %v", what, got, want)
		}
	}
	record := func(calls ...*memoryv1.LlmCall) {
		t.Helper()
		if _, err := c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: m.GetId(), Calls: calls}); err != nil {
			t.Fatalf("RecordLlmCalls: %v", err)
		}
	}
	flag("a new mysis", false)
	record(&memoryv1.LlmCall{CallId: uuid.NewString(), Provider: "openai", Model: "m", Error: "timeout"})
	flag("after a failed call", false)
	// No tokens, no cost: the suite may share a database, and the swarm's spend counts are not per mysis.
	discarded := &memoryv1.LlmCall{CallId: uuid.NewString(), Provider: "openai", Model: "m", Discarded: true}
	record(discarded)
	flag("after a discarded reply", true)
	appendOK(t, c, m.GetId(), userMemory("a broadcast", ""), &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT,
		Source: memoryv1.Source_SOURCE_LLM, ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "get_status", ArgumentsJson: "{}"}}},
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c1", ToolName: "get_status", Content: "{}"})
	flag("after a prompt, a reply with calls and its result", true)
	appendOK(t, c, m.GetId(), &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "done",
		LlmCall: &memoryv1.LlmCall{CallId: uuid.NewString(), Provider: "openai", Model: "m"}})
	flag("after a final answer", false)
	record(discarded)
	flag("after a retried record of the discarded call", false)

	_, err := c.RecordLlmCalls(ctx, &memoryv1.RecordLlmCallsRequest{MysisId: m.GetId(), Calls: []*memoryv1.LlmCall{
		{CallId: uuid.NewString(), Provider: "openai", Error: "boom", Discarded: true}}})
	wantInvalid(t, "a failed call marked discarded", err, "calls[0].discarded")
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: []*memoryv1.NewMemory{{
		Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "x",
		LlmCall: &memoryv1.LlmCall{CallId: uuid.NewString(), Provider: "openai", Discarded: true}}}})
	wantInvalid(t, "a stored reply marked discarded", err, "memories[0].llm_call.discarded")
	flag("after rejected requests", false)
}
