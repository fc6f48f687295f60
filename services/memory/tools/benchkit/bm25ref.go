package benchkit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The BM25 reference: exhaustive Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + 0.5)/(df + 0.5)), document
// length in tokens) over exactly the documents message search reads — every memory's content_tsv, nudges left
// out — with each question's lexemes as Postgres's 'english' configuration makes them (to_tsvector of the
// question: stemmed, stop words dropped), every lexeme optional. It scores every document, so nothing is left out
// for being old: the yardstick the engine's recall is held against. Benchmark only.

const refK1, refB = 1.2, 0.75

// bm25Ref holds one mysis's postings for the lexemes some question uses.
type bm25Ref struct {
	seqs     []int64
	lens     []float64
	avgdl    float64
	postings map[string][]refPosting
}

type refPosting struct {
	doc int32
	tf  float64
}

// queryLexemes returns the lexemes to_tsvector('english', …) makes of each text (the engine's own preprocessing
// of JSON escapes included).
func queryLexemes(ctx context.Context, pool *pgxpool.Pool, texts []string) ([][]string, error) {
	rows, err := pool.Query(ctx, `
		SELECT (SELECT coalesce(array_agg(l.lexeme ORDER BY l.lexeme), '{}') FROM unnest(to_tsvector('english', zoea_fts_text(t))) l)
		FROM unnest($1::text[]) WITH ORDINALITY u(t, i) ORDER BY i`, texts)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var ls []string
		if err := rows.Scan(&ls); err != nil {
			return nil, err
		}
		out = append(out, ls)
	}
	return out, rows.Err()
}

// loadBM25Ref streams the mysis's vectors and keeps the postings of want's lexemes.
func loadBM25Ref(ctx context.Context, pool *pgxpool.Pool, mysisID string, want map[string]bool) (*bm25Ref, error) {
	rows, err := pool.Query(ctx, `SELECT seq, content_tsv::text FROM memories
		WHERE mysis_id = $1 AND content_tsv IS NOT NULL AND source <> 3 ORDER BY seq`, mysisID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ref := &bm25Ref{postings: map[string][]refPosting{}}
	var total float64
	for rows.Next() {
		var seq int64
		var tsv string
		if err := rows.Scan(&seq, &tsv); err != nil {
			return nil, err
		}
		doc := int32(len(ref.seqs))
		dl := 0.0
		err := parseTSVector(tsv, func(lex string, tf int) {
			dl += float64(tf)
			if want[lex] {
				ref.postings[lex] = append(ref.postings[lex], refPosting{doc: doc, tf: float64(tf)})
			}
		})
		if err != nil {
			return nil, fmt.Errorf("memory seq %d: %w", seq, err)
		}
		ref.seqs = append(ref.seqs, seq)
		ref.lens = append(ref.lens, dl)
		total += dl
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ref.seqs) > 0 {
		ref.avgdl = total / float64(len(ref.seqs))
	}
	return ref, nil
}

// parseTSVector calls f with every lexeme of a tsvector's text form ('lex':1,5B 'other' …) and its number of
// positions (1 for a lexeme stored without positions).
func parseTSVector(s string, f func(lex string, tf int)) error {
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '\'' {
			return fmt.Errorf("tsvector: unexpected %q at %d", s[i], i)
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(s); j++ {
			if s[j] == '\'' {
				if j+1 < len(s) && s[j+1] == '\'' {
					b.WriteByte('\'')
					j++
					continue
				}
				break
			}
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			b.WriteByte(s[j])
		}
		j++ // closing quote
		tf := 1
		if j < len(s) && s[j] == ':' {
			k := j + 1
			for k < len(s) && s[k] != ' ' {
				k++
			}
			tf = strings.Count(s[j+1:k], ",") + 1
			j = k
		}
		f(b.String(), tf)
		i = j
	}
	return nil
}

// search returns the seqs of the best k documents for lexemes, best first (ties: newest first).
func (r *bm25Ref) search(lexemes []string, k int) []int64 {
	n := float64(len(r.seqs))
	scores := map[int32]float64{}
	for _, l := range lexemes {
		ps := r.postings[l]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			norm := refK1 * (1 - refB + refB*r.lens[p.doc]/r.avgdl)
			scores[p.doc] += idf * p.tf * (refK1 + 1) / (p.tf + norm)
		}
	}
	docs := make([]int32, 0, len(scores))
	for d := range scores {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b int32) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	out := make([]int64, 0, min(k, len(docs)))
	for _, d := range docs[:min(k, len(docs))] {
		out = append(out, r.seqs[d])
	}
	return out
}

// orQuery writes a question as OR keywords for websearch_to_tsquery ("when or did or caroline …"): how a caller
// of the old engine had to write it to get any hit.
func orQuery(q string) string {
	var words []string
	for _, w := range strings.FieldsFunc(q, func(r rune) bool {
		return !(r == '_' || r == '\'' || strconv.IsPrint(r) && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127))
	}) {
		if w = strings.Trim(w, "'"); w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " or ")
}
