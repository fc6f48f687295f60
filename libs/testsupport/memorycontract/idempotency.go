package memorycontract

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
)

// wantKeyReused checks that err is AlreadyExists with reason IDEMPOTENCY_KEY_REUSED naming field, whose message
// names what differs.
func wantKeyReused(t *testing.T, what string, err error, field, differs string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.AlreadyExists || reasonOf(err) != errs.ReasonIdempotencyKeyReused {
		t.Errorf("%s: %v (reason %q), want AlreadyExists with reason %s", what, err, reasonOf(err), errs.ReasonIdempotencyKeyReused)
		return
	}
	if got := fieldOf(err); got != field {
		t.Errorf("%s: field %q, want %q (%v)", what, got, field, err)
	}
	if !strings.Contains(st.Message(), differs) {
		t.Errorf("%s: message %q does not name %q", what, st.Message(), differs)
	}
}

// testKeyReuse: an idempotency key sent again with other content — any field the caller chose — is refused, naming
// the key's field and what differs, and nothing of the call is written: the stored row is unchanged and the batch's
// other memories are not appended. The same key with the same content is still a retry that returns the stored row
// (issue 41, finding 4).
func testKeyReuse(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("reuse"))
	asst := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "Checking.",
		Reasoning: "need status", IdempotencyKey: "llm:1",
		ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "get_status", ArgumentsJson: `{}`}}}
	first := appendOK(t, c, m.GetId(), userMemory("Mine iron.", "direct:1"), asst)
	result := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, Content: `{"credits":10}`,
		ToolCallId: "c1", ToolName: "get_status", IdempotencyKey: "tool:1:c1"}
	stored := appendOK(t, c, m.GetId(), result)[0]

	change := func(base *memoryv1.NewMemory, f func(*memoryv1.NewMemory)) *memoryv1.NewMemory {
		n := proto.Clone(base).(*memoryv1.NewMemory)
		f(n)
		return n
	}
	for _, tc := range []struct {
		what    string
		memory  *memoryv1.NewMemory
		differs string
	}{
		{"other content", userMemory("Sell iron.", "direct:1"), "content"},
		{"other sender", change(userMemory("Mine iron.", "direct:1"), func(n *memoryv1.NewMemory) { n.SenderId = m.GetId() }), "sender_id"},
		{"other source", change(userMemory("Mine iron.", "direct:1"), func(n *memoryv1.NewMemory) { n.Source = memoryv1.Source_SOURCE_BROADCAST }), "source"},
		{"other reasoning", change(asst, func(n *memoryv1.NewMemory) { n.Reasoning = "bored" }), "reasoning"},
		{"other tool arguments", change(asst, func(n *memoryv1.NewMemory) { n.ToolCalls[0].ArgumentsJson = `{"x":1}` }), "tool_calls[0].arguments"},
		{"one more tool call", change(asst, func(n *memoryv1.NewMemory) {
			n.ToolCalls = append(n.ToolCalls, &memoryv1.ToolCall{Id: "c2", Name: "mine", ArgumentsJson: `{}`})
		}), "tool_calls"},
		{"another tool result", change(result, func(n *memoryv1.NewMemory) { n.Content = `{"credits":99}` }), "content"},
	} {
		// The reused key comes second in its batch: the fresh memory before it must not be appended either.
		fresh := userMemory("A fresh order.", "direct:fresh-"+uuid.NewString()[:8])
		_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: []*memoryv1.NewMemory{fresh, tc.memory}})
		wantKeyReused(t, tc.what, err, "memories[1].idempotency_key", tc.differs)
	}
	// A conditional append with a reused key is refused the same way, before its condition is looked at.
	seen := int64(0)
	_, err := c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), IfNoPromptAfterSeq: &seen,
		Memories: []*memoryv1.NewMemory{change(asst, func(n *memoryv1.NewMemory) { n.Content = "Other." })}})
	wantKeyReused(t, "a conditional append", err, "memories[0].idempotency_key", "content")

	// The originals are untouched and nothing else was written.
	resp, err := c.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), FromSeq: 1, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetMemories(); len(got) != 3 || got[0].GetContent() != "Mine iron." || got[1].GetReasoning() != "need status" ||
		got[1].GetToolCalls()[0].GetArgumentsJson() != `{}` || got[2].GetContent() != `{"credits":10}` {
		t.Errorf("after the refused appends the history is %v", got)
	}
	// The same content under the same key is a retry: the stored rows come back, in request order.
	again := appendOK(t, c, m.GetId(), result, userMemory("Mine iron.", "direct:1"), asst)
	if again[0].GetId() != stored.GetId() || again[1].GetId() != first[0].GetId() || again[2].GetId() != first[1].GetId() {
		t.Errorf("a retry returned %v, want the stored rows", again)
	}
	// A tool result that leaves its call's arguments to the store is a retry whether or not it repeats them.
	withArgs := change(result, func(n *memoryv1.NewMemory) { n.CallArgumentsJson = `{}` })
	if r := appendOK(t, c, m.GetId(), withArgs); r[0].GetId() != stored.GetId() {
		t.Errorf("the result with its call's arguments spelled out is not a retry: %v", r[0])
	}
}

// testBroadcastKeyReuse: a broadcast_id sent again with another content or sender is refused naming broadcast_id,
// nothing is delivered and the recorded broadcast is unchanged; the same broadcast again (to more myses, too) is a
// retry (issue 41, finding 4).
func testBroadcastKeyReuse(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	a, b := newMysis(t, c, uniqueName("bcreuse")), newMysis(t, c, uniqueName("bcreuse"))
	bid := uuid.NewString()
	req := &memoryv1.RecordBroadcastRequest{BroadcastId: bid, Content: "Regroup at Sol.", TargetMysisIds: []string{a.GetId()}}
	if _, err := c.RecordBroadcast(ctx, req); err != nil {
		t.Fatal(err)
	}
	other := proto.Clone(req).(*memoryv1.RecordBroadcastRequest)
	other.Content, other.TargetMysisIds = "Scatter!", []string{a.GetId(), b.GetId()}
	_, err := c.RecordBroadcast(ctx, other)
	wantKeyReused(t, "other content", err, "broadcast_id", "content")
	other = proto.Clone(req).(*memoryv1.RecordBroadcastRequest)
	other.SenderId = a.GetId()
	other.TargetMysisIds = []string{b.GetId()}
	_, err = c.RecordBroadcast(ctx, other)
	wantKeyReused(t, "another sender", err, "broadcast_id", "sender_id")
	// b got nothing, a kept the original.
	if r := appendOK(t, c, b.GetId(), userMemory("after", "")); r[0].GetSeq() != 1 {
		t.Errorf("a refused broadcast was delivered: b's next seq is %d", r[0].GetSeq())
	}
	resp, err := c.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: a.GetId(), FromSeq: 1, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetMemories(); len(got) != 1 || got[0].GetContent() != "Regroup at Sol." {
		t.Errorf("a's history after the refused broadcasts: %v", got)
	}
	// The same broadcast to more myses is a retry: delivered where missing.
	retry := proto.Clone(req).(*memoryv1.RecordBroadcastRequest)
	retry.TargetMysisIds = []string{a.GetId(), b.GetId()}
	r, err := c.RecordBroadcast(ctx, retry)
	if err != nil || r.GetBroadcast().GetContent() != "Regroup at Sol." || r.GetDeliveredCount() != 1 || r.GetAlreadyDeliveredCount() != 1 {
		t.Errorf("a retry to more myses = %v, %v", r, err)
	}
}
