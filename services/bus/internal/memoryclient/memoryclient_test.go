package memoryclient_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/memoryclient"
)

// fakeAPI pages ListMyses two at a time and refuses or stores direct messages.
type fakeAPI struct {
	memoryv1.MemoryServiceClient // unimplemented methods panic: the adapter must not call them
	myses                        []string
	appendErr                    error
	got                          *memoryv1.AppendMemoriesRequest
}

func (f *fakeAPI) ListMyses(_ context.Context, in *memoryv1.ListMysesRequest, _ ...grpc.CallOption) (*memoryv1.ListMysesResponse, error) {
	start := 0
	if in.GetPageToken() != "" {
		start = len(in.GetPageToken())
	}
	end := min(start+2, len(f.myses))
	resp := &memoryv1.ListMysesResponse{}
	for _, id := range f.myses[start:end] {
		resp.Myses = append(resp.Myses, &memoryv1.Mysis{Id: id})
	}
	if end < len(f.myses) {
		resp.NextPageToken = string(make([]byte, end))
	}
	return resp, nil
}

func (f *fakeAPI) AppendMemories(_ context.Context, in *memoryv1.AppendMemoriesRequest, _ ...grpc.CallOption) (*memoryv1.AppendMemoriesResponse, error) {
	f.got = in
	if f.appendErr != nil {
		return nil, f.appendErr
	}
	nm := in.GetMemories()[0]
	return &memoryv1.AppendMemoriesResponse{Memories: []*memoryv1.Memory{{Id: 9, Seq: 4, MysisId: in.GetMysisId(),
		Role: nm.GetRole(), Source: nm.GetSource(), Content: nm.GetContent(), IdempotencyKey: nm.GetIdempotencyKey()}}}, nil
}

func TestMysisIDsReadsEveryPage(t *testing.T) {
	api := &fakeAPI{myses: []string{"a", "b", "c", "d", "e"}}
	ids, err := memoryclient.New(api).MysisIDs(context.Background())
	if err != nil || !slices.Equal(ids, api.myses) {
		t.Fatalf("MysisIDs = %v, %v", ids, err)
	}
}

func TestAppendDirectStoresAUserRowUnderTheMessageKey(t *testing.T) {
	api := &fakeAPI{}
	m, err := memoryclient.New(api).AppendDirect(context.Background(), swarmbus.Direct{ID: "x1", MysisID: "m", SenderID: "s", Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	nm := api.got.GetMemories()[0]
	if nm.GetRole() != memoryv1.Role_ROLE_USER || nm.GetSource() != memoryv1.Source_SOURCE_DIRECT || nm.GetIdempotencyKey() != "direct:x1" || nm.GetSenderId() != "s" {
		t.Fatalf("request = %v", api.got)
	}
	if m.ID != 9 || m.Seq != 4 || m.MysisID != "m" || m.Content != "hi" || m.IdempotencyKey != "direct:x1" {
		t.Fatalf("stored = %+v", m)
	}
}

// Delivery decides retry or drop on libs/errs kinds, so the adapter must turn statuses back into them.
func TestStatusesBecomeDomainErrors(t *testing.T) {
	for code, kind := range map[codes.Code]errs.Kind{codes.InvalidArgument: errs.Invalid, codes.NotFound: errs.NotFound, codes.Unavailable: errs.Unavailable} {
		api := &fakeAPI{appendErr: status.Error(code, "no")}
		if _, err := memoryclient.New(api).AppendDirect(context.Background(), swarmbus.Direct{ID: "x", MysisID: "m", Content: "hi"}); !errs.Is(err, kind) {
			t.Errorf("%s became %v, want %v", code, err, kind)
		}
	}
}
