package callkey

import "testing"

func TestCanonicalArguments(t *testing.T) {
	for in, want := range map[string]string{
		` { "b" : 1 , "a" : [ 2 , {"d":null,"c":true} ] } `:  `{"a":[2,{"c":true,"d":null}],"b":1}`,
		`{"n":1e2,"m":1.50,"k":-0.0,"j":1.5E-3,"i":12.5e+1}`: `{"i":125,"j":0.0015,"k":0.0,"m":1.50,"n":100}`,
		`{"s":"\u00e9\n\"<&>\u001f"}`:                        "{\"s\":\"é\\n\\\"<&>\\u001f\"}",
		`{"dup":1,"dup":2}`:                                  `{"dup":2}`,
		`{"s":"\u0000"}`:                                     `{"s":"\u0000"}`, // jsonb refuses it: exact text
		`[1, 2]`:                                             `[1, 2]`,
		`{"a":1} x`:                                          `{"a":1} x`,
		``:                                                   ``,
	} {
		if got := CanonicalArguments(in); got != want {
			t.Errorf("CanonicalArguments(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Of("travel", `{ "to": "sol" }`); got != `travel {"to":"sol"}` {
		t.Errorf("Of = %q", got)
	}
}

// The shortcut for text that is already canonical never answers otherwise than the parse would.
func FuzzAlreadyCanonicalAgreesWithTheParse(f *testing.F) {
	for _, s := range []string{`{"to":"sol"}`, `{"qty":1e2}`, `{"qty":100}`, `{"q":-0}`, `{"q":-0.5}`, `{"q":1.50}`,
		`{"a":{"b":true}}`, `{"a":[1]}`, `{"a":null}`, `{"s":"é"}`, "{\"s\":\"\xff\"}", `{"s":"a b,c"}`, `{"a":1}}`,
		`{"a":}`, `{}`, `{"a":01}`, `{"e":"1e2"}`, `{"a":1.e5}`, `{"a":2E3}`, `{"a":true}`, `{"a":"\u00e9"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if alreadyCanonical(s) {
			if got := canonicalArguments(s); got != s {
				t.Fatalf("%q taken as canonical; the parse makes it %q", s, got)
			}
		}
	})
}
