// Package o200k counts tokens exactly as OpenAI's o200k_base encoding (GPT-4o and later) does, fast enough to run on
// every compose call.
//
// The vocabulary comes from github.com/tiktoken-go/tokenizer, which embeds it in the binary, so nothing is downloaded
// at run time. That library splits text with a backtracking regular-expression engine, which costs about 0.5 µs per
// byte — several milliseconds for one get_system result, far too slow for a composer that must answer in well under
// a millisecond. This package replaces the split with a hand-written scanner that implements the same pattern
// (including its backtracking and look-ahead corner cases) and runs byte-pair merging over the same ranks. Tests
// compare it with the library on generated and real-looking text; a fuzz test keeps them in agreement.
package o200k

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Tokenizer counts o200k_base tokens. It is immutable after Load and safe for concurrent use.
type Tokenizer struct {
	ranks *vocab
	// firstNewline reproduces a bug of the reference library's generated matcher, which backs \s* off to the FIRST
	// newline of a white-space run instead of the last. Only tests set it, to prove the rest of the scanner exact.
	firstNewline bool
}

// maxTokenID bounds the scan of the reference vocabulary; o200k_base's ordinary tokens are 0..199997.
const maxTokenID = 200_000

// load builds the rank table once per process: decoding every token id of the reference codec gives each token's
// bytes, and the id is its merge rank.
var load = sync.OnceValues(func() (*Tokenizer, error) {
	ref := codec.NewO200kBase()
	v := newVocab(maxTokenID)
	for id := range uint(maxTokenID) {
		b, err := ref.Decode([]uint{id})
		if err != nil {
			v.skip() // gaps in the id space are special tokens or unused
			continue
		}
		v.add(b)
	}
	v.done()
	if v.n < 199_000 {
		return nil, fmt.Errorf("o200k: vocabulary has only %d tokens", v.n)
	}
	return &Tokenizer{ranks: v}, nil
})

// vocab maps token bytes to merge ranks with no pointer per token. A map[string]uint32 holds 200,000 strings that
// the garbage collector marks on every cycle of a busy server — more work than the composer's own garbage — and
// costs two cache misses per lookup (the map slot, then the key's bytes). Here the bytes live in one string and the
// index is an open-addressing table of 16-byte slots holding a hash tag, the length and the first 8 bytes, so most
// lookups (pieces and merge candidates are short) touch one cache line and never the bytes.
type vocab struct {
	blob  string   // every token's bytes, in rank order
	off   []uint32 // token r is blob[off[r]:off[r+1]]; ids with no token have an empty range
	slots []slot   // power-of-two size, at most half full
	mask  uint64
	long  map[string]uint32 // tokens longer than maxSlotLen (none in o200k_base; kept for safety)
	n     int               // tokens

	sb strings.Builder // blob while building
}

// slot is one entry of the index; tag 0 marks an empty slot (a real tag has the length, >= 1, in its low byte).
type slot struct {
	tag  uint32 // hash bits 40..63 << 8 | length
	rank uint32
	w0   uint64 // the first 8 bytes, zero-padded
}

const maxSlotLen = 255

func newVocab(size int) *vocab {
	v := &vocab{off: make([]uint32, 1, size+1)}
	v.sb.Grow(size * 8)
	return v
}

// add appends the token of the next rank.
func (v *vocab) add(tok string) {
	v.sb.WriteString(tok)
	v.off = append(v.off, uint32(v.sb.Len()))
	v.n++
}

// skip leaves the next rank without a token.
func (v *vocab) skip() { v.off = append(v.off, uint32(v.sb.Len())) }

// done builds the index.
func (v *vocab) done() {
	v.blob = v.sb.String()
	v.sb = strings.Builder{}
	size := 1
	for size < 2*v.n {
		size <<= 1
	}
	v.slots = make([]slot, size)
	v.mask = uint64(size - 1)
	for r := 0; r+1 < len(v.off); r++ {
		tok := v.blob[v.off[r]:v.off[r+1]]
		switch {
		case tok == "":
			continue
		case len(tok) > maxSlotLen:
			if v.long == nil {
				v.long = map[string]uint32{}
			}
			v.long[tok] = uint32(r)
			continue
		}
		h, w0 := hashPiece(tok)
		i := h & v.mask
		for v.slots[i].tag != 0 {
			i = (i + 1) & v.mask
		}
		v.slots[i] = slot{tag: tagOf(h, len(tok)), rank: uint32(r), w0: w0}
	}
}

func tagOf(h uint64, n int) uint32 { return uint32(h>>40)<<8 | uint32(n) }

// rank returns the merge rank of the token with bytes s.
func (v *vocab) rank(s string) (uint32, bool) {
	if len(s) == 0 || len(s) > maxSlotLen {
		if v.long != nil {
			r, ok := v.long[s]
			return r, ok
		}
		return 0, false
	}
	h, w0 := hashPiece(s)
	tag := tagOf(h, len(s))
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		sl := &v.slots[i]
		if sl.tag == 0 {
			return 0, false
		}
		if sl.tag == tag && sl.w0 == w0 && (len(s) <= 8 || v.blob[v.off[sl.rank]+8:v.off[sl.rank+1]] == s[8:]) {
			return sl.rank, true
		}
	}
}

// hashPiece hashes s (inline, no seed: the table is fixed, so no input can lengthen its probe chains) and returns
// its first 8 bytes, zero-padded.
func hashPiece(s string) (h, w0 uint64) {
	const k1, k2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
	h = uint64(len(s)) * k1
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		if i == 0 {
			w0 = w
		}
		h = (h ^ w) * k2
		h ^= h >> 29
	}
	if i < len(s) {
		w := pack(s[i:])
		if i == 0 {
			w0 = w
		}
		h = (h ^ w) * k2
		h ^= h >> 29
	}
	h *= k1
	return h ^ h>>32, w0
}

func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// Load returns the process-wide tokenizer, building it on first use (about 100 ms).
func Load() (*Tokenizer, error) {
	return load()
}

// Count returns the number of o200k_base tokens in s. Invalid UTF-8 is counted as the reference does: each invalid
// byte becomes U+FFFD.
func (t *Tokenizer) Count(s string) int {
	return t.count(s, nil)
}

// Counter counts many strings with one tokenizer, remembering the token count of every short piece it has seen.
// Structured tool results repeat the same pieces (`":"`, `iron`, `_ore`) hundreds of times; a memo that stays in
// cache answers them several times faster than the 200k-entry vocabulary. Pieces of at most 8 bytes (nearly all of
// them) are remembered in a direct-mapped table keyed by their bytes, one probe and no hashing of a string; longer
// ones in a map. A Counter is for one goroutine and one short task (a compose call); it holds no state that changes
// a result.
type Counter struct {
	tok   *Tokenizer
	memo  map[string]int
	small *[smallSlots]smallPiece
}

// smallPiece is a remembered piece of at most 8 bytes: its bytes (zero-padded) and, in info, its length << 8 | its
// token count; info 0 marks an empty slot (a piece has at least one byte).
type smallPiece struct {
	w    uint64
	info uint32
}

// smallSlots is the size of a Counter's direct-mapped table (16 KiB: it stays in the L1 cache).
const smallSlots = 1 << 10

// maxMemoPiece bounds the pieces a Counter remembers, so that a huge result cannot make the memo huge.
const maxMemoPiece = 24

// NewCounter returns a Counter backed by t.
func (t *Tokenizer) NewCounter() *Counter {
	return &Counter{tok: t, memo: make(map[string]int, 64), small: new([smallSlots]smallPiece)}
}

// Count returns the number of o200k_base tokens in s.
func (c *Counter) Count(s string) int {
	return c.tok.count(s, c)
}

// Pieces returns how many pieces the Counter remembers in its map (its direct-mapped table has a fixed size), so a
// long-lived owner can drop a Counter whose memo grew too big.
func (c *Counter) Pieces() int {
	return len(c.memo)
}

// PrefixLen is Tokenizer.PrefixLen.
func (c *Counter) PrefixLen(s string, n int) int {
	return c.tok.PrefixLen(s, n)
}

// count counts s, remembering pieces in ctr's memo when ctr is not nil.
func (t *Tokenizer) count(s string, ctr *Counter) int {
	s = sanitize(s)
	n := 0
	var buf []int
	for p := 0; p < len(s); {
		e := nextPiece(s, p, t.firstNewline)
		piece := s[p:e]
		p = e
		var sp *smallPiece
		var w uint64
		switch {
		case ctr == nil || len(piece) > maxMemoPiece:
		case len(piece) <= 8:
			w = pack(piece)
			sp = &ctr.small[((w^uint64(len(piece))<<60)*0x9E3779B97F4A7C15)>>54]
			if sp.w == w && int(sp.info>>8) == len(piece) {
				n += int(sp.info & 0xff)
				continue
			}
		default:
			if k, ok := ctr.memo[piece]; ok {
				n += k
				continue
			}
		}
		k := 1
		if _, ok := t.ranks.rank(piece); !ok {
			buf = t.merge(piece, buf[:0])
			k = len(buf) - 1
		}
		switch {
		case sp != nil:
			*sp = smallPiece{w: w, info: uint32(len(piece))<<8 | uint32(k)}
		case ctr != nil && len(piece) <= maxMemoPiece:
			ctr.memo[strings.Clone(piece)] = k // a slice of s would keep all of s alive as long as the memo
		}
		n += k
	}
	return n
}

// pack returns the bytes of s (at most 8) as a little-endian word, zero-padded.
func pack(s string) uint64 {
	if len(s) == 8 {
		return load64(s, 0)
	}
	var w uint64
	for i := len(s) - 1; i >= 0; i-- {
		w = w<<8 | uint64(s[i])
	}
	return w
}

// PrefixLen returns the byte length of the longest prefix of s made of at most n whole tokens, moved back to a rune
// boundary so the prefix is valid UTF-8 whenever s is. s must be valid UTF-8 (callers sanitize first); otherwise the
// offsets would refer to the replaced text.
func (t *Tokenizer) PrefixLen(s string, n int) int {
	if n <= 0 {
		return 0
	}
	used := 0
	var buf []int
	for p := 0; p < len(s); {
		e := nextPiece(s, p, t.firstNewline)
		piece := s[p:e]
		if _, ok := t.ranks.rank(piece); ok {
			if used+1 > n {
				return p
			}
			used++
			p = e
			continue
		}
		buf = t.merge(piece, buf[:0])
		k := len(buf) - 1
		if used+k > n {
			cut := p + buf[n-used]
			for cut > p && !utf8.RuneStart(s[cut]) {
				cut--
			}
			return cut
		}
		used += k
		p = e
	}
	return len(s)
}

func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s)) // one U+FFFD per invalid byte, as the reference's rune conversion does
}

// ---- byte-pair merge ----

const noRank = ^uint32(0)

// merge appends to bounds the token boundaries of piece (0, …, len(piece)) after byte-pair merging by rank, lowest
// rank first and leftmost on ties — tiktoken's rule.
func (t *Tokenizer) merge(piece string, bounds []int) []int {
	if len(piece) > 64 {
		return t.mergeHeap(piece, bounds)
	}
	type part struct {
		start int
		rank  uint32 // rank of piece[start : start of the part after next]
	}
	var stack [65]part
	parts := stack[:0]
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{start: i, rank: noRank})
	}
	rankAt := func(i int) uint32 {
		if i+2 >= len(parts) {
			return noRank
		}
		if r, ok := t.ranks.rank(piece[parts[i].start:parts[i+2].start]); ok {
			return r
		}
		return noRank
	}
	for i := range len(parts) - 2 {
		parts[i].rank = rankAt(i)
	}
	for len(parts) > 2 {
		best, bi := noRank, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < best {
				best, bi = parts[i].rank, i
			}
		}
		if bi < 0 {
			break
		}
		parts = append(parts[:bi+1], parts[bi+2:]...)
		parts[bi].rank = rankAt(bi)
		if bi > 0 {
			parts[bi-1].rank = rankAt(bi - 1)
		}
	}
	for _, p := range parts {
		bounds = append(bounds, p.start)
	}
	return bounds
}

// mergeHeap is merge for long pieces (a run of thousands of letters or symbols), where the quadratic scan would take
// seconds: a heap of candidate pairs with lazy invalidation gives the same result in O(n log n).
func (t *Tokenizer) mergeHeap(piece string, bounds []int) []int {
	n := len(piece)
	next := make([]int, n+1)
	prev := make([]int, n+1)
	ver := make([]uint32, n+1)
	alive := make([]bool, n+1)
	for i := 0; i <= n; i++ {
		next[i], prev[i], alive[i] = i+1, i-1, true
	}
	h := make(pairHeap, 0, n)
	push := func(i int) {
		j := next[i]
		if i >= n || j >= n {
			return
		}
		k := next[j]
		if r, ok := t.ranks.rank(piece[i:k]); ok {
			h.push(pairItem{rank: r, start: i, ver: ver[i]})
		}
	}
	for i := 0; i < n; i++ {
		push(i)
	}
	for len(h) > 0 {
		it := h.pop()
		i := it.start
		if !alive[i] || it.ver != ver[i] {
			continue
		}
		j := next[i]
		alive[j] = false
		next[i] = next[j]
		if next[j] <= n {
			prev[next[j]] = i
		}
		ver[i]++
		push(i)
		if p := prev[i]; p >= 0 {
			ver[p]++
			push(p)
		}
	}
	for i := 0; i <= n; i = next[i] {
		bounds = append(bounds, i)
	}
	return bounds
}

type pairItem struct {
	rank  uint32
	start int
	ver   uint32
}

// pairHeap is a binary min-heap ordered by (rank, start), written out rather than through container/heap to avoid
// boxing every item.
type pairHeap []pairItem

func (h pairHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}

func (h *pairHeap) push(it pairItem) {
	*h = append(*h, it)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *pairHeap) pop() pairItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// ---- pre-tokenizer ----
//
// o200k_base splits text with this pattern before merging (alternatives tried in order, first match wins):
//
//	1 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	3 \p{N}{1,3}
//	4  ?[^\s\p{L}\p{N}]+[\r\n/]*
//	5 \s*[\r\n]+
//	6 \s+(?!\S)
//	7 \s+
//
// \s is unicode.IsSpace, as in the reference engine. Every position matches some alternative, so the pieces tile
// the text.

// class bits of a rune.
const (
	cU    = 1 << iota // Lu Lt Lm Lo M: the "upper" run of 1 and 2
	cW                // Ll Lm Lo M: the "lower" run of 1 and 2
	cL                // any letter
	cN                // any number
	cS                // white space
	cCRLF             // \r or \n

	multiByte = 0xff // byteClass: not an ASCII byte (no rune has every class bit)
)

// byteClass is classOf for every ASCII byte, and multiByte for a byte that starts or continues a longer rune: almost
// every byte of a tool result is ASCII, and one load classes it.
var byteClass = func() (t [256]uint8) {
	for b := range t {
		switch r := rune(b); {
		case r >= utf8.RuneSelf:
			t[b] = multiByte
		case 'a' <= r && r <= 'z':
			t[b] = cW | cL
		case 'A' <= r && r <= 'Z':
			t[b] = cU | cL
		case '0' <= r && r <= '9':
			t[b] = cN
		case r == '\r' || r == '\n':
			t[b] = cS | cCRLF
		case r == ' ' || r == '\t' || r == '\v' || r == '\f':
			t[b] = cS
		}
	}
	return t
}()

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return byteClass[r]
	}
	var c uint8
	switch {
	case unicode.IsLetter(r):
		c = cL
		switch {
		case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
			c |= cU
		case unicode.Is(unicode.Ll, r):
			c |= cW
		default: // Lm, Lo
			c |= cU | cW
		}
	case unicode.Is(unicode.M, r):
		c = cU | cW
	case unicode.IsNumber(r):
		c = cN
	}
	if unicode.IsSpace(r) {
		c |= cS
	}
	return c
}

// at returns the class and the width of the rune at byte offset p (p < len(s)).
func at(s string, p int) (c uint8, w int) {
	if c = byteClass[s[p]]; c == multiByte {
		return atRune(s[p:])
	}
	return c, 1
}

// classAt is at's class alone.
func classAt(s string, p int) uint8 {
	c, _ := at(s, p)
	return c
}

// atRune is at for a rune outside ASCII. (The call keeps at itself over the compiler's inlining budget, which is why
// the run loop, span, classes ASCII bytes itself.)
func atRune(s string) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s)
	return classOf(r), w
}

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(c uint8) bool { return c&(cCRLF|cL|cN) == 0 }

// isOther is [^\s\p{L}\p{N}].
func isOther(c uint8) bool { return c&(cS|cL|cN) == 0 }

// nextPiece returns the end of the piece that starts at p.
func nextPiece(s string, p int, firstNewline bool) int {
	c0, w0 := at(s, p)
	// Alternatives 1 and 2 need a letter or mark, at p or after a prefix at p. The optional prefix is greedy, so try
	// with it first.
	prefixed := isPrefix(c0) && p+w0 < len(s)
	if c0&(cU|cW) != 0 || prefixed && classAt(s, p+w0)&(cU|cW) != 0 {
		if prefixed {
			if e := lettersLower(s, p+w0); e >= 0 {
				return e
			}
		}
		if e := lettersLower(s, p); e >= 0 {
			return e
		}
		if prefixed {
			if e := lettersUpper(s, p+w0); e >= 0 {
				return e
			}
		}
		if e := lettersUpper(s, p); e >= 0 {
			return e
		}
	}
	// Alternative 3.
	if c0&cN != 0 {
		e := p + w0
		for k := 1; k < 3 && e < len(s); k++ {
			c, w := at(s, e)
			if c&cN == 0 {
				break
			}
			e += w
		}
		return e
	}
	// Alternative 4 (its optional space is atomic: taken, it is never given back).
	q := p
	if s[p] == ' ' {
		q = p + 1
	}
	if q < len(s) {
		if c, w := at(s, q); isOther(c) {
			e := span(s, q+w, cS|cL|cN, false)
			for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
				e++
			}
			return e
		}
	}
	// Alternatives 5–7: c0 is white space here.
	e, lastNL, runes, lastW := p, -1, 0, 0
	for e < len(s) {
		c, w := at(s, e)
		if c&cS == 0 {
			break
		}
		if c&cCRLF != 0 && (lastNL < 0 || !firstNewline) {
			lastNL = e
		}
		runes++
		lastW = w
		e += w
	}
	switch {
	case runes == 0:
		return p + w0 // unreachable: every rune is a letter, number, space or other
	case lastNL >= 0 && firstNewline:
		e = lastNL
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	case lastNL >= 0:
		return lastNL + 1 // 5: \s* backs off to the last newline of the run
	case e == len(s) || runes == 1:
		return e // 6 at end of text, or 7
	default:
		return e - lastW // 6: leave the last space to prefix the next piece
	}
}

// lettersLower matches alternative 1 without its prefix, from q: a greedy upper run, backed off until a lower run of
// at least one rune can follow. It returns the end, or -1.
func lettersLower(s string, q int) int {
	e := span(s, q, cU, true)
	for {
		if e < len(s) {
			if c, _ := at(s, e); c&cW != 0 {
				break
			}
		}
		if e == q {
			return -1
		}
		_, w := utf8.DecodeLastRuneInString(s[q:e])
		e -= w
	}
	return contraction(s, span(s, e, cW, true))
}

// lettersUpper matches alternative 2 without its prefix, from q: one or more upper, then any lower.
func lettersUpper(s string, q int) int {
	e := span(s, q, cU, true)
	if e == q {
		return -1
	}
	return contraction(s, span(s, e, cW, true))
}

// span returns the end of the run of runes from p whose class has a bit of mask (in) or has none of them (!in).
// ASCII bytes are classed in the loop itself, with no call: these runs are where the scanner spends its time.
func span(s string, p int, mask uint8, in bool) int {
	for p < len(s) {
		c, w := byteClass[s[p]], 1
		if c == multiByte {
			c, w = atRune(s[p:])
		}
		if (c&mask != 0) != in {
			break
		}
		p += w
	}
	return p
}

// contraction extends e over an optional (?i:'s|'t|'re|'ve|'m|'ll|'d); the reference engine's case folding also
// lets ſ (U+017F) stand for s.
func contraction(s string, e int) int {
	if e >= len(s) || s[e] != '\'' {
		return e
	}
	rest := s[e+1:]
	if len(rest) == 0 {
		return e
	}
	lower := func(b byte) byte { return b | 0x20 }
	switch lower(rest[0]) {
	case 's', 't', 'm', 'd':
		return e + 2
	case 'r':
		if len(rest) > 1 && lower(rest[1]) == 'e' {
			return e + 3
		}
	case 'v':
		if len(rest) > 1 && lower(rest[1]) == 'e' {
			return e + 3
		}
	case 'l':
		if len(rest) > 1 && lower(rest[1]) == 'l' {
			return e + 3
		}
	}
	if r, w := utf8.DecodeRuneInString(rest); r == 'ſ' {
		return e + 1 + w
	}
	return e
}
