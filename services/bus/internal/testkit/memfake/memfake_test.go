package memfake_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memorycontract"
	"github.com/zoeaswarm/zoea/services/bus/internal/testkit/memfake"
)

// The fake keeps the real service's contract for the RPCs it implements (the memory service runs the same suite
// against Postgres).
func TestContract(t *testing.T) {
	memorycontract.Run(t, func(t *testing.T) memoryv1.MemoryServiceClient {
		f := memfake.Start(t)
		conn, err := grpc.NewClient(f.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return memoryv1.NewMemoryServiceClient(conn)
	}, memorycontract.Myses, memorycontract.Append, memorycontract.Broadcast)
}
