package grpcapi_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/composing"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
	"github.com/zoeaswarm/zoea/services/composer/internal/window"
)

// observed passes GetComposeWindow through to the real memory service and counts what the carry cache did.
type observed struct {
	api                   memoryclient.WindowAPI
	calls, known, omitted atomic.Int64
	// derived counts the windows whose carried rows the memory service could derive from the held rows' seqs: sent,
	// the same objective, a start above the held one; recent the windows that left the held recent rows out too.
	derived, recent atomic.Int64

	// For one mysis under one policy: the carry_bytes of the newest window read whole, and the carry_known.bytes
	// sent that were not it (the composer must echo what the memory service reported for the rows it holds) or
	// were (and not 0).
	mu                    sync.Mutex
	heldBytes, heldRecent int64
	misechoed             []string
	echoed                int
}

func (o *observed) GetComposeWindow(ctx context.Context, in *memoryv1.GetComposeWindowRequest, opts ...grpc.CallOption) (*memoryv1.GetComposeWindowResponse, error) {
	o.mu.Lock()
	switch k := in.GetCarryKnown(); {
	case k == nil:
	case k.GetBytes() != o.heldBytes:
		o.misechoed = append(o.misechoed, fmt.Sprintf("carry_known.bytes %d, the window read whole reported %d", k.GetBytes(), o.heldBytes))
	case k.GetBytes() > 0:
		o.echoed++
	}
	if k := in.GetCarryKnown(); k != nil && k.GetRecentBytes() != o.heldRecent {
		o.misechoed = append(o.misechoed, fmt.Sprintf("carry_known.recent_bytes %d, the previous window reported %d", k.GetRecentBytes(), o.heldRecent))
	}
	o.mu.Unlock()
	resp, err := o.api.GetComposeWindow(ctx, in, opts...)
	o.calls.Add(1)
	if in.GetCarryKnown() != nil {
		o.known.Add(1)
	}
	if k := in.GetCarryKnown(); err == nil && len(k.GetSeqs()) > 0 && !resp.GetCarryOmitted() &&
		resp.GetObjectiveSeq() == k.GetObjectiveSeq() && resp.GetRecentStartSeq() > k.GetRecentStartSeq() {
		o.derived.Add(1)
	}
	if resp.GetRecentOmittedThrough() > 0 {
		o.recent.Add(1)
	}
	if err == nil {
		o.mu.Lock()
		o.heldRecent = resp.GetRecentBytes()
		o.mu.Unlock()
	}
	if resp.GetCarryOmitted() {
		o.omitted.Add(1)
	} else if err == nil && !resp.GetCarryCut() {
		o.mu.Lock()
		o.heldBytes = resp.GetCarryBytes()
		o.mu.Unlock()
	}
	return resp, err
}

func newMemoryRow(m compose.Memory) *memoryv1.NewMemory {
	roles := map[chat.Role]memoryv1.Role{chat.RoleUser: memoryv1.Role_ROLE_USER, chat.RoleAssistant: memoryv1.Role_ROLE_ASSISTANT, chat.RoleTool: memoryv1.Role_ROLE_TOOL}
	sources := map[compose.Source]memoryv1.Source{compose.SourceDirect: memoryv1.Source_SOURCE_DIRECT, compose.SourceBroadcast: memoryv1.Source_SOURCE_BROADCAST,
		compose.SourceNudge: memoryv1.Source_SOURCE_NUDGE, compose.SourceLLM: memoryv1.Source_SOURCE_LLM, compose.SourceTool: memoryv1.Source_SOURCE_TOOL}
	nm := &memoryv1.NewMemory{Role: roles[m.Role], Source: sources[m.Source], Content: m.Content, Reasoning: m.Reasoning,
		ToolCallId: m.ToolCallID, ToolName: m.ToolName}
	for _, tc := range m.ToolCalls {
		nm.ToolCalls = append(nm.ToolCalls, &memoryv1.ToolCall{Id: tc.ID, Name: tc.Name, ArgumentsJson: tc.Arguments})
	}
	return nm
}

// storeUpTo appends rows[stored:at] to the mysis on the real memory service and returns at.
func storeUpTo(ctx context.Context, t *testing.T, mem memoryv1.MemoryServiceClient, id string, rows []compose.Memory, stored, at int) int {
	t.Helper()
	var batch []*memoryv1.NewMemory
	for _, m := range rows[stored:at] {
		batch = append(batch, newMemoryRow(m))
	}
	if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: batch}); err != nil {
		t.Fatal(err)
	}
	return at
}

// playMysis creates a mysis on the real memory service for a generated session.
func playMysis(ctx context.Context, t *testing.T, mem memoryv1.MemoryServiceClient) string {
	t.Helper()
	created, err := mem.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: fmt.Sprintf("carry-%d", time.Now().UnixNano()),
		Provider: "autopilot", SystemPrompt: histgen.RealPrompt})
	if err != nil {
		t.Fatal(err)
	}
	return created.GetMysis().GetId()
}

// twoComposers returns a composer holding carried rows, whose memory calls obs observes, and one that holds none and
// reads every window whole, both over mem.
func twoComposers(t *testing.T, mem memoryv1.MemoryServiceClient) (obs *observed, cached, whole *grpcapi.Service) {
	t.Helper()
	obs = &observed{api: mem}
	cached, err := grpcapi.New(memoryclient.New(obs), grpcapi.Options{Counter: cache(t), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	whole, err = grpcapi.New(memoryclient.New(mem), grpcapi.Options{Counter: cache(t), Logger: discardLogger(), CarryCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return obs, cached, whole
}

// TestCarryCacheComposesExactly plays a long generated session into the real memory service and composes every
// request twice: through a composer that holds carried rows (the memory service skips them) and through one that
// holds none (every window read whole). Both keep their compaction boundaries, so each request is composed from the
// same previous boundary; the responses must be identical request by request, and most requests must have had
// their carried rows left out (the pure extensions between compactions).
func TestCarryCacheComposesExactly(t *testing.T) {
	_, mem := realMemoryClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	id := playMysis(ctx, t, mem)

	obs, cached, whole := twoComposers(t, mem)
	s := histgen.RealPlay(11, 700, histgen.Personalities()[0])
	stored, carried := 0, 0
	for n, at := range s.Requests {
		stored = storeUpTo(ctx, t, mem, id, s.Rows, stored, at)
		req := &composerv1.ComposeContextRequest{MysisId: id}
		got, err := cached.ComposeContext(ctx, req)
		if err != nil {
			t.Fatalf("request %d (cached): %v", n, err)
		}
		want, err := whole.ComposeContext(ctx, req)
		if err != nil {
			t.Fatalf("request %d (whole): %v", n, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("request %d (seq %d): the composer holding carried rows composed another request than the one reading whole windows:\n got  %d messages, boundary %d, %d entries\n want %d messages, boundary %d, %d entries",
				n, s.Rows[at].Seq, len(got.GetMessages()), got.GetManifest().GetCompactionBoundarySeq(), len(got.GetManifest().GetEntries()),
				len(want.GetMessages()), want.GetManifest().GetCompactionBoundarySeq(), len(want.GetManifest().GetEntries()))
		}
		for _, e := range got.GetManifest().GetEntries() {
			if e.GetSeq() < got.GetManifest().GetCompactionBoundarySeq() && e.GetTokens() > 0 {
				carried++
				break
			}
		}
	}
	calls, omitted, derived, recent := obs.calls.Load(), obs.omitted.Load(), obs.derived.Load(), obs.recent.Load()
	t.Logf("%d requests over %d rows: carry_known sent %d times, carried rows left out %d times (%.0f%%), recent rows with them %d times, derived from the held seqs %d times; %d requests carried state",
		calls, len(s.Rows), obs.known.Load(), omitted, 100*float64(omitted)/float64(calls), recent, derived, carried)
	if recent != omitted {
		t.Fatalf("of %d windows that left the carried rows out, %d left the held recent rows out too: want all", omitted, recent)
	}
	if calls != int64(len(s.Requests)) || omitted*2 < calls || carried*2 < len(s.Requests) {
		t.Fatalf("%d of %d windows had their carried rows left out, %d requests carried state: want most of both", omitted, calls, carried)
	}
	// The windows read whole are the first, those after a new order (another objective) and those after a
	// compaction moved the start up: most of them after a compaction, each derived from the held seqs.
	if derived*2 < calls-omitted {
		t.Fatalf("of %d windows read whole, %d were derived from the held rows' seqs: want most", calls-omitted, derived)
	}
	if len(obs.misechoed) > 0 || int64(obs.echoed)*2 < obs.known.Load() {
		t.Fatalf("of %d carry_known, %d sent another size than the memory service reported (first: %v), %d echoed a size above 0: want none and most",
			obs.known.Load(), len(obs.misechoed), obs.misechoed[:min(3, len(obs.misechoed))], obs.echoed)
	}
}

// TestCarryCacheFollowsPolicy: a request overriding a field that decides the carried set (here carry_limit) is not
// answered from carried rows held under another value: carry_known is not sent, and the held rows are replaced.
func TestCarryCacheFollowsPolicy(t *testing.T) {
	_, mem := realMemoryClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := playMysis(ctx, t, mem)
	s := histgen.RealPlay(3, 120, histgen.Personalities()[2])
	var rows []*memoryv1.NewMemory
	for _, m := range s.Rows {
		rows = append(rows, newMemoryRow(m))
	}
	if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: rows}); err != nil {
		t.Fatal(err)
	}
	obs, cached, whole := twoComposers(t, mem)
	// compose composes with a carry_limit override (0: none) and reports whether carry_known was sent and the
	// carried rows left out.
	defaultLimit := int32(compose.DefaultPolicy().CarryLimit)
	compose := func(limit int32) (known, omitted bool) {
		t.Helper()
		req := &composerv1.ComposeContextRequest{MysisId: id}
		if limit > 0 {
			req.Policy = &composerv1.Policy{CarryLimit: proto.Int32(limit)}
		}
		k0, o0 := obs.known.Load(), obs.omitted.Load()
		got, err := cached.ComposeContext(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := whole.ComposeContext(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("carry_limit %d: composed another request than from the whole window", limit)
		}
		return obs.known.Load() > k0, obs.omitted.Load() > o0
	}
	// The first compose has no boundary yet, the second starts from the first's: then the recent part stays put.
	compose(0)
	compose(0)
	if known, omitted := compose(0); !known || !omitted {
		t.Fatalf("the same policy again: carry_known sent %v, omitted %v", known, omitted)
	}
	if known, _ := compose(2); known {
		t.Fatal("carry_limit 2 sent carry_known for rows held under the default carry_limit")
	}
	if known, _ := compose(2); !known {
		t.Fatal("carry_limit 2 again: the rows read under it were not held")
	}
	if known, _ := compose(0); known {
		t.Fatal("back to the default carry_limit: sent carry_known for rows held under carry_limit 2")
	}
	if known, _ := compose(defaultLimit); !known {
		t.Fatal("the default carry_limit given explicitly: the rows held under the default were not used")
	}
}

// TestCarryCacheEvicts: the held rows are bounded by bytes; a bound that holds one mysis's carried rows but not two
// keeps at most one, and a mysis whose rows were evicted is read whole.
func TestCarryCacheEvicts(t *testing.T) {
	_, mem := realMemoryClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := histgen.RealPlay(5, 150, histgen.Personalities()[0])
	var ids []string
	for range 3 {
		id := playMysis(ctx, t, mem)
		var rows []*memoryv1.NewMemory
		for _, m := range s.Rows {
			rows = append(rows, newMemoryRow(m))
		}
		if _, err := mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: id, Memories: rows}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The size of one mysis's carried rows, from a composer holding everything.
	obs := &observed{api: mem}
	big, err := grpcapi.New(memoryclient.New(obs), grpcapi.Options{Counter: cache(t), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append(append(ids, ids...), ids...) {
		if _, err := big.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id}); err != nil {
			t.Fatal(err)
		}
	}
	// The first compose of a mysis has no boundary yet and the second starts from it; the third is an extension.
	if obs.omitted.Load() != 3 {
		t.Fatalf("unbounded: %d of 3 third composes left the carried rows out", obs.omitted.Load())
	}
	weight := grpcapi.HeldCarryWeight(big, ids[0])
	if weight == 0 {
		t.Fatal("no carried rows held")
	}
	// What the debug listener reports (libs/server.PublishCaches): three myses held and remembered.
	if fills := fillsByName(big.CacheFills()); fills["composer.carries.myses"].Size != 3 || fills["composer.boundaries"].Size != 3 ||
		fills["composer.carries"].Size < int64(weight) || fills["composer.carries"].Bound != window.DefaultCarryCacheBytes {
		t.Fatalf("cache fills %+v, want 3 myses held (at least %d bytes of %d) and 3 boundaries", fills, weight, window.DefaultCarryCacheBytes)
	}
	obs = &observed{api: mem}
	small, err := grpcapi.New(memoryclient.New(obs), grpcapi.Options{Counter: cache(t), Logger: discardLogger(), CarryCacheBytes: int64(weight) * 3 / 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		for _, id := range ids {
			if _, err := small.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id}); err != nil {
				t.Fatal(err)
			}
		}
		if held := grpcapi.HeldCarries(small); held > 1 {
			t.Fatalf("a bound of 1.5 carries holds %d", held)
		}
	}
	if f := fillsByName(small.CacheFills())["composer.carries"]; f.Size > f.Bound || f.Bound != int64(weight)*3/2 {
		t.Fatalf("the bounded carry cache reports %d of %d bytes, want at most its bound %d", f.Size, f.Bound, int64(weight)*3/2)
	}
	// Unbounded, rounds 3 and 4 would leave the carried rows out 6 times; with room for one mysis, at most twice.
	if obs.omitted.Load() > 2 {
		t.Fatalf("%d composes reused held rows with room for one mysis's", obs.omitted.Load())
	}
	t.Logf("one carry weighs %d; with room for 1.5, %d of 12 composes reused held rows", weight, obs.omitted.Load())
}

func fillsByName(fills []composing.Fill) map[string]composing.Fill {
	out := map[string]composing.Fill{}
	for _, f := range fills {
		out[f.Name] = f
	}
	return out
}
