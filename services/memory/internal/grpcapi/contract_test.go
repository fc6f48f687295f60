package grpcapi_test

import (
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memorycontract"
)

// The real service, on Postgres and with its secret key set (the account calls need it), defines the contract every
// fake of the memory API is held to: the same suite runs against libs/testkit/memfake.
func TestContract(t *testing.T) {
	c, _ := start(t, dbURL, true)
	memorycontract.Run(t, func(*testing.T) memoryv1.MemoryServiceClient { return c }, memorycontract.All...)
}
