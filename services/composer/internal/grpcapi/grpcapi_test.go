package grpcapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/replay"
	"github.com/zoeaswarm/zoea/services/composer/internal/tokcache"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// session stores a generated 40-turn SpaceMolt session for a new mysis and returns it with the mysis's id; its
// first row (a commander broadcast) is the mission.
func session(t testing.TB, mem *memoryServer, encouragement int32) (replay.Session, string) {
	t.Helper()
	s := replay.Generate(40, 1)
	id := mem.createMysis(t, "m1", replay.SystemPrompt, encouragement)
	mem.appendRows(t, id, s.Rows)
	return s, id
}

func fromProtoMessages(ms []*composerv1.ChatMessage) []chat.Message {
	roles := map[memoryv1.Role]chat.Role{memoryv1.Role_ROLE_SYSTEM: chat.RoleSystem, memoryv1.Role_ROLE_USER: chat.RoleUser,
		memoryv1.Role_ROLE_ASSISTANT: chat.RoleAssistant, memoryv1.Role_ROLE_TOOL: chat.RoleTool}
	out := make([]chat.Message, len(ms))
	for i, m := range ms {
		out[i] = chat.Message{Role: roles[m.GetRole()], Content: m.GetContent(), ToolCallID: m.GetToolCallId(), Name: m.GetName()}
		for _, tc := range m.GetToolCalls() {
			out[i].ToolCalls = append(out[i].ToolCalls, chat.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArgumentsJson()})
		}
	}
	return out
}

func cache(t testing.TB) *tokcache.Cache {
	tok, err := o200k.Load()
	if err != nil {
		t.Fatal(err)
	}
	return tokcache.New(tok, 0)
}

// The response is exactly what the pure package composes from the same window, after one GetComposeWindow call per
// ComposeContext, with the request's scan window and fallback flag.
func TestComposeContextOneRoundTripSameAsCompose(t *testing.T) {
	mem := startMemory(t)
	s, mysisID := session(t, mem, 0)
	c := startComposer(t, mem.addr, grpcapi.Options{Counter: cache(t), Logger: discardLogger()})
	c.waitHealth(t, healthpb.HealthCheckResponse_SERVING)

	p := compose.DefaultPolicy()
	var prevBoundary, prevSeq int64 // the composer starts each request from the mysis's previous boundary
	for i, window := range []int{50, 20, 50, 7} {
		pp := &composerv1.Policy{ScanWindow: proto.Int32(int32(window))}
		resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID, Policy: pp})
		if err != nil {
			t.Fatal(err)
		}
		if got := mem.calls.Load(); got != int64(i+1) {
			t.Fatalf("after %d ComposeContext calls the memory service saw %d GetComposeWindow calls", i+1, got)
		}
		req := mem.lastRequest()
		snapshot, pinned := p.WindowTools() // tool.action entries as the memory service keys them
		if req.GetWindow() != int32(window) || !req.GetGlobalMissionFallback() || req.GetMysisId() != mysisID ||
			req.GetCarryLimit() != int32(p.CarryLimit) || req.GetReplyLimit() != int32(p.ReplyLimit) ||
			req.GetMaxTurnRows() != int32(p.MaxTurnRows) || !slices.Equal(req.GetSnapshotTools(), snapshot) ||
			!slices.Equal(req.GetPinnedTools(), pinned) || !slices.Contains(pinned, "spacemolt_auth") ||
			// Results are cut by the memory service well above the composer's own cap (32 bytes per token).
			req.GetMaxResultBytes() != int32(max(64<<10, p.ToolResultCap*32)) {
			t.Fatalf("GetComposeWindow request %v", req)
		}

		p.ScanWindow = window
		w := histgen.ComposeWindowFrom(s.Rows, p, s.Rows[0].Seq, prevBoundary)
		want, err := compose.Compose(compose.Input{SystemPrompt: replay.SystemPrompt, Window: w.Rows, RecentStartSeq: w.RecentStartSeq,
			ObjectiveSeq: w.ObjectiveSeq, PrevBoundary: prevBoundary, PrevCompactSeq: prevSeq,
			Mission: &compose.Mission{MemoryID: s.Rows[0].ID, Seq: s.Rows[0].Seq, Source: s.Rows[0].Source, Content: s.Rows[0].Content}}, p)
		if err != nil {
			t.Fatal(err)
		}
		got := fromProtoMessages(resp.GetMessages())
		if !reflect.DeepEqual(got, want.Messages) {
			t.Fatalf("window %d: gRPC messages differ from compose.Compose", window)
		}
		if m := resp.GetManifest(); m.GetCompactionBoundarySeq() != want.Manifest.Boundary || m.GetCompactionSeq() != want.Manifest.CompactSeq {
			t.Fatalf("window %d: boundary %d/%d, compose.Compose %d/%d", window, m.GetCompactionBoundarySeq(), m.GetCompactionSeq(),
				want.Manifest.Boundary, want.Manifest.CompactSeq)
		}
		if req.GetRecentFromSeq() != prevBoundary {
			t.Fatalf("window %d: recent_from_seq %d, want the previous boundary %d", window, req.GetRecentFromSeq(), prevBoundary)
		}
		prevBoundary, prevSeq = want.Manifest.Boundary, want.Manifest.CompactSeq
		if err := chatvalid.Strict.Validate(got); err != nil {
			t.Fatal(err)
		}
		m := resp.GetManifest()
		if m.GetTokenizer() != "o200k_base" || m.GetTokenBudget() != int32(p.TokenBudget) {
			t.Fatalf("manifest tokenizer %q budget %d", m.GetTokenizer(), m.GetTokenBudget())
		}
		if int(m.GetTokens().GetTotal()) != want.Manifest.Tokens.Total || m.GetTokens().GetTotal() > m.GetTokenBudget() {
			t.Fatalf("total %d, compose says %d", m.GetTokens().GetTotal(), want.Manifest.Tokens.Total)
		}
		if len(m.GetEntries()) != len(want.Manifest.Items) {
			t.Fatalf("%d entries for %d items", len(m.GetEntries()), len(want.Manifest.Items))
		}
		// Entry tokens, the system prompt, synthetic messages and reply priming add up to the total.
		sum := int(m.GetTokens().GetSystem()) + want.Manifest.Tokens.Framing
		for _, e := range m.GetEntries() {
			if e.GetDisposition() == composerv1.Disposition_DISPOSITION_DROPPED && e.GetTokens() != 0 {
				t.Fatalf("dropped entry with tokens: %v", e)
			}
			sum += int(e.GetTokens())
		}
		entries := sum - int(m.GetTokens().GetSystem()) - want.Manifest.Tokens.Framing
		if want.Manifest.Mission != nil {
			sum += want.Manifest.Mission.Tokens
		}
		sum += int(m.GetTokens().GetSynthetic())
		if sum != int(m.GetTokens().GetTotal()) {
			t.Fatalf("entries add up to %d, total %d", sum, m.GetTokens().GetTotal())
		}
		// And per message: every token is either a memory's (its entry) or a synthetic message's.
		perMessage := int(m.GetTokens().GetSystem()) + want.Manifest.Tokens.Framing + entries
		for _, s := range m.GetSynthetic() {
			perMessage += int(s.GetTokens())
		}
		if perMessage != int(m.GetTokens().GetTotal()) {
			t.Fatalf("entries and synthetic messages add up to %d, total %d (synthetic %v)", perMessage, m.GetTokens().GetTotal(), m.GetSynthetic())
		}
		if resp.GetEncouragement().GetAction() != composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_NONE {
			t.Fatalf("mid-turn compose: %v", resp.GetEncouragement())
		}
	}
}

// An out-of-window mission is sent and listed as a synthetic message of kind "mission".
func TestMissionOutsideWindowIsSynthetic(t *testing.T) {
	mem := startMemory(t)
	_, mysisID := session(t, mem, 0)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range resp.GetManifest().GetSynthetic() {
		kinds = append(kinds, s.GetKind())
		if s.GetKind() == "mission" && resp.GetMessages()[s.GetIndex()].GetContent() == "" {
			t.Fatalf("mission synthetic points at an empty message: %v", s)
		}
	}
	if len(kinds) == 0 || kinds[0] != "mission" {
		t.Fatalf("synthetic kinds %v, want the mission first", kinds)
	}
	if resp.GetManifest().GetTokens().GetMission() == 0 {
		t.Fatal("mission tokens not counted")
	}
	if got := resp.GetManifest().GetSynthetic()[0].GetTokens(); got != resp.GetManifest().GetTokens().GetMission() {
		t.Fatalf("the mission message counts %d tokens, the mission section %d", got, resp.GetManifest().GetTokens().GetMission())
	}
}

// Encouragement decisions travel with the nudge the runner must persist.
func TestEncouragement(t *testing.T) {
	mem := startMemory(t)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	ids := map[string]string{}
	for name, enc := range map[string]int32{"idle": 3, "nudged": 1, "mission": 2, "elsewhere": 0} {
		ids[name] = mem.createMysis(t, name, "You are a mysis.", enc)
	}
	policy := compose.DefaultPolicy()
	for _, tc := range []struct {
		id        string
		action    composerv1.EncouragementAction
		next      int32
		nudge     string
		messages  int
		lastReply string
	}{
		{"idle", composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_IDLE, 3, "", 0, ""},
		{"nudged", composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_INCREMENT, 2, policy.Nudges.Firm, 2, policy.Nudges.Firm},
		{"mission", composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET, 0, policy.Nudges.Gentle, 2, "All myses: mine iron.\n\n" + policy.Nudges.Gentle},
	} {
		if tc.id == "mission" {
			// The swarm's latest commander broadcast, delivered to another mysis, is the fallback mission of
			// every mysis without one of its own (so it is recorded after the first two cases).
			if _, err := mem.client(t).RecordBroadcast(context.Background(), &memoryv1.RecordBroadcastRequest{
				Content: "All myses: mine iron.", TargetMysisIds: []string{ids["elsewhere"]}}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: ids[tc.id], BeginAutonomousTurn: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		e := resp.GetEncouragement()
		if e.GetAction() != tc.action || e.GetNextCount() != tc.next || e.GetNudge() != tc.nudge || len(resp.GetMessages()) != tc.messages {
			t.Fatalf("%s: encouragement %v with %d messages", tc.id, e, len(resp.GetMessages()))
		}
		if tc.messages > 0 && resp.GetMessages()[tc.messages-1].GetContent() != tc.lastReply {
			t.Fatalf("%s: last message %q", tc.id, resp.GetMessages()[tc.messages-1].GetContent())
		}
	}
	// The fallback flag turns the swarm-wide mission off.
	resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: ids["mission"],
		BeginAutonomousTurn: true, Policy: &composerv1.Policy{GlobalMissionFallback: proto.Bool(false)}})
	if err != nil {
		t.Fatal(err)
	}
	if mem.lastRequest().GetGlobalMissionFallback() || resp.GetEncouragement().GetAction() != composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_INCREMENT {
		t.Fatalf("fallback off: request %v, encouragement %v", mem.lastRequest(), resp.GetEncouragement())
	}
}

// Bad policy values (and a bad previous_compaction) are InvalidArgument naming the field, and no memory call is made
// for them.
func TestInvalidPolicyNamesField(t *testing.T) {
	mem := startMemory(t)
	_, mysisID := session(t, mem, 0)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	for _, tc := range []struct {
		field  string
		policy *composerv1.Policy
		id     string
		prev   *composerv1.Compaction
	}{
		{"mysis_id", nil, "", nil},
		{"mysis_id", nil, "   ", nil},
		{"policy.scan_window", &composerv1.Policy{ScanWindow: proto.Int32(0)}, mysisID, nil},
		{"policy.scan_window", &composerv1.Policy{ScanWindow: proto.Int32(1001)}, mysisID, nil},
		{"policy.token_budget", &composerv1.Policy{TokenBudget: proto.Int32(255)}, mysisID, nil},
		{"policy.token_budget", &composerv1.Policy{TokenBudget: proto.Int32(-1)}, mysisID, nil},
		{"policy.tool_result_cap_tokens", &composerv1.Policy{ToolResultCapTokens: proto.Int32(10)}, mysisID, nil},
		{"policy.tool_result_cap_tokens", &composerv1.Policy{TokenBudget: proto.Int32(1000), ToolResultCapTokens: proto.Int32(1001)}, mysisID, nil},
		{"policy.snapshot_tools[1]", &composerv1.Policy{SnapshotTools: []string{"get_ship", " "}}, mysisID, nil},
		{"policy.nudge_levels", &composerv1.Policy{NudgeLevels: []string{"a", "b", "c", "d"}}, mysisID, nil},
		{"policy.nudge_levels[0]", &composerv1.Policy{NudgeLevels: []string{""}}, mysisID, nil},
		{"policy.carry_limit", &composerv1.Policy{CarryLimit: proto.Int32(1001)}, mysisID, nil},
		{"policy.pinned_tools[0]", &composerv1.Policy{PinnedTools: []string{""}}, mysisID, nil},
		{"policy.reply_limit", &composerv1.Policy{ReplyLimit: proto.Int32(-1)}, mysisID, nil},
		{"policy.reply_cap_tokens", &composerv1.Policy{ReplyCapTokens: proto.Int32(8)}, mysisID, nil},
		{"policy.max_turn_rows", &composerv1.Policy{MaxTurnRows: proto.Int32(-5)}, mysisID, nil},
		{"policy.high_water_tokens", &composerv1.Policy{HighWaterTokens: proto.Int32(9000)}, mysisID, nil},
		{"policy.compact_step", &composerv1.Policy{CompactStep: proto.Int32(0)}, mysisID, nil},
		{"previous_compaction.boundary_seq", nil, mysisID, &composerv1.Compaction{BoundarySeq: -1}},
		{"previous_compaction.compaction_seq", nil, mysisID, &composerv1.Compaction{BoundarySeq: 8, CompactionSeq: -3}},
	} {
		_, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: tc.id, Policy: tc.policy, PreviousCompaction: tc.prev})
		if got := fieldOf(t, err, codes.InvalidArgument); got != tc.field {
			t.Errorf("%v: field %q, want %q (err %v)", tc.policy, got, tc.field, err)
		}
	}
	if n := mem.calls.Load(); n != 0 {
		t.Fatalf("invalid requests reached the memory service %d times", n)
	}
	// Valid overrides apply: partial nudge wording, snapshot tools, budget.
	resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID,
		Policy: &composerv1.Policy{TokenBudget: proto.Int32(4000), SnapshotTools: []string{"get_status"}, NudgeLevels: []string{"Go on."}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetManifest().GetTokenBudget() != 4000 || resp.GetManifest().GetTokens().GetTotal() > 4000 {
		t.Fatalf("budget override: %v", resp.GetManifest().GetTokens())
	}
}

func fieldOf(t *testing.T, err error, want codes.Code) string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != want {
		t.Errorf("code %s (%v), want %s", st.Code(), err, want)
		return ""
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	return ""
}

// An unknown mysis is NotFound, passed through from the memory service.
func TestUnknownMysisNotFound(t *testing.T) {
	mem := startMemory(t)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	_, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: "6f1c2a1e-0000-4000-8000-00000000dead"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("got %v, want NotFound", err)
	}
	if mem.calls.Load() != 1 {
		t.Fatalf("%d GetComposeWindow calls", mem.calls.Load())
	}
}

// A mysis with no system prompt, or a turn that cannot fit the budget, is FailedPrecondition: the request is fine,
// the stored state is not.
func TestStateErrorsAreFailedPrecondition(t *testing.T) {
	mem := startMemory(t)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	// The memory service refuses a mysis without a system prompt; one stored before it did comes back without one.
	noPrompt := mem.createMysis(t, "noprompt", "You are a mysis.", 0)
	mem.mu.Lock()
	mem.noPrompt[noPrompt] = true
	mem.mu.Unlock()
	var huge strings.Builder
	for i := range 600 {
		fmt.Fprintf(&huge, "order %d: ", i)
	}
	hugeID := mem.createMysis(t, "huge", "You are a mysis.", 0)
	mem.appendRows(t, hugeID, []compose.Memory{{Seq: 1, Turn: 1, Role: chat.RoleUser, Source: compose.SourceDirect, Content: huge.String()}})
	for _, id := range []string{noPrompt, hugeID} {
		_, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: id,
			Policy: &composerv1.Policy{TokenBudget: proto.Int32(256)}})
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("%s: got %v, want FailedPrecondition", id, err)
		}
	}
}

// With the memory service down, calls fail Unavailable and health is NOT_SERVING; when it comes back (or its health
// turns SERVING) so does the composer's.
func TestMemoryDownUnavailableAndHealth(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // nothing listens here yet

	c := startComposer(t, addr, grpcapi.Options{Logger: discardLogger()})
	c.waitHealth(t, healthpb.HealthCheckResponse_NOT_SERVING)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.client.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: "6f1c2a1e-0000-4000-8000-000000000001"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("memory down: got %v, want Unavailable", err)
	}

	// The memory service starts, but reports NOT_SERVING (its Postgres is down): the composer stays NOT_SERVING
	// through two of its health checks of memory that got that answer.
	mem := startMemoryAt(t, addr)
	mem.setServing(false)
	mem.awaitChecks(t, 2)
	if resp, err := c.health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("memory NOT_SERVING: composer health %v, %v; want NOT_SERVING", resp.GetStatus(), err)
	}
	mem.setServing(true)
	c.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
}

// Concurrent calls through the shared cache give exactly what an uncached server gives (run with -race).
func TestConcurrentCachedComposesMatchUncached(t *testing.T) {
	mem := startMemory(t)
	_, mysisID := session(t, mem, 0)
	// Stateless: each answer depends on the request alone, not on which request came before for the mysis.
	cached := startComposer(t, mem.addr, grpcapi.Options{Counter: cache(t), Logger: discardLogger(), Stateless: true})
	plain := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger(), Stateless: true})
	windows := []int32{5, 10, 20, 30, 40, 50}
	want := map[int32]*composerv1.ComposeContextResponse{}
	for _, w := range windows {
		resp, err := plain.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID,
			Policy: &composerv1.Policy{ScanWindow: proto.Int32(w)}})
		if err != nil {
			t.Fatal(err)
		}
		want[w] = resp
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 12 {
				w := windows[(g+i)%len(windows)]
				resp, err := cached.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID,
					Policy: &composerv1.Policy{ScanWindow: proto.Int32(w)}})
				if err != nil {
					errc <- err
					return
				}
				if !proto.Equal(resp, want[w]) {
					errc <- errors.New("cached composer answered differently from the uncached one")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func TestNewRejectsInvalidDefaultPolicy(t *testing.T) {
	p := compose.DefaultPolicy()
	p.TokenBudget = 10
	if _, err := grpcapi.New(nil, grpcapi.Options{Policy: &p}); err == nil {
		t.Fatal("a default token budget of 10 was accepted")
	}
	p = compose.DefaultPolicy()
	p.Nudges.Firm = ""
	if _, err := grpcapi.New(nil, grpcapi.Options{Policy: &p}); err == nil {
		t.Fatal("an empty default nudge was accepted")
	}
}

// A v1 memory service (no recent_start_seq, no carried rows, a window that may start inside a loop) still gets a
// valid composition, and a result whose call is just outside the window is no repair.
func TestV1WindowStillComposes(t *testing.T) {
	mem := startMemory(t)
	mem.v1.Store(true)
	s := replay.Generate(40, 1)
	mysisID := mem.createMysis(t, "m1", replay.SystemPrompt, 0)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	stored := 0
	for i := 10; i < len(s.Requests); i += 13 {
		n := s.Requests[i] // the runner composes with every loop's results stored
		mem.appendRows(t, mysisID, s.Rows[stored:n])
		stored = n
		for _, window := range []int32{5, 12, 50} {
			resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID,
				Policy: &composerv1.Policy{ScanWindow: proto.Int32(window)}})
			if err != nil {
				t.Fatal(err)
			}
			if err := chatvalid.Strict.Validate(fromProtoMessages(resp.GetMessages())); err != nil {
				t.Fatalf("%d rows, window %d: %v", n, window, err)
			}
			for _, r := range resp.GetManifest().GetRepairs() {
				t.Errorf("%d rows, window %d: repair %q in a history that has none", n, window, r)
			}
		}
	}
}

// Tool definitions travel with the request: counted in the budget (manifest tokens.tools) and validated by field.
func TestToolsCountedAndValidated(t *testing.T) {
	mem := startMemory(t)
	_, mysisID := session(t, mem, 0)
	c := startComposer(t, mem.addr, grpcapi.Options{Logger: discardLogger()})
	tools := []*composerv1.ToolDefinition{
		{Name: "get_status", Description: "Your ship's status.", ParametersJson: `{"type":"object","properties":{}}`},
		{Name: "travel", Description: "Travel to a point of interest.", ParametersJson: `{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`},
	}
	resp, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID, Tools: tools,
		Policy: &composerv1.Policy{TokenBudget: proto.Int32(3000)}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := o200k.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := histgen.ToolTokens(tok, []compose.Tool{{Name: tools[0].GetName(), Description: tools[0].GetDescription(), Parameters: tools[0].GetParametersJson()},
		{Name: tools[1].GetName(), Description: tools[1].GetDescription(), Parameters: tools[1].GetParametersJson()}})
	m := resp.GetManifest()
	if int(m.GetTokens().GetTools()) != want || m.GetTokens().GetTotal() > 3000 ||
		int(m.GetTokens().GetTotal()) != histgen.RequestTokens(tok, fromProtoMessages(resp.GetMessages()))+want {
		t.Fatalf("tokens %v, tools recount %d", m.GetTokens(), want)
	}
	for _, tc := range []struct {
		field string
		tools []*composerv1.ToolDefinition
	}{
		{"tools[0].name", []*composerv1.ToolDefinition{{Name: " "}}},
		{"tools[1].parameters_json", []*composerv1.ToolDefinition{tools[0], {Name: "x", ParametersJson: `[1]`}}},
		{"tools[0].parameters_json", []*composerv1.ToolDefinition{{Name: "x", ParametersJson: `{"type":`}}},
	} {
		_, err := c.client.ComposeContext(context.Background(), &composerv1.ComposeContextRequest{MysisId: mysisID, Tools: tc.tools})
		if got := fieldOf(t, err, codes.InvalidArgument); got != tc.field {
			t.Errorf("field %q, want %q (err %v)", got, tc.field, err)
		}
	}
}
