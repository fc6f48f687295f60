package composerclient_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/runner/internal/composerclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// recorder is a composer server that keeps the request it got and answers resp.
type recorder struct {
	composerv1.UnimplementedComposerServiceServer
	got  chan *composerv1.ComposeContextRequest
	resp *composerv1.ComposeContextResponse
}

func (r *recorder) ComposeContext(_ context.Context, req *composerv1.ComposeContextRequest) (*composerv1.ComposeContextResponse, error) {
	r.got <- req
	if r.resp != nil {
		return r.resp, nil
	}
	return &composerv1.ComposeContextResponse{}, nil
}

// serve starts rec on a free port and returns a client to it.
func serve(t *testing.T, rec *recorder) composerv1.ComposerServiceClient {
	t.Helper()
	srv := grpc.NewServer()
	composerv1.RegisterComposerServiceServer(srv, rec)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return composerv1.NewComposerServiceClient(conn)
}

// TestComposeSendsTools: the tools the request will carry reach the composer over real gRPC as the provider sees
// them (name, description, schema) — not the runner-only ReadOnly flag — so the composer can budget for them.
func TestComposeSendsTools(t *testing.T) {
	rec := &recorder{got: make(chan *composerv1.ComposeContextRequest, 1)}
	policy := &composerv1.Policy{TokenBudget: proto.Int32(4096)}
	c := composerclient.New(serve(t, rec), policy)
	tools := []llm.Tool{
		{Name: "get_status", Description: "Your ship and cargo.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`), ReadOnly: true},
		{Name: "zoea_search_messages", Description: "Search your memories.", Parameters: json.RawMessage(`{"type":"object","required":["query"]}`)},
		{Name: "undock"},
	}
	if _, err := c.Compose(context.Background(), "m-1", mysis.ComposeRequest{BeginAutonomousTurn: true, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	req := <-rec.got
	want := []*composerv1.ToolDefinition{
		{Name: "get_status", Description: "Your ship and cargo.", ParametersJson: `{"type":"object","properties":{}}`},
		{Name: "zoea_search_messages", Description: "Search your memories.", ParametersJson: `{"type":"object","required":["query"]}`},
		{Name: "undock", ParametersJson: `{}`},
	}
	if req.GetMysisId() != "m-1" || !req.GetBeginAutonomousTurn() || req.GetPolicy().GetTokenBudget() != 4096 || len(req.GetTools()) != len(want) {
		t.Fatalf("request: %v", req)
	}
	for i, w := range want {
		if !proto.Equal(req.GetTools()[i], w) {
			t.Errorf("tool %d: %v want %v", i, req.GetTools()[i], w)
		}
	}
	if composerclient.ToProtoTools(nil) != nil {
		t.Error("no tools should send none")
	}
}

// TestComposePassesTheCompactionBack: the previous composition's compaction goes out as previous_compaction (none
// when the actor knows none), and the response's manifest comes back as the composition's.
func TestComposePassesTheCompactionBack(t *testing.T) {
	rec := &recorder{got: make(chan *composerv1.ComposeContextRequest, 2), resp: &composerv1.ComposeContextResponse{
		Manifest: &composerv1.Manifest{CompactionBoundarySeq: 40, CompactionSeq: 57}}}
	c := composerclient.New(serve(t, rec), nil)
	comp, err := c.Compose(context.Background(), "m-1", mysis.ComposeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if req := <-rec.got; req.PreviousCompaction != nil {
		t.Fatalf("no previous compaction known, sent %v", req.GetPreviousCompaction())
	}
	if comp.Compaction != (mysis.Compaction{Boundary: 40, Seq: 57}) {
		t.Fatalf("composition's compaction %+v, want the manifest's 40/57", comp.Compaction)
	}
	if _, err := c.Compose(context.Background(), "m-1", mysis.ComposeRequest{Previous: comp.Compaction}); err != nil {
		t.Fatal(err)
	}
	if got := (<-rec.got).GetPreviousCompaction(); got.GetBoundarySeq() != 40 || got.GetCompactionSeq() != 57 {
		t.Fatalf("previous_compaction %v, want 40/57", got)
	}
}
