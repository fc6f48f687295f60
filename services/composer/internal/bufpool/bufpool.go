// Package bufpool is the composer's gRPC buffer pool, installed with experimental.SetDefaultBufferPool so that the
// proto codec uses it too.
//
// A compose window is tens to hundreds of kilobytes, and so is a response. gRPC's default pool has tiers of 256 B,
// 4, 16 and 32 KiB and 1 MiB, and zeroes the whole buffer on every Get, so each message above 32 KiB costs clearing
// a full megabyte: about a tenth of the composer's CPU per call, measured. This pool has a tier for every power of
// two from 4 KiB to 64 MiB and hands buffers out without zeroing. gRPC copies a received message over the first
// length bytes before anything reads them, a marshalled message is written over its first length bytes, and nothing
// reads beyond length — the reasoning behind gRPC's own (internal) dirty pools.
package bufpool

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

const (
	minShift = 12 // 4 KiB
	maxShift = 26 // 64 MiB
)

// Pool implements mem.BufferPool.
type Pool struct {
	tiers [maxShift - minShift + 1]sync.Pool
}

var _ mem.BufferPool = (*Pool)(nil)

// New returns an empty pool.
func New() *Pool { return &Pool{} }

func shiftFor(n int) int {
	if n <= 1<<minShift {
		return minShift
	}
	return bits.Len(uint(n - 1))
}

// Get returns a buffer of the given length; its contents are unspecified.
func (p *Pool) Get(length int) *[]byte {
	s := shiftFor(length)
	if s > maxShift {
		b := make([]byte, length)
		return &b
	}
	if b, ok := p.tiers[s-minShift].Get().(*[]byte); ok {
		*b = (*b)[:length]
		return b
	}
	b := make([]byte, length, 1<<s)
	return &b
}

// Put returns a buffer obtained from Get; others are left to the garbage collector.
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minShift || c&(c-1) != 0 {
		return
	}
	s := bits.Len(uint(c)) - 1
	if s > maxShift {
		return
	}
	*b = (*b)[:0]
	p.tiers[s-minShift].Put(b)
}
