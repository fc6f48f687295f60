package grpcapi_test

import (
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memorycontract"
)

// TestContractUsageTop: the real service's top myses by cost (GetUsageRequest.top).
func TestContractUsageTop(t *testing.T) {
	c, _ := start(t, dbURL, true)
	memorycontract.RunUsageTop(t, func(*testing.T) memoryv1.MemoryServiceClient { return c })
}
