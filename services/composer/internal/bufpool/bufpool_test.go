package bufpool_test

import (
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/bufpool"
)

func TestGetPut(t *testing.T) {
	p := bufpool.New()
	for _, n := range []int{0, 1, 4096, 4097, 50_000, 1 << 20, 3<<20 + 5, 1 << 27} {
		b := p.Get(n)
		if len(*b) != n || cap(*b) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(*b), cap(*b))
		}
		if n > 0 && n <= 1<<26 && cap(*b) >= 2*max(n, 4096) {
			t.Fatalf("Get(%d): cap %d wastes more than a tier", n, cap(*b))
		}
		p.Put(b)
		again := p.Get(n)
		if len(*again) != n {
			t.Fatalf("second Get(%d): len %d", n, len(*again))
		}
	}
	odd := make([]byte, 5000)
	p.Put(&odd) // not a pool buffer: dropped, no panic
}
