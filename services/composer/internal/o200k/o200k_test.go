package o200k

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// reference is the library codec whose behaviour this package must reproduce.
var reference = sync.OnceValue(codec.NewO200kBase)

func mustLoad(tb testing.TB) *Tokenizer {
	tb.Helper()
	tok, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// mustLoadCompat returns a tokenizer that reproduces the reference library's white-space bug (see firstNewline), so
// that everything else can be compared with the library exactly.
func mustLoadCompat(tb testing.TB) *Tokenizer {
	tok := mustLoad(tb)
	return &Tokenizer{ranks: tok.ranks, firstNewline: true}
}

// The vocabulary index: every token found with its rank, near misses (prefixes, extensions, one byte changed, past
// the inline 8 bytes) not found.
func TestVocabIndex(t *testing.T) {
	toks := []string{"iron", "_ore", "copper", "abcdefgh", "abcdefghi", "abcdefghijklmnopq", strings.Repeat("x", 300)}
	v := newVocab(len(toks) + 1)
	for i, tok := range toks {
		if i == 2 {
			v.skip()
		}
		v.add(tok)
	}
	v.done()
	for i, tok := range toks {
		want := uint32(i)
		if i >= 2 {
			want++
		}
		if r, ok := v.rank(tok); !ok || r != want {
			t.Errorf("rank(%q) = %d, %v; want %d", tok, r, ok, want)
		}
	}
	for _, s := range []string{"", "irons", "iro", "coppes", "abcdefg", "abcdefgi", "abcdefghj", "abcdefghijklmnopr",
		"abcdefghijklmnop", strings.Repeat("x", 299), "\x00iron"} {
		if r, ok := v.rank(s); ok {
			t.Errorf("rank(%q) = %d for a string that is no token", s, r)
		}
	}
	tok := mustLoad(t)
	if tok.ranks.n < 199_000 || tok.ranks.long != nil {
		t.Errorf("o200k_base: %d tokens, %d longer than %d bytes", tok.ranks.n, len(tok.ranks.long), maxSlotLen)
	}
}

// TestTrueTiktokenWhitespace pins the cases where the reference library and OpenAI's tiktoken disagree; the expected
// pieces were produced by js-tiktoken (standard backtracking regular expressions) on o200k_base.
func TestTrueTiktokenWhitespace(t *testing.T) {
	tok := mustLoad(t)
	for _, tc := range []struct {
		s    string
		want int
	}{
		{" \n \n x", 2}, // " \n \n" + " x"
		{" \n \n", 1},
		{"a \n\n \n b", 4}, // "a" + " \n\n \n" (two tokens) + " b"
		{"x\n \n\ty", 3},   // "x" + "\n \n" + "\ty"
		{"\r\n\u0301,", 3},
	} {
		if got := tok.Count(tc.s); got != tc.want {
			t.Errorf("Count(%q) = %d, tiktoken %d", tc.s, got, tc.want)
		}
	}
}

func refCount(tb testing.TB, s string) int {
	tb.Helper()
	n, err := reference().Count(s)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// samples cover each alternative of the split pattern and their awkward corners.
var samples = []string{
	"", "a", " ", "hello world", "Hello World", "HELLO world", "HELLOworld", "helloWORLD", "ABC", "ABC def",
	"don't", "DON'T", "they're we've I'm you'll he'd it's IT'S x'S", "o'ſ", "rock'n'roll", "'s", "a'", "a're",
	"12345678", "3.14159", "1,000,000", "x1y22z333w4444", "٣٤٥ numbers", "Ⅻ roman",
	"   leading", "trailing   ", "a  b   c", "a\tb", "\t\thello", "line1\nline2", "line1\r\n\r\nline2", " \n \n x",
	"  \n", "\n\n\n", "x \n y", "a\u00a0b", "a\u3000b", "\u0085x",
	`{"id":"poi_1","name":"Asteroid Field","resources":["iron_ore","copper_ore"],"distance":12.5}`,
	"path/to/file\n", "!!!", "??\n\n", " /// ", "a//b", "---\n", "(hello)", "((hello", "[x]", "<|endoftext|>",
	"日本語のテキスト", "中文混合English文本", "Ünïcödé Çafé", "ǅemal ǈubljana", "ʰʲ modifier", "e\u0301\u0302 marks",
	"\u0301start", "x \u0301y", "🚀 rocket 🚀🚀", "emoji👍🏽ok", "Привет, МИР!", "ΑΒΓ αβγ", "한국어 텍스트",
	"mixedCASEWordsLikeThisOne", "snake_case_identifier", "CONSTANT_VALUE_42", "a" + strings.Repeat("b", 300),
	strings.Repeat("ab", 200), strings.Repeat(" ", 100) + "x", strings.Repeat("!", 150), strings.Repeat("€", 80),
	"session_id: 0f3a9c2e-77b1-4c1d-9e0a-3b5d6f7a8b9c", "[TOOL_CALLS]id:name:{\"a\":\"b|c\"}|",
}

func TestCountMatchesReference(t *testing.T) {
	tok := mustLoadCompat(t)
	for _, s := range samples {
		if got, want := tok.Count(s), refCount(t, s); got != want {
			t.Errorf("Count(%q) = %d, reference %d", s, got, want)
		}
	}
}

// randomText mixes the character classes the pattern distinguishes, so the generated strings hit its corners far
// more often than natural text does.
func randomText(r *rand.Rand, n int) string {
	atoms := []string{"a", "Z", "é", "É", "ǅ", "ʰ", "中", "\u0301", "7", "٣", "Ⅻ", " ", "  ", "\t", "\n", "\r\n", "\u00a0",
		"'", "'s", "'LL", "'re", "ſ", "/", "!", "{", "\"", ":", ",", ".", "_", "-", "🚀", "\U0001F3FD", "the", " the",
		"HTTP", "Json", "iron_ore", "0x1f", "\v", "\f", "\u2028", "\u0085"}
	var b strings.Builder
	for range n {
		b.WriteString(atoms[r.IntN(len(atoms))])
	}
	return b.String()
}

func TestCountMatchesReferenceRandom(t *testing.T) {
	tok := mustLoadCompat(t)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		s := randomText(r, 1+r.IntN(40))
		if i%100 == 0 {
			s = randomText(r, 400)
		}
		if got, want := tok.Count(s), refCount(t, s); got != want {
			t.Fatalf("Count(%q) = %d, reference %d", s, got, want)
		}
	}
}

func TestCountInvalidUTF8(t *testing.T) {
	tok := mustLoadCompat(t)
	for _, s := range []string{"\xff", "a\xffb", "\xe2\x82", "ok \xc3( x"} {
		if got, want := tok.Count(s), refCount(t, s); got != want {
			t.Errorf("Count(%q) = %d, reference %d", s, got, want)
		}
	}
}

func TestPrefixLen(t *testing.T) {
	tok := mustLoad(t)
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		s := randomText(r, 1+r.IntN(60))
		total := tok.Count(s)
		for n := 0; n <= total+1; n++ {
			k := tok.PrefixLen(s, n)
			if k < 0 || k > len(s) || !utf8.ValidString(s[:k]) {
				t.Fatalf("PrefixLen(%q,%d)=%d: not a valid prefix", s, n, k)
			}
			if n >= total && k != len(s) {
				t.Fatalf("PrefixLen(%q,%d)=%d, want whole string", s, n, k)
			}
		}
	}
	// On plain ASCII text the prefix of n tokens re-tokenizes to n tokens or fewer.
	s := `{"system":"sol","pois":[{"id":"p1","kind":"asteroid_belt"},{"id":"p2","kind":"station"}]}`
	for n := range tok.Count(s) {
		if c := tok.Count(s[:tok.PrefixLen(s, n)]); c > n {
			t.Fatalf("prefix of %d tokens counts %d", n, c)
		}
	}
}

func FuzzCountMatchesReference(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	tok := mustLoadCompat(f)
	// One Counter across inputs, so its memo holds earlier inputs' pieces when it counts the next one.
	var mu sync.Mutex
	ctr := tok.NewCounter()
	f.Fuzz(func(t *testing.T, s string) {
		// The reference's generated matcher also skips DEL (U+007F) entirely, which tiktoken counts as a token.
		if len(s) > 2000 || strings.ContainsRune(s, 0x7f) {
			return
		}
		got, want := tok.Count(s), refCount(t, s)
		if got != want {
			t.Fatalf("Count(%q) = %d, reference %d", s, got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if c := ctr.Count(s); c != got {
			t.Fatalf("Counter.Count(%q) = %d, Count %d", s, c, got)
		}
	})
}

func benchText() string {
	var sb strings.Builder
	for i := range 60 {
		fmt.Fprintf(&sb, `{"id":"poi_%d","name":"Asteroid Field %d","type":"asteroid_belt","resources":["iron_ore","copper_ore"],"distance":%d.5},`, i, i, i*13)
	}
	return sb.String()
}

func BenchmarkCount(b *testing.B) {
	tok := mustLoad(b)
	s := benchText()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		tok.Count(s)
	}
}

func BenchmarkReferenceCount(b *testing.B) {
	ref := reference()
	s := benchText()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_, _ = ref.Count(s)
	}
}

func BenchmarkCounter(b *testing.B) {
	c := mustLoad(b).NewCounter()
	s := benchText()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		c.Count(s)
	}
}

func TestCounterMatchesTokenizer(t *testing.T) {
	tok := mustLoad(t)
	c := tok.NewCounter()
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		s := randomText(r, 1+r.IntN(80))
		if a, b := c.Count(s), tok.Count(s); a != b {
			t.Fatalf("Counter %d, Tokenizer %d for %q", a, b, s)
		}
	}
	// Pieces that differ only in trailing NUL bytes pack to the same word; their lengths tell them apart. Pieces of
	// 1–8 bytes, and past 8 into the map, all counted by one Counter.
	for _, s := range []string{"!", "!\x00", "!\x00\x00", "\x00", "\x00\x00\x00", "!!!!!!!!", "!!!!!!!!!", "        x", "abcdefgh", "abcdefghi"} {
		for range 2 {
			if a, b := c.Count(s), tok.Count(s); a != b {
				t.Fatalf("Counter %d, Tokenizer %d for %q", a, b, s)
			}
		}
	}
	if c.Pieces() == 0 {
		t.Fatal("no piece of more than 8 bytes was remembered in the map")
	}
	// Whatever slot a piece lands in, an entry for another piece is not taken for it: with every slot holding "!"
	// (one token), "!\x00" (the same packed word, two bytes) and "?" are still counted.
	c = tok.NewCounter()
	for i := range c.small {
		c.small[i] = smallPiece{w: pack("!"), info: 1<<8 | 1}
	}
	for _, s := range []string{"!\x00", "!\x00\x00\x00", "?", "!"} {
		if a, b := c.Count(s), tok.Count(s); a != b {
			t.Errorf("Counter %d, Tokenizer %d for %q with every slot holding \"!\"", a, b, s)
		}
	}
}
