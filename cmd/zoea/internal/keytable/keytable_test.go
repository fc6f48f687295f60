package keytable

import "testing"

func TestEveryKeyHasOneAction(t *testing.T) {
	seen := map[string]Action{}
	for _, b := range Table {
		if len(b.Keys) == 0 || b.Help == "" || b.Web == "" {
			t.Errorf("%s: keys %v, help %q, web %q: every binding needs keys and both help texts", b.Action, b.Keys, b.Help, b.Web)
		}
		for _, k := range b.Keys {
			if prev, dup := seen[k]; dup {
				t.Errorf("key %q is bound to %s and %s", k, prev, b.Action)
			}
			seen[k] = b.Action
			if a, ok := Lookup(k); !ok || a != b.Action {
				t.Errorf("Lookup(%q) = %q, %v; want %s", k, a, ok, b.Action)
			}
		}
	}
	if _, ok := Lookup("x"); ok {
		t.Error("Lookup found an action for an unbound key")
	}
}

func TestBrowserNamesSpecialKeysAsTheBrowserDoes(t *testing.T) {
	br := Browser()
	for key, want := range map[string]Action{"Enter": Focus, "Escape": Back, "ArrowUp": Up, "j": Down, "d": Delete, "/": Filter} {
		if br[key] != want {
			t.Errorf("Browser()[%q] = %q, want %s", key, br[key], want)
		}
	}
	if _, ok := br["enter"]; ok {
		t.Error("the browser table kept the terminal's name enter")
	}
}
