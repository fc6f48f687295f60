package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/services/composer/internal/grpcapi"
	"github.com/zoeaswarm/zoea/services/composer/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

// previousOf is the previous_compaction a caller passes back after resp.
func previousOf(resp *composerv1.ComposeContextResponse) *composerv1.Compaction {
	m := resp.GetManifest()
	return &composerv1.Compaction{BoundarySeq: m.GetCompactionBoundarySeq(), CompactionSeq: m.GetCompactionSeq()}
}

// TestReplicasComposeAsOne plays a generated session into the real memory service and composes every request three
// ways: by one composer (the reference), by two replicas taking turns with each request passing back the previous
// response's compaction (previous_compaction, as the runner does), and by two replicas taking turns without it. The
// second must compose exactly the reference's requests, so a fleet behind round-robin keeps the provider's prompt
// cache as warm as one composer; the third shows why the field exists: each replica starts from the boundary it
// saw two requests earlier, and its requests stop extending each other.
func TestReplicasComposeAsOne(t *testing.T) {
	_, mem := realMemoryClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	id := playMysis(ctx, t, mem)
	newComposer := func() *grpcapi.Service {
		s, err := grpcapi.New(memoryclient.New(mem), grpcapi.Options{Counter: cache(t), Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	one := newComposer()
	echoed := [2]*grpcapi.Service{newComposer(), newComposer()}
	forgetful := [2]*grpcapi.Service{newComposer(), newComposer()}

	s := histgen.RealPlay(5, 300, histgen.Personalities()[1])
	stored, differ, moves := 0, 0, 0
	var prev, prevWant *composerv1.ComposeContextResponse
	for n, at := range s.Requests {
		stored = storeUpTo(ctx, t, mem, id, s.Rows, stored, at)
		want, err := one.ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id})
		if err != nil {
			t.Fatalf("request %d (one composer): %v", n, err)
		}
		req := &composerv1.ComposeContextRequest{MysisId: id}
		if prev != nil {
			req.PreviousCompaction = previousOf(prev)
		}
		got, err := echoed[n%2].ComposeContext(ctx, req)
		if err != nil {
			t.Fatalf("request %d (replica %d, previous_compaction passed): %v", n, n%2, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("request %d: replica %d, given the previous response's compaction (%v), composed another request than one composer: boundary %d/%d, %d messages; want %d/%d, %d messages",
				n, n%2, req.GetPreviousCompaction(), got.GetManifest().GetCompactionBoundarySeq(), got.GetManifest().GetCompactionSeq(), len(got.GetMessages()),
				want.GetManifest().GetCompactionBoundarySeq(), want.GetManifest().GetCompactionSeq(), len(want.GetMessages()))
		}
		alone, err := forgetful[n%2].ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id})
		if err != nil {
			t.Fatalf("request %d (replica %d, nothing passed): %v", n, n%2, err)
		}
		if !proto.Equal(alone, want) {
			differ++
		}
		if prevWant != nil && want.GetManifest().GetCompactionBoundarySeq() != prevWant.GetManifest().GetCompactionBoundarySeq() {
			moves++
		}
		prev, prevWant = got, want
	}
	t.Logf("%d requests, %d boundary moves; replicas taking turns without previous_compaction composed %d of them differently", len(s.Requests), moves, differ)
	if moves == 0 || differ == 0 {
		t.Fatalf("%d boundary moves, %d requests composed differently without previous_compaction: the session does not exercise the replicas' stale boundaries", moves, differ)
	}
}
