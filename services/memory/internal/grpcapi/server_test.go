package grpcapi_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/pgutil"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/services/memory/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/migrations"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
	"github.com/zoeaswarm/zoea/services/memory/internal/secretbox"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, "memgrpc", &dbURL)) }

// poolConns is the size of the server's Postgres pool in these tests.
const poolConns = 8

// start runs the real server (libs/server) on 127.0.0.1:0 against dbURL and returns a client and a health client.
func start(t *testing.T, url string, withKey bool) (memoryv1.MemoryServiceClient, healthpb.HealthClient) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := pgutil.Open(ctx, url, "zoea-test", poolConns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	var box pgstore.Sealer
	if withKey {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		b, err := secretbox.New(key)
		if err != nil {
			t.Fatal(err)
		}
		box = b
	}
	store := pgstore.New(pool, box)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(server.Options{
		Name: "memory", Logger: log, CheckInterval: 100 * time.Millisecond,
		Config: server.Config{ListenAddr: "127.0.0.1:0"},
		Checks: []server.Check{{Name: "postgres", Fn: store.Ping}},
	})
	srv.Register(&memoryv1.MemoryService_ServiceDesc, grpcapi.New(memory.NewService(store)))
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	addr, err := srv.Addr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := server.Dial(addr.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		pool.Close()
	})
	return memoryv1.NewMemoryServiceClient(conn), healthpb.NewHealthClient(conn)
}

func wantCode(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("want %v, got %v: %v", code, st.Code(), err)
	}
	if field == "" {
		return
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return
				}
			}
		}
	}
	t.Fatalf("want field violation on %q, got %v", field, st.Details())
}

func TestStatusCodesForBadInput(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, true)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "codes", Provider: "ollama", Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	id := m.GetMysis().GetId()
	okMem := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "hi"}
	bad := func(mut func(*memoryv1.NewMemory)) *memoryv1.NewMemory {
		n := proto.Clone(okMem).(*memoryv1.NewMemory)
		mut(n)
		return n
	}
	cases := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"create no name", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Provider: "autopilot"})
			return err
		}, codes.InvalidArgument, "name"},
		{"create dup", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "codes", Provider: "autopilot"})
			return err
		}, codes.AlreadyExists, ""},
		{"create malformed provider", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "x", Provider: "Sky Net"})
			return err
		}, codes.InvalidArgument, "provider"},
		{"get malformed", func() error {
			_, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: "1234"})
			return err
		}, codes.InvalidArgument, "mysis_id"},
		{"get unknown", func() error {
			_, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: "0195d8a0-0000-7000-8000-000000000000"})
			return err
		}, codes.NotFound, ""},
		{"get by name unknown", func() error {
			_, err := c.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: "nobody"})
			return err
		}, codes.NotFound, ""},
		{"list bad token", func() error {
			_, err := c.ListMyses(ctx, &memoryv1.ListMysesRequest{PageToken: "!!"})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"list bad state", func() error {
			_, err := c.ListMyses(ctx, &memoryv1.ListMysesRequest{State: 42})
			return err
		}, codes.InvalidArgument, "state"},
		{"update temperature", func() error {
			_, err := c.UpdateMysisConfig(ctx, &memoryv1.UpdateMysisConfigRequest{MysisId: id, Temperature: proto.Float64(9)})
			return err
		}, codes.InvalidArgument, "temperature"},
		{"state unspecified", func() error {
			_, err := c.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: id})
			return err
		}, codes.InvalidArgument, "state"},
		{"state cas mismatch", func() error {
			_, err := c.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: id, State: memoryv1.MysisState_MYSIS_STATE_RUNNING, ExpectedState: memoryv1.MysisState_MYSIS_STATE_ERRORED})
			return err
		}, codes.FailedPrecondition, ""},
		{"delete unknown", func() error {
			_, err := c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: "0195d8a0-0000-7000-8000-000000000000"})
			return err
		}, codes.NotFound, ""},
		{"append nul content", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{okMem, okMem, okMem, bad(func(n *memoryv1.NewMemory) { n.Content = "a\x00b" })}})
			return err
		}, codes.InvalidArgument, "memories[3].content"},
		{"append no role", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{bad(func(n *memoryv1.NewMemory) { n.Role = 0 })}})
			return err
		}, codes.InvalidArgument, "memories[0].role"},
		{"append unknown source", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{bad(func(n *memoryv1.NewMemory) { n.Source = 77 })}})
			return err
		}, codes.InvalidArgument, "memories[0].source"},
		{"append bad arguments", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{okMem, {
				Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM,
				ToolCalls: []*memoryv1.ToolCall{{Id: "a", Name: "mine", ArgumentsJson: "{}"}, {Id: "b", Name: "sell", ArgumentsJson: "not json"}},
			}}})
			return err
		}, codes.InvalidArgument, "memories[1].tool_calls[1].arguments_json"},
		{"append empty", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id})
			return err
		}, codes.InvalidArgument, "memories"},
		{"append unknown mysis", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: "0195d8a0-0000-7000-8000-000000000000", Memories: []*memoryv1.NewMemory{okMem}})
			return err
		}, codes.NotFound, ""},
		{"append malformed mysis", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: "x", Memories: []*memoryv1.NewMemory{okMem}})
			return err
		}, codes.InvalidArgument, "mysis_id"},
		{"recent negative", func() error {
			_, err := c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: -1})
			return err
		}, codes.InvalidArgument, "limit"},
		{"range inverted", func() error {
			_, err := c.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: id, FromSeq: 9, ToSeq: 2})
			return err
		}, codes.InvalidArgument, "to_seq"},
		{"get memory unknown", func() error {
			_, err := c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: id, MemoryId: 987654321})
			return err
		}, codes.NotFound, ""},
		{"window unknown mysis", func() error {
			_, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: "0195d8a0-0000-7000-8000-000000000000"})
			return err
		}, codes.NotFound, ""},
		{"window negative", func() error {
			_, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, Window: -3})
			return err
		}, codes.InvalidArgument, "window"},
		{"window negative carry", func() error {
			_, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, CarryLimit: -1})
			return err
		}, codes.InvalidArgument, "carry_limit"},
		{"window empty pinned tool", func() error {
			_, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: id, PinnedTools: []string{"login", ""}})
			return err
		}, codes.InvalidArgument, "pinned_tools[1]"},
		{"call arguments on a user memory", func() error {
			_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: []*memoryv1.NewMemory{
				{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "hi", CallArgumentsJson: "{}"}}})
			return err
		}, codes.InvalidArgument, "memories[0].call_arguments_json"},
		{"broadcast empty", func() error {
			_, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{})
			return err
		}, codes.InvalidArgument, "content"},
		{"broadcast bad target", func() error {
			_, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{Content: "x", TargetMysisIds: []string{id, "nope"}})
			return err
		}, codes.InvalidArgument, "target_mysis_ids[1]"},
		{"deliver unknown broadcast", func() error {
			_, err := c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: "0195d8a0-0000-7000-8000-000000000000", MysisIds: []string{id}})
			return err
		}, codes.NotFound, ""},
		{"search empty query", func() error {
			_, err := c.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: id, Query: " "})
			return err
		}, codes.InvalidArgument, "query"},
		{"search unknown order", func() error {
			_, err := c.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: id, Query: "x", Order: memoryv1.SearchOrder(99)})
			return err
		}, codes.InvalidArgument, "order"},
		{"search no mysis", func() error {
			_, err := c.SearchReasoning(ctx, &memoryv1.SearchReasoningRequest{Query: "x"})
			return err
		}, codes.InvalidArgument, "mysis_id"},
		{"search broadcasts empty", func() error {
			_, err := c.SearchBroadcasts(ctx, &memoryv1.SearchBroadcastsRequest{})
			return err
		}, codes.InvalidArgument, "query"},
		{"account short name", func() error {
			_, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "x", Password: "y"})
			return err
		}, codes.InvalidArgument, "username"},
		{"create spaced name", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "  spaced  ", Provider: "autopilot"})
			return err
		}, codes.InvalidArgument, "name"},
		{"create zero-width name", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "\u200b", Provider: "autopilot"})
			return err
		}, codes.InvalidArgument, "name"},
		{"create bidi name", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "a\u202Eb", Provider: "autopilot"})
			return err
		}, codes.InvalidArgument, "name"},
		{"create name that is an id", func() error {
			_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: id, Provider: "autopilot"})
			return err
		}, codes.InvalidArgument, "name"},
		{"account for unknown mysis", func() error {
			_, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot_fk", Password: "pw", MysisId: "0195d8a0-0000-7000-8000-000000000000"})
			return err
		}, codes.NotFound, ""},
		{"claim empty pool", func() error {
			_, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: id})
			return err
		}, codes.NotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			wantCode(t, err, tc.code, tc.field)
			// One sentence, no internals: no SQL constraint names, no SQLSTATE, no nested status text.
			msg := status.Convert(err).Message()
			for _, leak := range []string{"SQLSTATE", "constraint", "rpc error", "_key", "_fkey"} {
				if strings.Contains(msg, leak) {
					t.Errorf("message %q leaks %q", msg, leak)
				}
			}
		})
	}
	// A rejected append wrote nothing.
	got, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: id})
	if err != nil || got.GetMysis().GetLastSeq() != 0 {
		t.Fatalf("rejected input was stored: %v %v", got, err)
	}
}

func TestAccountsWithoutKeyFailPrecondition(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, dbURL, false)
	m, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "nokey", Provider: "autopilot"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot", Password: "pw"})
	wantCode(t, err, codes.FailedPrecondition, "")
	if !strings.Contains(status.Convert(err).Message(), "ZOEA_SECRET_KEY") {
		t.Fatalf("error does not name the variable: %v", err)
	}
	_, err = c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: m.GetMysis().GetId()})
	wantCode(t, err, codes.FailedPrecondition, "")
	if _, err := c.ReleaseAccount(ctx, &memoryv1.ReleaseAccountRequest{MysisId: m.GetMysis().GetId()}); err != nil {
		t.Fatal(err)
	}
}

func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	c, h := start(t, pgtest.New(t), true)
	waitHealth(t, h, healthpb.HealthCheckResponse_SERVING)

	var ids []string
	for _, n := range []string{"e2e-a", "e2e-b", "e2e-c"} {
		r, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: n, Provider: "autopilot", SystemPrompt: "Play."})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetMysis().GetState() != memoryv1.MysisState_MYSIS_STATE_IDLE || r.GetMysis().GetCreatedAt() == nil {
			t.Fatalf("created: %v", r.GetMysis())
		}
		ids = append(ids, r.GetMysis().GetId())
	}
	// Paging through the API with opaque tokens.
	var names []string
	token := ""
	for {
		r, err := c.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.GetMyses() {
			if strings.HasPrefix(m.GetName(), "e2e-") {
				names = append(names, m.GetName())
			}
		}
		if token = r.GetNextPageToken(); token == "" {
			break
		}
	}
	if strings.Join(names, ",") != "e2e-a,e2e-b,e2e-c" {
		t.Fatalf("paged names %v", names)
	}
	_, err := c.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: 1, PageToken: mustToken(t, c), State: memoryv1.MysisState_MYSIS_STATE_RUNNING})
	wantCode(t, err, codes.InvalidArgument, "page_token")

	args := `{ "target" : "sol|haven:dock" }`
	app, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: ids[0], Memories: []*memoryv1.NewMemory{
		{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "Go to Haven", IdempotencyKey: "k1"},
		{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Reasoning: "travel first",
			ToolCalls: []*memoryv1.ToolCall{{Id: "call_1", Name: "travel", ArgumentsJson: args}}, IdempotencyKey: "k2"},
		{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "call_1", ToolName: "travel", Content: `{"ok":true}`, IdempotencyKey: "k3"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(app.GetMemories()) != 3 || app.GetMemories()[2].GetSeq() != 3 || app.GetMemories()[1].GetToolCalls()[0].GetArgumentsJson() != args {
		t.Fatalf("append: %v", app)
	}
	w, err := c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: ids[0], Window: 2, GlobalMissionFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.GetMemories()) != 2 || w.GetMemories()[0].GetSeq() != 2 || w.GetMission().GetMemory().GetContent() != "Go to Haven" ||
		w.GetMission().GetGlobalFallback() || w.GetMysis().GetSystemPrompt() != "Play." || w.GetRecentStartSeq() != 2 {
		t.Fatalf("window: %v", w)
	}
	// The result was sent without its call's arguments (an older client): the service took them from the call.
	if r := w.GetMemories()[1]; r.GetCallArgumentsJson() != args || r.GetCallKey() != `travel {"target":"sol|haven:dock"}` {
		t.Fatalf("call arguments/key: %q %q", r.GetCallArgumentsJson(), r.GetCallKey())
	}
	// v2 over the wire: the window moves back to the call, and reports the objective.
	w, err = c.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: ids[0], Window: 1, CarryLimit: 10, ReplyLimit: 2,
		SnapshotTools: []string{"get_status"}, PinnedTools: []string{"login"}, MaxTurnRows: 100})
	if err != nil || len(w.GetMemories()) != 3 || w.GetRecentStartSeq() != 1 || w.GetObjectiveSeq() != 1 || w.GetTurnTruncated() {
		t.Fatalf("v2 window: %v %v", w, err)
	}
	rb, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{SenderId: "", Content: "Mine iron_ore"})
	if err != nil || rb.GetDeliveredCount() != 3 {
		t.Fatalf("broadcast: %v %v", rb, err)
	}
	rb2, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{BroadcastId: rb.GetBroadcast().GetId(), Content: "Mine iron_ore"})
	if err != nil || rb2.GetDeliveredCount() != 0 || rb2.GetAlreadyDeliveredCount() != 3 {
		t.Fatalf("broadcast retry: %v %v", rb2, err)
	}
	hits, err := c.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: ids[1], Query: "iron_ore"})
	if err != nil || len(hits.GetHits()) != 1 || !strings.Contains(hits.GetHits()[0].GetSnippet(), "«") {
		t.Fatalf("search: %v %v", hits, err)
	}
	for _, o := range []memoryv1.SearchOrder{memoryv1.SearchOrder_SEARCH_ORDER_RELEVANCE, memoryv1.SearchOrder_SEARCH_ORDER_RECENCY} {
		hits, err := c.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: ids[1], Query: "iron_ore", Order: o})
		if err != nil || len(hits.GetHits()) != 1 || hits.GetCandidatesBounded() {
			t.Fatalf("search %v: %v %v", o, hits, err)
		}
	}
	if _, err := c.CreateAccount(ctx, &memoryv1.CreateAccountRequest{Username: "pilot_e2e", Password: "s3cret", Empire: "voidborn"}); err != nil {
		t.Fatal(err)
	}
	acc, err := c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: ids[2]})
	if err != nil || acc.GetAccount().GetPassword() != "s3cret" || acc.GetAccount().GetMysisId() != ids[2] {
		t.Fatalf("claim: %v %v", acc, err)
	}
	st, err := c.SetMysisState(ctx, &memoryv1.SetMysisStateRequest{MysisId: ids[2], State: memoryv1.MysisState_MYSIS_STATE_RUNNING,
		ExpectedState: memoryv1.MysisState_MYSIS_STATE_IDLE, EncouragementCount: proto.Int32(0)})
	if err != nil || st.GetPreviousState() != memoryv1.MysisState_MYSIS_STATE_IDLE || st.GetMysis().GetAccountUsername() != "pilot_e2e" {
		t.Fatalf("state: %v %v", st, err)
	}
	if _, err := c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: ids[2]}); err != nil {
		t.Fatal(err)
	}
	acc, err = c.ClaimAccount(ctx, &memoryv1.ClaimAccountRequest{MysisId: ids[1]})
	if err != nil || acc.GetAccount().GetUsername() != "pilot_e2e" {
		t.Fatalf("account not released by delete: %v %v", acc, err)
	}
}

func mustToken(t *testing.T, c memoryv1.MemoryServiceClient) string {
	t.Helper()
	r, err := c.ListMyses(context.Background(), &memoryv1.ListMysesRequest{PageSize: 1})
	if err != nil || r.GetNextPageToken() == "" {
		t.Fatalf("no token: %v", err)
	}
	return r.GetNextPageToken()
}

func waitHealth(t *testing.T, h healthpb.HealthClient, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	// A Watch stream: the server pushes every status change, so nothing polls.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := h.Watch(ctx, &healthpb.HealthCheckRequest{Service: memoryv1.MemoryService_ServiceDesc.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	var last healthpb.HealthCheckResponse_ServingStatus
	for {
		r, err := w.Recv()
		if err != nil {
			t.Fatalf("health stayed %v, want %v: %v", last, want, err)
		}
		if last = r.GetStatus(); last == want {
			return
		}
	}
}

// proxy is a TCP forwarder to Postgres that the test can cut and restore, which looks to the service exactly like
// Postgres going away and coming back, without touching the shared server.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	lis          net.Listener
	conns        []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = lis.Addr().String()
	p.serve(lis)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(lis net.Listener) {
	p.mu.Lock()
	p.lis = lis
	p.mu.Unlock()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lis != nil {
		_ = p.lis.Close()
		p.lis = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) up(t *testing.T) {
	lis, err := net.Listen("tcp", p.addr) // down closed the listener: the address is free (SO_REUSEADDR)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(lis)
}

func TestHealthFollowsPostgres(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	u.Host = px.addr
	c, h := start(t, u.String(), false)
	waitHealth(t, h, healthpb.HealthCheckResponse_SERVING)
	if _, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: "health", Provider: "autopilot"}); err != nil {
		t.Fatal(err)
	}

	px.down()
	waitHealth(t, h, healthpb.HealthCheckResponse_NOT_SERVING)
	_, err = c.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: "health"})
	if st := status.Convert(err); st.Code() != codes.Unavailable {
		t.Fatalf("call while postgres is down: %v (want Unavailable)", err)
	}

	px.up(t)
	waitHealth(t, h, healthpb.HealthCheckResponse_SERVING)
	// No waiting: the pool may still hold connections the outage cut, but a call that fails on one discards it
	// (and an idle one is pinged before use), so at most poolConns calls can fail before a fresh connection answers.
	var lastErr error
	for range poolConns + 1 {
		if _, lastErr = c.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: "health"}); lastErr == nil {
			return
		}
	}
	t.Fatalf("calls still fail after postgres came back: %v", lastErr)
}
