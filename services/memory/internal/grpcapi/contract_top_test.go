package grpcapi_test

import (
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memorycontract"
	"github.com/zoeaswarm/zoea/libs/pgtest"
)

// TestContractUsageTop: the real service's top myses by cost (GetUsageRequest.top). Its own database: the calls it
// records count in the swarm-wide spend that other tests of this package read exactly.
func TestContractUsageTop(t *testing.T) {
	c, _ := start(t, pgtest.New(t), true)
	memorycontract.RunUsageTop(t, func(*testing.T) memoryv1.MemoryServiceClient { return c })
}
