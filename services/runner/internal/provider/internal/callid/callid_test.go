package callid

import (
	"regexp"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
)

func TestNew(t *testing.T) {
	conv := []chat.Message{{Role: chat.RoleUser, Content: "mine"}}
	a := New(conv, "x", 0)
	if !regexp.MustCompile(`^call_[0-9a-f]{12}_0$`).MatchString(a) {
		t.Fatalf("id %q has the wrong shape", a)
	}
	if b := New([]chat.Message{{Role: chat.RoleUser, Content: "mine"}}, "x", 0); b != a {
		t.Fatalf("same input gave %q and %q", a, b)
	}
	longer := append(conv, chat.Message{Role: chat.RoleAssistant, Content: "ok"})
	for _, other := range []string{New(conv, "x", 1), New(conv, "y", 0), New(longer, "x", 0)} {
		if other == a {
			t.Fatalf("different input gave the same id %q", a)
		}
	}
}
