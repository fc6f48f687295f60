package memfake_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/libs/testsupport/memorycontract"
)

// The fake keeps the whole contract of the real service (the memory service runs the same suite against Postgres).
func TestContract(t *testing.T) {
	memorycontract.Run(t, func(t *testing.T) memoryv1.MemoryServiceClient {
		return memoryv1.NewMemoryServiceClient(dial(t, memfake.Start(t)))
	}, memorycontract.All...)
}

func dial(t *testing.T, f *memfake.Fake) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(f.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
