package grpcapi_test

import (
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/testsupport/memorycontract"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
)

// The real service, on Postgres and with its secret key set (the account calls need it), defines the contract every
// fake of the memory API is held to: the same suite runs against libs/testsupport/memfake. It has a database of its
// own: its Usage cases add to the swarm's spend counts, which TestUsageOverGRPC checks in the package's database.
func TestContract(t *testing.T) {
	c, _ := start(t, pgtest.New(t), true)
	memorycontract.Run(t, func(*testing.T) memoryv1.MemoryServiceClient { return c }, memorycontract.All...)
}
