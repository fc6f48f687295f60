package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/server"
)

// rawCodec sends bytes as they are and receives them the same way, so a test can put on the wire what no
// generated client would: a proto3 string field that is not UTF-8.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

type swarmImpl struct {
	runnerv1.UnimplementedSwarmServiceServer
	calls atomic.Int32
}

func (s *swarmImpl) ConfigureMysis(context.Context, *runnerv1.ConfigureMysisRequest) (*runnerv1.ConfigureMysisResponse, error) {
	s.calls.Add(1)
	return &runnerv1.ConfigureMysisResponse{}, nil
}

type memoryImpl struct {
	memoryv1.UnimplementedMemoryServiceServer
	calls atomic.Int32
}

func (m *memoryImpl) AppendMemories(context.Context, *memoryv1.AppendMemoriesRequest) (*memoryv1.AppendMemoriesResponse, error) {
	m.calls.Add(1)
	return &memoryv1.AppendMemoriesResponse{}, nil
}

type busImpl struct {
	busv1.UnimplementedBusServiceServer
	calls atomic.Int32
}

func (b *busImpl) WatchEvents(*busv1.WatchEventsRequest, grpc.ServerStreamingServer[busv1.WatchEventsResponse]) error {
	b.calls.Add(1)
	return nil
}

// A request grpc-go cannot decode is the caller's fault: a string field that is not UTF-8 comes back as
// InvalidArgument naming the field (it was Internal, grpc-go's unmarshal error), on unary calls and streams of
// real Zoea services behind libs/server, and the handler never runs. Other garbage is InvalidArgument too.
func TestInvalidRequestsAreInvalidArgument(t *testing.T) {
	srv := server.New(server.Options{Name: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	swarm, bus, mem := &swarmImpl{}, &busImpl{}, &memoryImpl{}
	srv.Register(&runnerv1.SwarmService_ServiceDesc, swarm)
	srv.Register(&memoryv1.MemoryService_ServiceDesc, mem)
	srv.Register(&busv1.BusService_ServiceDesc, bus)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	badUTF8 := "scout\xff\xfe"
	unary := func(req []byte) error {
		var resp []byte
		return conn.Invoke(ctx, runnerv1.SwarmService_ConfigureMysis_FullMethodName, &req, &resp, grpc.ForceCodec(rawCodec{}))
	}
	appendMemories := func(req []byte) error {
		var resp []byte
		return conn.Invoke(ctx, memoryv1.MemoryService_AppendMemories_FullMethodName, &req, &resp, grpc.ForceCodec(rawCodec{}))
	}
	msg := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	stream := func(req []byte) error {
		s, err := conn.NewStream(ctx, &busv1.BusService_ServiceDesc.Streams[0], busv1.BusService_WatchEvents_FullMethodName, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		if err := s.SendMsg(&req); err != nil {
			return err
		}
		if err := s.CloseSend(); err != nil {
			return err
		}
		var resp []byte
		return s.RecvMsg(&resp)
	}
	for _, tc := range []struct {
		name  string
		call  func([]byte) error
		req   []byte
		field string
	}{
		{"unary: mysis", unary, str(1, badUTF8), "mysis"},
		{"unary: optional model", unary, append(str(1, "scout"), str(3, badUTF8)...), "model"},
		{"stream: repeated mysis_ids", stream, append(str(1, "m1"), str(1, badUTF8)...), "mysis_ids[1]"},
		{"unary: truncated message", unary, []byte{0x0a, 0x05, 's'}, ""},
		{"unary: nested, in the third memory's content", appendMemories,
			slices.Concat(str(1, "m1"), msg(2, str(4, "ok")), msg(2, str(4, "ok")), msg(2, slices.Concat(str(3, "cmd"), str(4, badUTF8)))),
			"memories[2].content"},
	} {
		err := tc.call(tc.req)
		st, _ := status.FromError(err)
		if st.Code() != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", tc.name, err)
			continue
		}
		var field string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				field = br.GetFieldViolations()[0].GetField()
			}
		}
		if field != tc.field {
			t.Errorf("%s: field %q, want %q (%v)", tc.name, field, tc.field, err)
		}
		if strings.Contains(st.Message(), "grpc:") || strings.Contains(st.Message(), "proto:") {
			t.Errorf("%s: message %q carries the library's text", tc.name, st.Message())
		}
	}
	if n := swarm.calls.Load() + bus.calls.Load() + mem.calls.Load(); n != 0 {
		t.Errorf("handlers ran %d times on undecodable requests", n)
	}
	// A well-formed request still reaches its handler.
	if err := unary(str(1, "scout")); err != nil || swarm.calls.Load() != 1 {
		t.Errorf("valid request: %v, %d calls", err, swarm.calls.Load())
	}
}

// An error that echoes a huge value (a 10 MB model name in "unknown model %q") still arrives as itself: the status
// message and the field violation are cut to 1 KiB each, at a rune boundary. Uncut, the two copies overflowed the
// HTTP/2 trailers and the caller saw "Unavailable: COMPRESSION_ERROR".
func TestHugeErrorMessagesAreCut(t *testing.T) {
	huge := strings.Repeat("é", 5<<20)
	desc := grpc.ServiceDesc{ServiceName: "zoea.test.v1.Echo", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{
		method("Echo", func() error { return errs.InvalidField("model", "unknown model %q", huge) }),
	}}
	srv := server.New(server.Options{Name: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv.Register(&desc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Invoke(ctx, "/zoea.test.v1.Echo/Echo", &emptypb.Empty{}, &emptypb.Empty{})
	st, _ := status.FromError(err)
	if st.Code() != codes.InvalidArgument || len(st.Message()) > 1<<10 || !utf8.ValidString(st.Message()) ||
		!strings.HasPrefix(st.Message(), "model: unknown model") {
		t.Fatalf("%v (%d bytes), want InvalidArgument 'model: unknown model …' of at most 1 KiB", st.Code(), len(st.Message()))
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			if v := br.GetFieldViolations()[0]; v.GetField() != "model" || len(v.GetDescription()) > 1<<10 || !utf8.ValidString(v.GetDescription()) {
				t.Errorf("field violation %q, %d bytes", v.GetField(), len(v.GetDescription()))
			}
		}
	}
}
