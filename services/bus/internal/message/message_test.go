package message_test

import (
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
)

func TestValidateContent(t *testing.T) {
	cases := []struct {
		name    string
		content string
		ok      bool
	}{
		{"plain", "Explore the universe!", true},
		{"unicode", "Mine iron ore ⛏ near Sol", true},
		{"exactly 16 KiB", strings.Repeat("a", 16<<10), true},
		{"empty", "", false},
		{"whitespace", " \n\t ", false},
		{"too long", strings.Repeat("a", 16<<10+1), false},
		{"invalid utf-8", "abc\xff", false},
		{"nul byte", "a\x00b", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := message.ValidateContent("content", c.content)
			if (err == nil) != c.ok {
				t.Fatalf("ValidateContent = %v, want ok=%v", err, c.ok)
			}
			if err != nil && (errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) != "content") {
				t.Fatalf("error %v: kind %v field %q, want Invalid on content", err, errs.KindOf(err), errs.FieldOf(err))
			}
		})
	}
}

func TestParseUUID(t *testing.T) {
	got, err := message.ParseUUID("broadcast_id", "5B0C6C1E-6F0E-4C2A-9D51-0D6F7F3F0A11")
	if err != nil || got != "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11" {
		t.Fatalf("ParseUUID = %q, %v", got, err)
	}
	for _, bad := range []string{"", "nope", "5b0c6c1e6f0e4c2a9d510d6f7f3f0a11", "{5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11}"} {
		if _, err := message.ParseUUID("broadcast_id", bad); errs.FieldOf(err) != "broadcast_id" {
			t.Errorf("ParseUUID(%q) = %v, want an Invalid broadcast_id", bad, err)
		}
	}
}

func TestValidateMessageID(t *testing.T) {
	for _, ok := range []string{"m1", "5b0c6c1e-6f0e-4c2a-9d51-0d6f7f3f0a11", "retry_2", strings.Repeat("x", 128)} {
		if err := message.ValidateMessageID("message_id", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "a*", strings.Repeat("x", 129), "é"} {
		if err := message.ValidateMessageID("message_id", bad); errs.FieldOf(err) != "message_id" {
			t.Errorf("%q accepted or wrong field: %v", bad, err)
		}
	}
}

func TestExcerpt(t *testing.T) {
	if got := message.Excerpt("short", 10); got != "short" {
		t.Fatal(got)
	}
	if got := message.Excerpt("ééééé", 5); got != "éé…" {
		t.Fatalf("Excerpt cut inside a rune: %q", got)
	}
}
