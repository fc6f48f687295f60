package tokcache_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/zoeaswarm/zoea/services/composer/internal/o200k"
	"github.com/zoeaswarm/zoea/services/composer/internal/tokcache"
)

func load(tb testing.TB) *o200k.Tokenizer {
	tb.Helper()
	tok, err := o200k.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

func text(r *rand.Rand, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"poi_%d","resources":[`, i)
	for range 1 + r.IntN(30) {
		fmt.Fprintf(&b, `"ore_%d",`, r.IntN(1000))
	}
	b.WriteString(`"x"], "note":"  spaced\n\n  text ü 東京"}`)
	return b.String()
}

// Counts are the tokenizer's, cached or not, from many goroutines at once (run with -race).
func TestCountsMatchTokenizerConcurrently(t *testing.T) {
	tok := load(t)
	c := tokcache.New(tok, 64) // tiny: generations turn over constantly
	r := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, 300)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = text(r, i)
		if i%7 == 0 {
			texts[i] = texts[i][:i%29] // short texts bypass the cache
		}
		want[i] = tok.Count(texts[i])
	}
	var wg sync.WaitGroup
	errc := make(chan string, 4)
	for g := range 4 {
		wg.Go(func() {
			for k := range 3000 {
				i := (k*7 + g*13) % len(texts)
				if got := c.Count(texts[i]); got != want[i] {
					errc <- fmt.Sprintf("Count(%q) = %d, want %d", texts[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for e := range errc {
		t.Fatal(e)
	}
	st := c.Stats()
	if st.Hits == 0 || st.Misses == 0 || st.Entries > 64 {
		t.Fatalf("stats %+v: want hits, misses and at most 64 entries", st)
	}
}

// Equal lengths, one byte apart: distinct keys.
func TestSameLengthTextsDoNotShareCounts(t *testing.T) {
	tok := load(t)
	c := tokcache.New(tok, 0)
	a := strings.Repeat("iron_ore ", 10) + "1234"
	b := strings.Repeat("iron_ore ", 10) + "12 4"
	if c.Count(a) != tok.Count(a) || c.Count(b) != tok.Count(b) || c.Count(a) != tok.Count(a) {
		t.Fatal("cache confused two texts of the same length")
	}
	if tok.Count(a) == tok.Count(b) {
		t.Fatal("test texts should differ in token count")
	}
}

func TestPrefixLenIsTokenizers(t *testing.T) {
	tok := load(t)
	c := tokcache.New(tok, 0)
	s := text(rand.New(rand.NewPCG(3, 4)), 1)
	for n := range 40 {
		if c.PrefixLen(s, n) != tok.PrefixLen(s, n) {
			t.Fatalf("PrefixLen(%d) differs", n)
		}
	}
}

func BenchmarkCountHit(b *testing.B) {
	c := tokcache.New(load(b), 0)
	s := text(rand.New(rand.NewPCG(5, 6)), 1)
	s = strings.Repeat(s, 8)
	c.Count(s)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		c.Count(s)
	}
}

func BenchmarkCountMiss(b *testing.B) {
	tok := load(b)
	s := text(rand.New(rand.NewPCG(5, 6)), 1)
	s = strings.Repeat(s, 8)
	ctr := tok.NewCounter()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		ctr.Count(s)
	}
}
