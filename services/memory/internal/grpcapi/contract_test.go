package grpcapi_test

import (
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memorycontract"
)

// The real service, on Postgres, defines the contract every fake of the memory API is held to: the same suite runs
// against the bus's memfake and the other fakes.
func TestContract(t *testing.T) {
	c, _ := start(t, dbURL, false)
	memorycontract.Run(t, func(*testing.T) memoryv1.MemoryServiceClient { return c })
}
