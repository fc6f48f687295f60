package memory

import (
	"strings"
	"unicode"
)

// Search text as models and people write it. A query is read as:
//   - words, each optional: a memory matches when it holds any of them, and BM25 ranks it by how many, how rare and
//     how often (the store's job). Stop words and question words (when, did, the, …) are dropped by Postgres's
//     'english' configuration in the store; "or" between words is accepted and changes nothing;
//   - "quoted phrases": required, in order, and scored as words too; when no memory holds one, its words alone (the
//     answer's note says so: a model quoting a title it remembers approximately still finds it);
//   - -word and -"phrase": memories holding them are left out;
//   - identifiers (iron_ore, view_market): their words side by side are required, as a phrase (so copper_ore finds
//     "copper ore" too, and "copper ore" as two words finds copper_ore); when no memory holds them, the words alone.
//
// Each word also brings its other forms that stemming cannot reach: irregular verbs and plurals (went ↔ go,
// bought ↔ buy, lost ↔ lose, children ↔ child). A number written with thousands separators (2,000) is the number, as
// JSON writes it. An unbalanced quote makes the rest of the text plain words.

// SearchText is a parsed query.
type SearchText struct {
	// Words are the words to score, in order, duplicates removed: each word's forms, the word as written first.
	Words [][]string
	// Filter is websearch syntax for the exclusions, which a memory must satisfy ("" none).
	Filter string
	// Phrases are the quoted phrases in websearch syntax, required while some memory holds them.
	Phrases []string
	// Identifiers are the identifiers' phrases in websearch syntax ("iron ore" for iron_ore), required while some
	// memory holds them.
	Identifiers []string
}

// MaxSearchWords bounds the words one query scores (a 1 KiB query holds at most a few hundred); the first ones
// count.
const MaxSearchWords = 32

// ParseSearchText reads q (already validated: UTF-8, no NUL, bounded).
func ParseSearchText(q string) SearchText {
	var st SearchText
	var filter []string
	seen := map[string]bool{}
	addWord := func(w string) {
		w = strings.ToLower(strings.Trim(w, "'.-"))
		if w == "" || w == "or" || seen[w] || len(st.Words) >= MaxSearchWords {
			return
		}
		seen[w] = true
		w = strings.ReplaceAll(w, ",", "")
		forms := []string{w}
		for _, f := range wordForms[w] {
			if f != w {
				forms = append(forms, f)
			}
		}
		st.Words = append(st.Words, forms)
		if strings.Contains(w, "_") {
			st.Identifiers = append(st.Identifiers, `"`+strings.ReplaceAll(w, "_", " ")+`"`)
		}
	}
	words := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool {
			return !(isWordRune(r) || r == '\'' || r == '.' || r == '-')
		})
	}
	rs := []rune(q)
	for i := 0; i < len(rs); {
		r := rs[i]
		negate := false
		if r == '-' && (i == 0 || !isWordRune(rs[i-1])) {
			// One or more dashes before a word or a quote: an exclusion (an even run cancels out).
			j := i
			for j < len(rs) && (rs[j] == '-' || unicode.IsSpace(rs[j])) {
				if rs[j] == '-' {
					negate = !negate
				}
				j++
			}
			i = j
			if i >= len(rs) {
				break
			}
			r = rs[i]
		}
		switch {
		case r == '"':
			end := -1
			for j := i + 1; j < len(rs); j++ {
				if rs[j] == '"' {
					end = j
					break
				}
			}
			if end < 0 { // unbalanced: the rest is plain words
				i++
				continue
			}
			inner := words(string(rs[i+1 : end]))
			i = end + 1
			if len(inner) == 0 {
				continue
			}
			p := `"` + strings.Join(inner, " ") + `"`
			if negate {
				filter = append(filter, "-"+p)
				continue
			}
			st.Phrases = append(st.Phrases, p)
			for _, w := range inner {
				addWord(w)
			}
		case isWordRune(r):
			j := i
			for j < len(rs) && (isWordRune(rs[j]) || ((rs[j] == '\'' || rs[j] == '.' || rs[j] == '-') && j+1 < len(rs) && isWordRune(rs[j+1])) ||
				// a thousands separator: 2,000 is the number 2000 (JSON writes it so)
				(rs[j] == ',' && j > i && unicode.IsDigit(rs[j-1]) && j+1 < len(rs) && unicode.IsDigit(rs[j+1]))) {
				j++
			}
			w := string(rs[i:j])
			i = j
			if negate {
				for _, p := range words(w) {
					filter = append(filter, "-"+strings.ToLower(p))
				}
				continue
			}
			addWord(w)
		default:
			i++
		}
	}
	st.Filter = strings.Join(filter, " ")
	return st
}

// irregularForms lists the forms of irregular English words that the Snowball stemmer does not bring together
// (it maps goes and going to go, never went or gone). Each line is one word's forms; a query word in a line brings
// all of them.
var irregularForms = []string{
	"go goes going went gone", "buy buys buying bought", "sell sells selling sold", "find finds finding found",
	"lose loses losing lost", "fly flies flying flew flown", "run runs running ran", "see sees seeing saw seen",
	"take takes taking took taken", "make makes making made", "get gets getting got gotten", "give gives giving gave given",
	"come comes coming came", "pay pays paying paid", "tell tells telling told", "say says saying said",
	"think thinks thinking thought", "teach teaches teaching taught", "bring brings bringing brought",
	"catch catches catching caught", "choose chooses choosing chose chosen", "begin begins beginning began begun",
	"break breaks breaking broke broken", "build builds building built", "drive drives driving drove driven",
	"eat eats eating ate eaten", "fall falls falling fell fallen", "feel feels feeling felt", "fight fights fighting fought",
	"forget forgets forgetting forgot forgotten", "hold holds holding held", "keep keeps keeping kept",
	"know knows knowing knew known", "leave leaves leaving left", "lend lends lending lent", "meet meets meeting met",
	"ride rides riding rode ridden", "rise rises rising rose risen", "send sends sending sent", "sing sings singing sang sung",
	"sit sits sitting sat", "sleep sleeps sleeping slept", "speak speaks speaking spoke spoken", "spend spends spending spent",
	"stand stands standing stood", "steal steals stealing stole stolen", "swim swims swimming swam swum",
	"throw throws throwing threw thrown", "understand understands understanding understood", "wake wakes waking woke woken",
	"wear wears wearing wore worn", "win wins winning won", "write writes writing wrote written", "hear hears hearing heard",
	"hide hides hiding hid hidden", "lead leads leading led", "draw draws drawing drew drawn", "grow grows growing grew grown",
	"blow blows blowing blew blown", "show shows showing showed shown", "dig digs digging dug", "feed feeds feeding fed",
	"flee flees fleeing fled", "freeze freezes freezing froze frozen", "hang hangs hanging hung", "seek seeks seeking sought",
	"shake shakes shaking shook shaken", "shine shines shining shone", "bite bites biting bit bitten", "bend bends bending bent",
	"deal deals dealing dealt", "dream dreams dreaming dreamt dreamed", "learn learns learning learnt learned",
	"burn burns burning burnt burned", "mean means meaning meant", "lie lies lying lay lain", "lay lays laying laid",
	"strike strikes striking struck", "swear swears swearing swore sworn", "tear tears tearing tore torn",
	"sink sinks sinking sank sunk", "shoot shoots shooting shot", "light lights lighting lit",
	"child children", "person people", "man men", "woman women", "mouse mice", "foot feet", "tooth teeth", "goose geese",
	"die dies dying died", "lie lied",
}

// wordForms maps each form to its word's forms.
var wordForms = func() map[string][]string {
	m := map[string][]string{}
	for _, line := range irregularForms {
		fs := strings.Fields(line)
		for _, f := range fs {
			m[f] = append(m[f], fs...)
		}
	}
	return m
}()
