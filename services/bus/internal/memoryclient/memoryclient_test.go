package memoryclient_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/bus/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

// start serves the shared in-memory memory service (libs/testsupport/memfake, held to libs/testsupport/memorycontract like the real
// one) and returns it with the adapter over a real gRPC client of it.
func start(t *testing.T) (*memfake.Fake, *memoryclient.Client) {
	t.Helper()
	f := memfake.Start(t)
	return f, memoryclient.New(f.Client(t))
}

func TestMysisIDsReadsEveryPage(t *testing.T) {
	f, c := start(t)
	want := f.AddMyses("m", 2001) // three pages of at most 1000
	ids, err := c.MysisIDs(context.Background())
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("MysisIDs = %d ids, %v; want the %d myses in name order", len(ids), err, len(want))
	}
	if n := f.Calls("ListMyses"); n != 3 {
		t.Fatalf("%d ListMyses calls, want 3 pages", n)
	}
}

func TestAppendDirectStoresAUserRowUnderTheMessageKey(t *testing.T) {
	f, c := start(t)
	id := f.AddMyses("m", 1)[0]
	d := message.Direct{ID: "x1", MysisID: id, SenderID: "s", Content: "hi"}
	m, err := c.AppendDirect(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	rows := f.Memories(id)
	if len(rows) != 1 || rows[0].GetRole() != memoryv1.Role_ROLE_USER || rows[0].GetSource() != memoryv1.Source_SOURCE_DIRECT ||
		rows[0].GetIdempotencyKey() != "direct:x1" || rows[0].GetSenderId() != "s" || rows[0].GetContent() != "hi" {
		t.Fatalf("stored rows = %v", rows)
	}
	if m.ID != rows[0].GetId() || m.Seq != 1 || m.MysisID != id || m.Content != "hi" || m.IdempotencyKey != "direct:x1" || m.SenderID != "s" {
		t.Fatalf("returned = %+v", m)
	}
	// A redelivery returns the stored row and writes nothing.
	again, err := c.AppendDirect(context.Background(), d)
	if err != nil || again.ID != m.ID || len(f.Memories(id)) != 1 {
		t.Fatalf("redelivery = %+v, %v with %d rows", again, err, len(f.Memories(id)))
	}
}

// Delivery decides retry or drop on libs/errs kinds, so the adapter must turn statuses back into them.
func TestStatusesBecomeDomainErrors(t *testing.T) {
	f, c := start(t)
	id := f.AddMyses("m", 1)[0]
	direct := func(mysisID string) error {
		_, err := c.AppendDirect(context.Background(), message.Direct{ID: "x", MysisID: mysisID, Content: "hi"})
		return err
	}
	if err := direct("m"); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "mysis_id" {
		t.Errorf("a malformed mysis id became %v, want Invalid on mysis_id", err)
	}
	if err := direct(uuid.NewString()); !errs.Is(err, errs.NotFound) {
		t.Errorf("an unknown mysis became %v, want NotFound", err)
	}
	f.FailNext("AppendMemories", memfake.Fault{Code: codes.Unavailable})
	if err := direct(id); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Unavailable became %v", err)
	}
}
