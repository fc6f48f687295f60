package memorycontract

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// testRange: ListMemoriesRange returns the memories with from_seq <= seq <= to_seq (to_seq 0: no upper bound),
// oldest first, at most limit of them.
func testRange(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("range"))
	for i := range 5 {
		appendOK(t, c, m.GetId(), userMemory(fmt.Sprintf("order %d", i+1), ""))
	}
	list := func(from, to int64, limit int32) []int64 {
		t.Helper()
		resp, err := c.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), FromSeq: from, ToSeq: to, Limit: limit})
		if err != nil {
			t.Fatalf("ListMemoriesRange(%d, %d, %d): %v", from, to, limit, err)
		}
		for _, r := range resp.GetMemories() {
			if r.GetMysisId() != m.GetId() || r.GetContent() != fmt.Sprintf("order %d", r.GetSeq()) {
				t.Errorf("row %v: not the mysis's memory of its seq", r)
			}
		}
		return seqs(resp.GetMemories())
	}
	for _, tc := range []struct {
		from, to int64
		limit    int32
		want     string
	}{
		{2, 4, 0, "[2 3 4]"}, {3, 0, 0, "[3 4 5]"}, {0, 0, 2, "[1 2]"}, {4, 4, 0, "[4]"}, {6, 0, 0, "[]"}, {1, 9, 1000000, "[1 2 3 4 5]"},
	} {
		if got := fmt.Sprint(list(tc.from, tc.to, tc.limit)); got != tc.want {
			t.Errorf("range %d–%d limit %d = seqs %s, want %s", tc.from, tc.to, tc.limit, got, tc.want)
		}
	}
	for _, tc := range []struct {
		what, field string
		req         *memoryv1.ListMemoriesRangeRequest
	}{
		{"a negative from_seq", "from_seq", &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), FromSeq: -1}},
		{"a negative to_seq", "to_seq", &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), ToSeq: -1}},
		{"to_seq below from_seq", "to_seq", &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), FromSeq: 3, ToSeq: 2}},
		{"a negative limit", "limit", &memoryv1.ListMemoriesRangeRequest{MysisId: m.GetId(), Limit: -1}},
		{"a malformed mysis id", "mysis_id", &memoryv1.ListMemoriesRangeRequest{MysisId: "nope"}},
	} {
		_, err := c.ListMemoriesRange(ctx, tc.req)
		wantInvalid(t, tc.what, err, tc.field)
	}
	_, err := c.ListMemoriesRange(ctx, &memoryv1.ListMemoriesRangeRequest{MysisId: uuid.NewString()})
	wantCode(t, "ListMemoriesRange of an unknown mysis", err, codes.NotFound)
}

// testGetMemory: GetMemory returns one memory of one mysis by its id; another mysis's id is NotFound.
func testGetMemory(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m, other := newMysis(t, c, uniqueName("getmem")), newMysis(t, c, uniqueName("getmem"))
	rows := appendOK(t, c, m.GetId(), userMemory("Mine iron ore.", "k1"),
		&memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "On my way.", Reasoning: "iron sells",
			ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "mine", ArgumentsJson: `{"ore":"iron"}`}}})
	got, err := c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: m.GetId(), MemoryId: rows[1].GetId()})
	if err != nil {
		t.Fatal(err)
	}
	g := got.GetMemory()
	if g.GetId() != rows[1].GetId() || g.GetSeq() != 2 || g.GetContent() != "On my way." || g.GetReasoning() != "iron sells" ||
		len(g.GetToolCalls()) != 1 || g.GetToolCalls()[0].GetArgumentsJson() != `{"ore":"iron"}` || g.GetRole() != memoryv1.Role_ROLE_ASSISTANT {
		t.Errorf("GetMemory = %v, want the stored assistant memory %v", g, rows[1])
	}
	if first, err := c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: m.GetId(), MemoryId: rows[0].GetId()}); err != nil ||
		first.GetMemory().GetIdempotencyKey() != "k1" || first.GetMemory().GetSeq() != 1 {
		t.Errorf("GetMemory of the first row = %v, %v", first.GetMemory(), err)
	}
	_, err = c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: other.GetId(), MemoryId: rows[0].GetId()})
	wantCode(t, "GetMemory of another mysis's memory", err, codes.NotFound)
	_, err = c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: m.GetId()})
	wantInvalid(t, "GetMemory without a memory id", err, "memory_id")
	_, err = c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: m.GetId(), MemoryId: -5})
	wantInvalid(t, "GetMemory with a negative memory id", err, "memory_id")
	_, err = c.GetMemory(ctx, &memoryv1.GetMemoryRequest{MysisId: "nope", MemoryId: rows[0].GetId()})
	wantInvalid(t, "GetMemory with a malformed mysis id", err, "mysis_id")
}

// testDeliverBroadcast: DeliverBroadcast delivers a recorded broadcast to more myses, once per mysis, and answers
// every target's delivery row in request order (duplicates once).
func testDeliverBroadcast(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	a, b := newMysis(t, c, uniqueName("deliver")), newMysis(t, c, uniqueName("deliver"))
	bid := uuid.NewString()
	if _, err := c.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{BroadcastId: bid, Content: "Regroup at Sol.", TargetMysisIds: []string{a.GetId()}}); err != nil {
		t.Fatal(err)
	}
	deliver := func(ids ...string) *memoryv1.DeliverBroadcastResponse {
		t.Helper()
		resp, err := c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: bid, MysisIds: ids})
		if err != nil {
			t.Fatalf("DeliverBroadcast: %v", err)
		}
		return resp
	}
	resp := deliver(b.GetId(), a.GetId(), b.GetId())
	if resp.GetDeliveredCount() != 1 || resp.GetAlreadyDeliveredCount() != 1 || len(resp.GetMemories()) != 2 {
		t.Fatalf("first delivery = %v; want b delivered, a already, two rows", resp)
	}
	for i, want := range []*memoryv1.Mysis{b, a} {
		r := resp.GetMemories()[i]
		if r.GetMysisId() != want.GetId() || r.GetBroadcastId() != bid || r.GetContent() != "Regroup at Sol." || r.GetSeq() != 1 ||
			r.GetRole() != memoryv1.Role_ROLE_USER || r.GetSource() != memoryv1.Source_SOURCE_BROADCAST {
			t.Errorf("row %d = %v, want %s's delivery (seq 1)", i, r, want.GetName())
		}
	}
	again := deliver(a.GetId(), b.GetId())
	if again.GetDeliveredCount() != 0 || again.GetAlreadyDeliveredCount() != 2 || len(again.GetMemories()) != 2 ||
		again.GetMemories()[1].GetId() != resp.GetMemories()[0].GetId() {
		t.Errorf("retried delivery = %v; want nothing new and the stored rows", again)
	}
	if r := appendOK(t, c, b.GetId(), userMemory("after", "")); r[0].GetSeq() != 2 {
		t.Errorf("b's seq after the delivery = %d, want 2 (one row)", r[0].GetSeq())
	}
	_, err := c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: uuid.NewString(), MysisIds: []string{a.GetId()}})
	wantCode(t, "DeliverBroadcast of an unknown broadcast", err, codes.NotFound)
	_, err = c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: bid, MysisIds: []string{a.GetId(), uuid.NewString()}})
	wantCode(t, "DeliverBroadcast to an unknown mysis", err, codes.NotFound)
	_, err = c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: bid})
	wantInvalid(t, "DeliverBroadcast without targets", err, "mysis_ids")
	_, err = c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: bid, MysisIds: []string{a.GetId(), "nope"}})
	wantInvalid(t, "DeliverBroadcast to a malformed id", err, "mysis_ids[1]")
	_, err = c.DeliverBroadcast(ctx, &memoryv1.DeliverBroadcastRequest{BroadcastId: "nope", MysisIds: []string{a.GetId()}})
	wantInvalid(t, "DeliverBroadcast of a malformed broadcast id", err, "broadcast_id")
	if r := appendOK(t, c, a.GetId(), userMemory("after", "")); r[0].GetSeq() != 2 {
		t.Errorf("a's seq after refused deliveries = %d, want 2", r[0].GetSeq())
	}
}
